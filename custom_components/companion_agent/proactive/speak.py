"""``start_chat``: the companion speaks first, on a satellite or a media player, as it writes.

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
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from functools import partial
from typing import Any

from homeassistant.components import tts
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.components.media_player.browse_media import async_process_play_media_url
from homeassistant.components.media_player.const import MediaPlayerEntityFeature
from homeassistant.const import ATTR_ENTITY_ID, ATTR_SUPPORTED_FEATURES
from homeassistant.core import HomeAssistant, callback, split_entity_id
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import entity_registry as er

from ..const import DOMAIN, EVENT_SPOKE, LOGGER
from ..engine.events import Heard, OutputItem, SentenceOutput, TurnResult
from ..engine.plugins import ProactiveRequest
from ..frontend.follow import async_follow_proactive
from ..runtime import Speaker
from ..voice.speaking import speaking_turn
from .request import (
    MEDIA_PLAYER,
    SATELLITE,
    TARGET_DOMAINS,
    Chat,
    ChatRequest,
    instruction_text,
)
from .voice import async_audio_seconds, async_voice_for

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
