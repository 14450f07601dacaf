"""Speaking first through a real HA, for tests: the devices, a companion with a voice, the call.

The devices are real HA entities (``AssistSatelliteEntity`` and ``MediaPlayerEntity``
subclasses) in a test platform, loaded through HA's entity components; what they play is
fetched the way a device fetches it: the TTS stream behind the URL they were given, read to
its end. The ``devices`` and ``companion`` fixtures that set them up are in ``conftest.py``;
``start_chat`` calls the service and returns what each target heard.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import yarl
from homeassistant.components import tts
from homeassistant.components.assist_pipeline import PipelineEvent, PipelineEventType
from homeassistant.components.assist_pipeline.pipeline import (
    async_get_pipeline,
    async_update_pipeline,
)
from homeassistant.components.assist_satellite import (
    AssistSatelliteConfiguration,
    AssistSatelliteEntity,
    AssistSatelliteEntityFeature,
)
from homeassistant.components.assist_satellite.entity import AssistSatelliteAnnouncement
from homeassistant.components.media_player import MediaPlayerEntity
from homeassistant.components.media_player.const import (
    MediaPlayerEntityFeature,
    MediaPlayerState,
    MediaType,
)
from homeassistant.core import Event, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.entity_platform import AddEntitiesCallback
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockModule,
    MockPlatform,
    mock_integration,
    mock_platform,
)

from custom_components.companion_agent.const import DOMAIN, EVENT_SPOKE
from tests.ha.common import SetupCompanion, agents_by_title, persona, wyoming_voice
from tests.support.wyoming_proxy import WyomingProxy

PLATFORM = "test_speakers"
WAV_HEADER = 44
TIMEOUT = 20.0
CONVERSE = AssistSatelliteEntityFeature.ANNOUNCE | AssistSatelliteEntityFeature.START_CONVERSATION
KITCHEN = "assist_satellite.kitchen"
HALL = "assist_satellite.hall"
LOUNGE = "media_player.lounge"
ATTIC = "media_player.attic"

type Devices = dict[str, SpeakingSatellite | SpeakerPlayer]


@dataclass
class Heard:
    """What a device was given and heard: the media URL, the audio, and when it began."""

    urls: list[str] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    audio: bytearray = field(default_factory=bytearray)
    first_audio: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    log: list[str] = field(default_factory=list)
    voices: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """The TTS engine, language and options of each stream."""


async def hear(hass: HomeAssistant, url: str, heard: Heard) -> None:
    """Read the TTS stream behind ``url`` to its end, noting when the first audio arrived."""
    heard.urls.append(url)
    token = yarl.URL(url).path.rsplit("/", 1)[-1]
    stream = tts.async_get_stream(hass, token)
    assert stream is not None, url
    heard.voices.append((stream.engine, stream.language, stream.options))
    size = 0
    async for chunk in stream.async_stream_result():
        heard.audio.extend(chunk)
        if size <= WAV_HEADER < size + len(chunk):
            heard.log.append("first audio")
            heard.first_audio.set()
        size += len(chunk)
    heard.log.append("audio ended")
    heard.done.set()


class SpeakingSatellite(AssistSatelliteEntity):
    """A satellite that plays announcements and conversation starts by reading their stream."""

    _attr_has_entity_name = False

    def __init__(self, name: str, features: AssistSatelliteEntityFeature) -> None:
        """Name the satellite and say what it supports."""
        self._attr_name = name
        self._attr_unique_id = name
        self._attr_supported_features = features
        self.heard = Heard()
        self.failure: HomeAssistantError | None = None
        self._config = AssistSatelliteConfiguration(
            available_wake_words=[], active_wake_words=[], max_active_wake_words=1
        )

    def on_pipeline_event(self, event: PipelineEvent) -> None:
        """Ignore pipeline events."""

    def person_speaks(self) -> None:
        """Start listening, as the satellite's pipeline does when the person speaks (STT)."""
        self._internal_on_pipeline_event(PipelineEvent(PipelineEventType.STT_START, None))

    def async_get_configuration(self) -> AssistSatelliteConfiguration:
        """Return the (empty) wake word configuration."""
        return self._config

    async def async_set_configuration(self, config: AssistSatelliteConfiguration) -> None:
        """Keep a new configuration."""
        self._config = config

    async def async_announce(self, announcement: AssistSatelliteAnnouncement) -> None:
        """Play the announcement to its end (or fail as told)."""
        if self.failure is not None:
            raise self.failure
        self.heard.log.append("announce")
        await hear(self.hass, announcement.media_id, self.heard)

    async def async_start_conversation(
        self, start_announcement: AssistSatelliteAnnouncement
    ) -> None:
        """Play the start of the conversation to its end (a real one would then listen)."""
        self.heard.log.append("start_conversation")
        self.heard.extra.append({"message": start_announcement.message})
        await hear(self.hass, start_announcement.media_id, self.heard)


class SpeakerPlayer(MediaPlayerEntity):
    """A media player that plays what it is given (reading the stream) and then goes idle."""

    _attr_has_entity_name = False
    _attr_supported_features = (
        MediaPlayerEntityFeature.PLAY_MEDIA | MediaPlayerEntityFeature.MEDIA_ANNOUNCE
    )

    def __init__(self, name: str, *, reports_state: bool = True) -> None:
        """Name the player; ``reports_state`` False: its state never changes (a silent one)."""
        self._attr_name = name
        self._attr_unique_id = name
        self._attr_state = MediaPlayerState.IDLE
        self.reports_state = reports_state
        self.heard = Heard()
        self._playing: asyncio.Task[None] | None = None

    async def async_play_media(
        self, media_type: MediaType | str, media_id: str, **kwargs: Any
    ) -> None:
        """Start playing ``media_id`` in the background, as real players do."""
        self.heard.extra.append({"media_type": media_type, **kwargs})
        self._playing = self.hass.async_create_task(self._play(media_id))

    async def _play(self, media_id: str) -> None:
        """Go playing, read the stream to its end, go idle."""
        self._set(MediaPlayerState.PLAYING)
        await hear(self.hass, media_id, self.heard)
        self._set(MediaPlayerState.IDLE)

    def _set(self, state: MediaPlayerState) -> None:
        """Show a new state, if this player reports its state."""
        if self.reports_state:
            self._attr_state = state
            self.async_write_ha_state()


async def setup_speakers(
    hass: HomeAssistant, satellites: list[SpeakingSatellite], players: list[SpeakerPlayer]
) -> None:
    """Load the test platform's satellites and media players through HA's components."""
    mock_integration(hass, MockModule(PLATFORM))

    async def add_satellites(
        hass: HomeAssistant, config: object, add: AddEntitiesCallback, info: object = None
    ) -> None:
        """Add the satellites."""
        add(satellites)

    async def add_players(
        hass: HomeAssistant, config: object, add: AddEntitiesCallback, info: object = None
    ) -> None:
        """Add the media players."""
        add(players)

    mock_platform(
        hass, f"{PLATFORM}.assist_satellite", MockPlatform(async_setup_platform=add_satellites)
    )
    mock_platform(hass, f"{PLATFORM}.media_player", MockPlatform(async_setup_platform=add_players))
    assert await async_setup_component(
        hass, "assist_satellite", {"assist_satellite": {"platform": PLATFORM}}
    )
    assert await async_setup_component(
        hass, "media_player", {"media_player": {"platform": PLATFORM}}
    )
    await hass.async_block_till_done()


@dataclass(frozen=True, slots=True)
class Companion:
    """Our entry with one persona and a Piper voice, and the persona's agent."""

    entry: MockConfigEntry
    agent: str


class SpokeEvents(list[Event]):
    """Every companion_agent_spoke event since it was made; ``arrived`` is set at each."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Start listening on ``hass``'s bus."""
        super().__init__()
        self.arrived = asyncio.Event()
        hass.bus.async_listen(EVENT_SPOKE, self._note)

    def _note(self, event: Event) -> None:
        """Keep the event and wake whoever waits."""
        self.append(event)
        self.arrived.set()


async def async_setup_speaking_companion(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    proxy: WyomingProxy,
    profile: str = "default",
) -> Companion:
    """Set up a persona on ``profile`` and a Piper voice; the Assist pipeline uses the persona."""
    entry = await setup_companion(persona(profile=profile), wyoming_voice(proxy.host, proxy.port))
    agent = agents_by_title(hass, entry)["Companion"]
    await async_update_pipeline(hass, async_get_pipeline(hass), conversation_engine=agent)
    return Companion(entry=entry, agent=agent)


async def start_chat(hass: HomeAssistant, **data: object) -> list[dict[str, object]]:
    """Call start_chat and return what each target heard."""
    response = await asyncio.wait_for(
        hass.services.async_call(
            DOMAIN, "start_chat", dict(data), blocking=True, return_response=True
        ),
        TIMEOUT,
    )
    assert response is not None
    chats = response["chats"]
    assert isinstance(chats, list)
    return [dict(chat) for chat in chats if isinstance(chat, dict)]
