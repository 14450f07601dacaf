"""``start_chat``: the companion speaks first, on a satellite or a media player, as it writes.

A proactive chat is who speaks (a persona, found by its conversation entity or sub-entry
id), where (``ChatRequest.targets``: Assist satellites and media players), what to do (the
home's instruction, or a topic, or a friendly start) and who asked (the
``companion_agent.start_chat`` action, ``async_handle_start_chat``, or a trigger plugin);
what each device heard comes back as a ``Chat``.

The turn runs from the home's instruction (stored as a proactive turn, never as the person's
words). Its speech text streams into one of HA's TTS result streams as the model writes, and
that stream's URL is what the device plays, so the first sentence is heard before the model
has finished: a satellite gets it through ``assist_satellite.start_conversation`` when it can
(the person may answer without the wake word; not when the persona's profile turns
``follow_ups`` off) or else ``assist_satellite.announce``; a media player through
``media_player.play_media`` with ``announce`` (its stream is read here too: a media player
cannot report a TTS that failed). Once the device has played it, or the person spoke over
it, ``companion_agent_spoke`` is fired with the outcome and what could be heard. A device
that cannot play it is an error; the turn is stopped and stored as ``failed``.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from homeassistant.components import tts
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.components.media_player.browse_media import async_process_play_media_url
from homeassistant.components.media_player.const import MediaPlayerEntityFeature
from homeassistant.const import ATTR_ENTITY_ID, ATTR_SUPPORTED_FEATURES
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    callback,
    split_entity_id,
)
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import entity_registry as er

from ..compat import async_get_entity
from ..const import DOMAIN, EVENT_SPOKE, LOGGER, SUBENTRY_CONVERSATION
from ..engine.events import Heard, OutputItem, SentenceOutput, TurnResult
from ..engine.plugins import ProactiveRequest
from ..frontend.timeline import async_follow_proactive
from ..runtime import Speaker, loaded_entries
from ..voice.speaking import speaking_turn
from .voice import async_audio_seconds, async_voice_for

DEFAULT_INSTRUCTION = "Start a short, friendly conversation with the person."
SATELLITE = "assist_satellite"
MEDIA_PLAYER = "media_player"
TARGET_DOMAINS = (SATELLITE, MEDIA_PLAYER)
SPEAKER_ENTITY = re.compile(rf"({'|'.join(TARGET_DOMAINS)})\.[a-z0-9_]+")
"""The entity id of something that can speak: an Assist satellite or a media player (what
trigger plugins may name as targets; handed to the engine as the host's rule)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """Where to speak, what to do, and who asked (``service`` or a trigger plugin's id)."""

    targets: tuple[str, ...]
    instruction: str
    source: str
    preannounce: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Chat:
    """What one target heard: the turn's trace id, its speech and how it ended."""

    target: str
    trace_id: str
    text: str
    outcome: str


def instruction_text(instruction: str | None, topic: str | None) -> str:
    """Return the instruction a turn runs from: the given one, a topic, or a friendly start.

    Control characters (but line breaks and tabs) become spaces: an automation may template
    in any text.
    """
    parts = [_plain(instruction or "")]
    if topic and (about := _plain(topic)):
        parts.append(f"Talk about: {about}")
    return "\n".join(part for part in parts if part) or DEFAULT_INSTRUCTION


def _plain(text: str) -> str:
    """Return ``text`` stripped, each control character but a line break or tab a space."""
    return "".join(
        " " if unicodedata.category(char) == "Cc" and char not in "\n\t" else char for char in text
    ).strip()


# Speaking first on each target.
PLAY_TIMEOUT = 300.0
FOLLOW_UP_PROMPT = (
    "You started this conversation yourself, unasked, following this instruction from the "
    "home: {instruction}. The person is now answering you."
)


@callback
def async_check_targets(hass: HomeAssistant, targets: Sequence[str]) -> tuple[str, ...]:
    """Return the targets if each is a satellite that can speak or a media player; else raise."""
    if not targets:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="no_targets")
    for target in targets:
        domain = split_entity_id(target)[0]
        if domain not in TARGET_DOMAINS:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="bad_target",
                translation_placeholders={"target": target},
            )
        state = hass.states.get(target)
        if state is None:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="unknown_target",
                translation_placeholders={"target": target},
            )
        needs = (
            AssistSatelliteEntityFeature.ANNOUNCE | AssistSatelliteEntityFeature.START_CONVERSATION
            if domain == SATELLITE
            else MediaPlayerEntityFeature.PLAY_MEDIA
        )
        if not _features(hass, target) & needs:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="cannot_announce",
                translation_placeholders={"target": target},
            )
    return tuple(dict.fromkeys(targets))


async def async_speak_for_trigger(
    hass: HomeAssistant, speaker: Speaker, request: ProactiveRequest
) -> None:
    """Speak for a trigger plugin on its targets; a failure is logged, never raised."""
    chat = ChatRequest(
        targets=request.targets,
        instruction=instruction_text(request.prompt, None),
        source=request.source,
    )
    try:
        await async_start_chat(hass, speaker, chat)
    except HomeAssistantError as err:
        LOGGER.warning("Trigger %s could not speak on %s: %s", request.source, request.targets, err)


async def async_start_chat(
    hass: HomeAssistant, speaker: Speaker, request: ChatRequest
) -> list[Chat]:
    """Speak first on every target at once; return what each heard."""
    targets = async_check_targets(hass, request.targets)
    return list(
        await asyncio.gather(*(_async_speak(hass, speaker, target, request) for target in targets))
    )


async def _async_speak(
    hass: HomeAssistant, speaker: Speaker, target: str, request: ChatRequest
) -> Chat:
    """Run one proactive turn into a TTS stream and have ``target`` play it."""
    runtime = speaker.entry.runtime_data
    tts_engine, tts_language, options = async_voice_for(hass, speaker.entry, target)
    language = hass.config.language
    persona_id = speaker.subentry.subentry_id
    conversation_id = f"{DOMAIN}.proactive.{target}"  # one running history per device
    registry_entry = er.async_get(hass).async_get(target)
    try:
        stream = tts.async_create_stream(hass, tts_engine, language=tts_language, options=options)
    except HomeAssistantError as err:
        raise _cannot_speak(target, err) from err
    turn = runtime.engine.start_turn(
        await speaker.async_turn_request(
            request.instruction,
            conversation_id=conversation_id,
            language=language,
            device_id=registry_entry.device_id if registry_entry else None,
            initiator="proactive",
        )
    )
    LOGGER.debug("Turn %s: %s speaks first on %s", turn.trace_id, request.source, target)
    # The device may say it has played (idle, no longer playing) before the stream is known
    # to have worked: the spoke event waits for that, and is never fired for failed speech.
    delivered: asyncio.Future[bool] = hass.loop.create_future()
    spoke = partial(
        _async_spoke_once_delivered,
        delivered,
        hass=hass,
        speaker=speaker,
        target=target,
        trace_id=turn.trace_id,
        source=request.source,
    )
    satellite = split_entity_id(target)[0] == SATELLITE
    if satellite:
        runtime.playback.async_watch(turn, target, None, on_heard=spoke)
    else:
        runtime.playback.async_watch_media_player(turn, target, on_heard=spoke)
    try:
        emotions = speaker.persona.profile.output.emotion_tags
        items = async_follow_proactive(
            hass, persona_id, turn, tts_engine, target, emotions=emotions
        )
        with speaking_turn(turn.trace_id):  # our voice speaks the turn's own sentences
            stream.async_set_message_stream(_speech(items))
        async with asyncio.timeout(PLAY_TIMEOUT):
            listens = speaker.persona.profile.output.follow_ups
            await _async_play(hass, target, stream.url, request, listens=listens)
            # A device cannot say that the TTS behind the URL failed: read the stream here too.
            if (seconds := await async_audio_seconds(stream)) is not None:
                runtime.playback.async_report_duration(turn.trace_id, seconds)
    except (HomeAssistantError, TimeoutError) as err:
        delivered.set_result(False)
        runtime.playback.async_forget(turn)
        turn.cancel("the device could not play it", failed=True)
        await turn.result
        turn.played(Heard.undelivered())  # it had finished before its audio failed: failed
        raise _cannot_speak(target, err) from err
    delivered.set_result(True)
    if satellite:
        runtime.playback.async_played(turn)  # the satellite's service returns once played
        if _features(hass, target) & AssistSatelliteEntityFeature.START_CONVERSATION:
            runtime.engine.expect_answer(target, conversation_id)
    result = await turn.result
    return Chat(target=target, trace_id=turn.trace_id, text=result.spoken, outcome=result.outcome)


async def _speech(items: AsyncIterator[OutputItem]) -> AsyncGenerator[str]:
    """Yield the turn's speech text, sentence by sentence, as the model writes it.

    Each ends with a line break: a TTS that divides sentences itself speaks it at once
    instead of waiting for the next word. (Our own voice reads the turn's sentences
    directly and only drains this.)
    """
    async for item in items:
        if isinstance(item, SentenceOutput) and item.tts_text:
            yield f"{item.tts_text}\n"


async def _async_play(
    hass: HomeAssistant, target: str, url: str, request: ChatRequest, *, listens: bool
) -> None:
    """Have the device play the stream: start a conversation, announce, or play media.

    A conversation start listens for the answer without the wake word; a persona whose
    profile turns follow-ups off announces instead (the person wakes the satellite to answer).
    """
    if split_entity_id(target)[0] == MEDIA_PLAYER:
        await hass.services.async_call(
            MEDIA_PLAYER,
            "play_media",
            {
                ATTR_ENTITY_ID: target,
                "media_content_id": async_process_play_media_url(hass, url),
                "media_content_type": "music",
                "announce": True,
            },
            blocking=True,
        )
        return
    data: dict[str, Any] = {ATTR_ENTITY_ID: target, "preannounce": request.preannounce}
    if listens and _features(hass, target) & AssistSatelliteEntityFeature.START_CONVERSATION:
        follow_up = FOLLOW_UP_PROMPT.format(instruction=request.instruction)
        data |= {"start_media_id": url, "extra_system_prompt": follow_up}
        await hass.services.async_call(SATELLITE, "start_conversation", data, blocking=True)
    else:
        await hass.services.async_call(
            SATELLITE, "announce", data | {"media_id": url}, blocking=True
        )


@callback
def _async_spoke_once_delivered(
    delivered: asyncio.Future[bool], result: TurnResult, **where: Any
) -> None:
    """Fire ``companion_agent_spoke`` for ``result`` once the stream proved delivered."""
    if delivered.done():
        if delivered.result():
            _async_spoke(result, **where)
        return
    delivered.add_done_callback(
        lambda done: _async_spoke(result, **where) if done.result() else None
    )


def _async_spoke(
    result: TurnResult,
    *,
    hass: HomeAssistant,
    speaker: Speaker,
    target: str,
    trace_id: str,
    source: str,
) -> None:
    """Fire ``companion_agent_spoke`` once a turn that said something was heard.

    ``outcome`` says ``interrupted`` when the person spoke over it; ``text`` is then only
    what could have been heard.
    """
    if not result.spoken:
        return
    hass.bus.async_fire(
        EVENT_SPOKE,
        {
            "entity_id": speaker.entity_id,
            "target": target,
            "persona": speaker.subentry.title,
            "text": result.spoken,
            "outcome": result.outcome,
            "trace_id": trace_id,
            "source": source,
        },
    )


def _cannot_speak(target: str, err: Exception) -> HomeAssistantError:
    """Return the translated error for a device that could not play the speech."""
    return HomeAssistantError(
        translation_domain=DOMAIN,
        translation_key="cannot_speak",
        translation_placeholders={"target": target, "error": str(err) or type(err).__name__},
    )


def _features(hass: HomeAssistant, entity_id: str) -> int:
    """Return the supported features an entity states."""
    state = hass.states.get(entity_id)
    return int(state.attributes.get(ATTR_SUPPORTED_FEATURES, 0)) if state is not None else 0


# The ``companion_agent.start_chat`` action.
async def async_handle_start_chat(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Run the ``start_chat`` service: speak as the persona on every target."""
    speaker = async_find_speaker(hass, call.data.get("persona") or None)
    request = ChatRequest(
        targets=tuple(call.data["targets"]),
        instruction=instruction_text(call.data.get("instruction"), call.data.get("topic")),
        source="service",
        preannounce=call.data["preannounce"],
    )
    chats = await async_start_chat(hass, speaker, request)
    return {
        "chats": [
            {"target": c.target, "trace_id": c.trace_id, "text": c.text, "outcome": c.outcome}
            for c in chats
        ]
    }


@callback
def async_find_speaker(hass: HomeAssistant, persona: str | None) -> Speaker:
    """Return the persona by conversation entity or subentry id; None picks the first one."""
    registry = er.async_get(hass)
    for entry in loaded_entries(hass):
        agents = {
            e.config_subentry_id: e.entity_id
            for e in er.async_entries_for_config_entry(registry, entry.entry_id)
            if e.domain == "conversation"
        }
        for subentry in entry.subentries.values():
            entity_id = agents.get(subentry.subentry_id)
            if subentry.subentry_type != SUBENTRY_CONVERSATION or entity_id is None:
                continue
            if persona not in (None, entity_id, subentry.subentry_id):
                continue
            if (entity := async_get_entity(hass, entity_id)) is not None:
                return cast(Speaker, entity)
    raise ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key="unknown_persona",
        translation_placeholders={"persona": persona or ""},
    )
