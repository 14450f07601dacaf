"""A Home Assistant for ``benchmarks/voice.py``: every way an answer's audio leaves HA.

A real HA core boots in process (``benchmarks/ha_core.py``) with ffmpeg (imageio-ffmpeg's
static build) on its ``PATH``, since HA converts for satellites. On one wyoming-piper speak
our voice and HA core's own Wyoming TTS; our agent answers from the scripted model server,
our STT hears through the scripted ASR server. The ways out, each measured where the audio
leaves HA:

- HA's own Wyoming satellite, twice (each on a ``RealTimeSatellite`` over loopback): one on
  a pipeline speaking with HA's TTS, one with ours; first audio is the first audio chunk
  the satellite receives;
- the browser's Assist dialog: a pipeline run that names no format (MP3), its TTS stream
  read as HA's HTTP view serves it;
- a media player: ``start_chat`` on a player whose ``play_media`` reads the stream behind
  the URL it is given;
- the companion's own satellite, once the integration has one (``assist_satellite.py``):
  ``our_satellite`` is None until then.

Each voice reaches Piper through a recording proxy of its own (``proxies``: ``ours``,
``theirs``), so a run can count what Piper was asked. The persona may use Assist, which
offers one exposed script: ``script.look_around`` takes ``TOOL_SECONDS`` (a slow tool).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from homeassistant.components import conversation, tts
from homeassistant.components.assist_pipeline.pipeline import Pipeline
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.media_player import DATA_COMPONENT as PLAYERS
from homeassistant.components.media_player import MediaPlayerEntity
from homeassistant.components.media_player.const import MediaPlayerEntityFeature, MediaPlayerState
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component

from benchmarks.ha_core import configure
from benchmarks.voice_peers import launch_piper, wait_for_piper
from custom_components.companion_agent.const import (
    CONF_TURNS_PER_MINUTE,
    DOMAIN,
    SUBENTRY_CONVERSATION,
)
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.runtime import CompanionRuntime
from tests.ha.common import speech_to_text, wyoming_voice
from tests.ha.common.pipelines import create_pipeline, keep_turns
from tests.ha.common.satellites import setup_ha_satellite, setup_ha_voice
from tests.support.asr_server import ScriptedAsrServer
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer
from tests.support.realtime_satellite import RealTimeSatellite
from tests.support.wyoming_proxy import WyomingProxy

__all__ = ["Home", "launch_piper", "set_up", "wait_for_piper"]

OUR_SATELLITE = "custom_components.companion_agent.assist_satellite"
PLAYER = "media_player.bench_speaker"
TOOL = "look_around"
TOOL_SECONDS = 8.0


class BenchPlayer(MediaPlayerEntity):
    """A media player that fetches what it is told to play, noting when its audio began."""

    _attr_name = "Bench speaker"
    _attr_unique_id = "bench-speaker"
    _attr_state = MediaPlayerState.IDLE
    _attr_supported_features = MediaPlayerEntityFeature.PLAY_MEDIA

    def __init__(self) -> None:
        """Play nothing yet."""
        self.first_audio: float | None = None
        self.header = 0

    def expect(self, header: int) -> None:
        """Wait for new audio past a container header of ``header`` bytes."""
        self.first_audio, self.header = None, header

    async def async_play_media(self, media_type: str, media_id: str, **kwargs: Any) -> None:
        """Read the TTS stream behind ``media_id`` to its end, as a speaker fetches it."""
        stream = tts.async_get_stream(self.hass, media_id.rsplit("/", 1)[-1])
        assert stream is not None, media_id
        read = 0
        async for chunk in stream.async_stream_result():
            read += len(chunk)
            if self.first_audio is None and read > self.header:
                self.first_audio = asyncio.get_running_loop().time()


@dataclass
class Home:
    """The running HA, its pipelines and devices, the model server and Piper."""

    hass: HomeAssistant
    server: LLMServer
    runtime: CompanionRuntime
    piper_port: int
    voice: str
    ours: Pipeline
    theirs: Pipeline
    satellites: dict[str, RealTimeSatellite]
    """HA's Wyoming satellite on each pipeline, by pipeline name (``ours``, ``theirs``)."""
    player: BenchPlayer
    proxies: dict[str, WyomingProxy]
    """What each voice asked Piper, by voice (``ours``, ``theirs``)."""
    our_satellite: RealTimeSatellite | None = None
    turns: list[Turn] = field(default_factory=list)
    first_token: float = 0.0
    """When (loop time) the scripted model sent the current reply's first token."""

    def script(
        self,
        words: tuple[str, ...],
        first_token: float,
        gap: float,
        *,
        until: asyncio.Event | None = None,
    ) -> None:
        """Script one reply: the first token ``first_token`` s after its request, then a ``gap``.

        ``until``: the last word also waits for it (the model is still writing till then).
        """
        loop = asyncio.get_running_loop()
        holds = [asyncio.Event() for _ in words]

        def arrived() -> None:
            """Pace the reply from the moment its request came."""
            self.server.on_chat = None
            now = loop.time()
            self.first_token = now + first_token
            for index, hold in enumerate(holds):
                loop.call_at(self.first_token + index * gap, hold.set)

        self.server.on_chat = arrived
        chunks = [TextChunk(w, hold=h) for w, h in zip(words, holds, strict=True)]
        if until is not None:
            chunks.append(TextChunk(" And", hold=until))
        self.server.script(Reply(chunks=tuple(chunks)))


async def set_up(
    hass: HomeAssistant, server: LLMServer, asr: ScriptedAsrServer, port: int, voice: str
) -> Home:
    """Configure our entry (agent, voice, STT), HA's voice, the pipelines and the devices."""
    hass.config.skip_pip = True
    hass.config.internal_url = "http://127.0.0.1:8123"
    for domain in ("assist_pipeline", "media_player", "ffmpeg"):
        assert await async_setup_component(hass, domain, {})
    slow = {"alias": "Look around", "sequence": [{"delay": {"seconds": TOOL_SECONDS}}]}
    assert await async_setup_component(hass, "script", {"script": {TOOL: slow}})
    async_expose_entity(hass, conversation.DOMAIN, f"script.{TOOL}", True)
    proxies = {"ours": WyomingProxy("127.0.0.1", port), "theirs": WyomingProxy("127.0.0.1", port)}
    for proxy in proxies.values():
        await proxy.__aenter__()
    agent = await configure(hass, server.url, "", "test-model")
    (entry,) = hass.config_entries.async_entries(DOMAIN)
    (persona,) = [s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_CONVERSATION]
    hass.config_entries.async_update_subentry(
        entry, persona, data={**persona.data, CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}
    )
    # Many turns a minute, each one measured: no rate limit (the entry reloads).
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_TURNS_PER_MINUTE: 0}
    )
    for data in (
        wyoming_voice("127.0.0.1", proxies["ours"].port, voice),
        speech_to_text(asr.host, asr.port, "tiny", languages=("en",)),
    ):
        hass.config_entries.async_add_subentry(entry, _subentry(data))
    await hass.async_block_till_done()
    runtime: CompanionRuntime = entry.runtime_data
    ours_tts = _entity(hass, entry.entry_id, "tts")
    stt = _entity(hass, entry.entry_id, "stt")
    theirs_tts = await setup_ha_voice(hass, "127.0.0.1", proxies["theirs"].port)
    ours = await create_pipeline(hass, "ours", agent, ours_tts, stt)
    theirs = await create_pipeline(hass, "theirs", agent, theirs_tts, stt)
    satellites: dict[str, RealTimeSatellite] = {}
    for pipeline in (ours, theirs):
        satellite = await RealTimeSatellite(
            f"{pipeline.name} satellite", real_time=False
        ).__aenter__()
        await setup_ha_satellite(hass, satellite, pipeline)
        satellites[pipeline.name] = satellite
    player = BenchPlayer()
    await hass.data[PLAYERS].async_add_entities([player])
    home = Home(
        hass=hass, server=server, runtime=runtime, piper_port=port, voice=voice, ours=ours,
        theirs=theirs, satellites=satellites, player=player, proxies=proxies,
    )  # fmt: skip
    if importlib.util.find_spec(OUR_SATELLITE) is not None:
        home.our_satellite = await _our_satellite(hass, entry.entry_id)
        home.runtime = entry.runtime_data  # a new sub-entry reloads the entry: a new engine
    keep_turns(home.runtime.engine, home.turns)
    return home


async def close(home: Home) -> None:
    """Close the satellites' servers and the proxies."""
    for satellite in (*home.satellites.values(), home.our_satellite):
        if satellite is not None:
            await satellite.__aexit__(None, None, None)
    for proxy in home.proxies.values():
        await proxy.__aexit__(None, None, None)


async def _our_satellite(hass: HomeAssistant, entry_id: str) -> RealTimeSatellite | None:
    """Add the companion's own satellite on ``ours`` (the preferred pipeline), if it sets up."""
    from homeassistant.components.assist_pipeline.pipeline import (
        KEY_ASSIST_PIPELINE,
        async_get_pipelines,
    )

    const = importlib.import_module("custom_components.companion_agent.const")
    kind = getattr(const, "SUBENTRY_SATELLITE", None)
    if kind is None:
        return None
    store = hass.data[KEY_ASSIST_PIPELINE].pipeline_store
    ours = next(p for p in async_get_pipelines(hass) if p.name == "ours")
    store.async_set_preferred_item(ours.id)
    satellite = await RealTimeSatellite("Companion satellite", real_time=False).__aenter__()
    flows = hass.config_entries.subentries
    step = await flows.async_init((entry_id, kind), context={"source": "user"})
    step = await flows.async_configure(
        step["flow_id"], {"host": satellite.host, "port": satellite.port}
    )
    if step.get("type") != "create_entry":
        await satellite.__aexit__(None, None, None)
        return None
    await hass.async_block_till_done()
    async with asyncio.timeout(20):
        await satellite.connected.wait()
    return satellite


def _subentry(data: Any) -> Any:
    """Return a ``ConfigSubentry`` from a test's sub-entry data."""
    from homeassistant.config_entries import ConfigSubentry

    return ConfigSubentry(
        data=data["data"], subentry_type=data["subentry_type"], title=data["title"],
        unique_id=data.get("unique_id"),
    )  # fmt: skip


def _entity(hass: HomeAssistant, entry_id: str, domain: str) -> str:
    """Return our entry's one entity of ``domain``."""
    from homeassistant.helpers import entity_registry as er

    (found,) = [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry_id)
        if e.domain == domain
    ]
    return found


async def first_bytes(audio: AsyncIterator[bytes], header: int) -> float:
    """Read ``audio`` to its end; return when (loop time) its first audio came past ``header``."""
    loop = asyncio.get_running_loop()
    first: float | None = None
    read = 0
    async for chunk in audio:
        read += len(chunk)
        if first is None and read > header:
            first = loop.time()
    if first is None:
        raise SystemExit("voice: a stream gave no audio")
    return first
