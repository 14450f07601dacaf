"""The conversation platform: one agent per persona subentry, streaming into the ChatLog."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, MATCH_ALL
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect, async_dispatcher_send
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.util.ulid import ulid_now

from .agent.chat_stream import ChatLogStream, trace_to
from .agent.ha_tools import HassTurnTools
from .agent.images import HassCameras
from .agent.personas import async_build_persona
from .agent.spoken import async_spoken_lines
from .compat import async_get_entity, stream_response_chars
from .const import (
    CONF_MODEL,
    CONF_PROMPT,
    DOMAIN,
    EVENT_ACTION,
    EVENT_PROACTIVE,
    HOST_PROMPT,
    LOGGER,
    SIGNAL_USAGE,
    SUBENTRY_CONVERSATION,
    signal_emotion,
    signal_library_reloaded,
    signal_persona_changed,
)
from .engine.events import SentenceOutput
from .engine.plugins import Hook, ProactiveRequest
from .engine.tools.contract import ToolContext
from .engine.turn.disown import is_disowning
from .engine.turn.follow_ups import expects_answer
from .engine.turn.request import Initiator, Persona, TurnRequest
from .engine.voices import Speaker
from .frontend.timeline import async_follow_turn
from .proactive.briefing import HomeBriefing
from .proactive.speak import async_speak_for_trigger
from .runtime import CompanionConfigEntry, add_per_subentry, subentry_device
from .tts import async_pipeline_voice, async_speak_ahead
from .voice.enrolment import async_enrolment_step
from .voice.speaking import async_turn_speaker, satellite_of, speaking_turn
from .voice.spoken_over import async_abandoned

PLUGIN_CLOSE_GRACE = 30.0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: CompanionConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add one conversation agent per persona."""
    add_per_subentry(entry, SUBENTRY_CONVERSATION, CompanionConversationEntity, async_add_entities)


class CompanionConversationEntity(conversation.ConversationEntity):
    """A persona that answers through the engine, streaming as it thinks."""

    _attr_has_entity_name = True
    _attr_name = None
    _attr_supports_streaming = True

    def __init__(self, entry: CompanionConfigEntry, subentry: ConfigSubentry) -> None:
        """Bind the entity to its entry and persona."""
        self.entry = entry
        self.subentry = subentry
        self._persona: Persona | None = None
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = subentry_device(subentry, entry.data[CONF_MODEL])
        self._attr_supported_features = _features(subentry)

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """Answer in any language the model speaks."""
        return MATCH_ALL

    @property
    def persona(self) -> Persona:
        """Return the persona snapshot new turns use."""
        assert self._persona is not None
        return self._persona

    @property
    def follow_ups(self) -> bool:
        """Say whether a reply may wait for the person's answer (the profile's ``follow_ups``)."""
        return self._persona is None or self._persona.profile.output.follow_ups

    async def async_added_to_hass(self) -> None:
        """Build the persona and follow reloads of plugins and profiles."""
        await super().async_added_to_hass()
        await self._async_activate()
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass, signal_library_reloaded(self.entry.entry_id), self._async_reactivate
            )
        )
        self.async_on_remove(
            async_dispatcher_connect(
                self.hass,
                signal_persona_changed(self.subentry.subentry_id),
                self._async_settings_changed,
            )
        )

    async def async_will_remove_from_hass(self) -> None:
        """Stop the persona's plugins."""
        if self._persona is not None:
            await self._persona.plugins.close(grace=5.0)
        await super().async_will_remove_from_hass()

    async def _async_activate(self) -> None:
        """Build a persona snapshot from the current library and start its triggers."""
        self._persona = await async_build_persona(self.hass, self.entry, self.subentry)
        await self._persona.plugins.start_triggers(self._async_proactive)

    @callback
    def _async_reactivate(self) -> None:
        """Switch new turns to a fresh snapshot; running turns finish on the old one."""
        old = self._persona
        self.entry.async_create_background_task(
            self.hass, self._async_activate(), f"{DOMAIN} reload persona"
        )
        if old is not None:
            self.entry.async_create_background_task(
                self.hass, old.plugins.close(grace=PLUGIN_CLOSE_GRACE), f"{DOMAIN} retire plugins"
            )

    @callback
    def _async_settings_changed(self) -> None:
        """Take the persona's new settings: new turns only, running turns keep theirs."""
        self._attr_supported_features = _features(self.subentry)
        self.async_write_ha_state()
        self._async_reactivate()

    async def _async_proactive(self, request: ProactiveRequest) -> None:
        """Announce that a trigger wants to speak, then speak on its targets (if it has any)."""
        self.hass.bus.async_fire(
            EVENT_PROACTIVE,
            {
                "entity_id": self.entity_id,
                "plugin": request.source,
                "prompt": request.prompt,
                "targets": list(request.targets),
            },
        )
        if request.targets:
            self.entry.async_create_background_task(
                self.hass,
                async_speak_for_trigger(self.hass, self, request),
                f"{DOMAIN} {request.source} speaks",
            )

    async def async_turn_request(
        self,
        text: str,
        *,
        conversation_id: str,
        language: str,
        device_id: str | None,
        initiator: Initiator,
    ) -> TurnRequest:
        """Return the request for a turn this persona starts itself, acting on nothing."""
        return await async_turn_request(
            self.hass,
            self.persona,
            self.subentry.subentry_id,
            text,
            conversation_id=conversation_id,
            language=language,
            device_id=device_id,
            initiator=initiator,
        )

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Run one turn through the engine and stream it into the ChatLog.

        The turn is the person's who typed it (signed in), else the person whose enrolled
        voice spoke it, else the household's (``voice/speaking.py``: ``async_turn_speaker``).
        An utterance heard at a satellite that is enrolling someone's voice is a sample of
        it, answered without a turn (``voice/enrolment.py``).
        """
        if (enrolling := await self._async_enrolment(user_input, chat_log)) is not None:
            return enrolling
        persona = self.persona
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                self.subentry.data.get(CONF_LLM_HASS_API),
                self.subentry.data.get(CONF_PROMPT) or HOST_PROMPT,
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()
        runtime = self.entry.runtime_data
        system = chat_log.content[0]
        speaker, persona = await self._async_speaker(user_input, chat_log, persona)
        user_id = speaker.user_id if speaker is not None else user_input.context.user_id
        request = await async_turn_request(
            self.hass,
            persona,
            self.subentry.subentry_id,
            user_input.text,
            conversation_id=chat_log.conversation_id,
            language=user_input.language,
            user_id=user_id,
            device_id=user_input.device_id,
            satellite_id=user_input.satellite_id,
            instructions=system.content if isinstance(system, conversation.SystemContent) else "",
            hass_tools=HassTurnTools(self.hass, chat_log.llm_api),
            hooks=(HomeBriefing(self.hass, user_id),),
            chat_log=chat_log,
            speaker=speaker,
        )
        LOGGER.debug(
            "Turn %s: persona %s, profile %s, %s",
            request.context.trace_id,
            self.subentry.title,
            persona.profile.id,
            _who(speaker),
        )
        turn = runtime.engine.start_turn(request)
        runtime.playback.async_watch(turn, user_input.satellite_id, user_input.device_id)
        voice = async_pipeline_voice(self.hass, user_input)
        async_speak_ahead(self.hass, chat_log, turn, voice)
        emotions = persona.profile.output.emotion_tags
        persona_id = self.subentry.subentry_id
        voice_id = voice[0].entity_id if voice is not None else None
        items = async_follow_turn(
            self.hass,
            persona_id,
            user_input,
            turn,
            voice=voice_id,
            emotions=emotions,
            speaker=speaker,
        )
        turn_speech = runtime.engine.speech.get(turn.trace_id)
        stream = ChatLogStream(
            items,
            on_sentence=lambda sentence: self._async_sentence(sentence, request),
            stream_chars=stream_response_chars(self.hass),
            on_text=turn_speech.wrote if turn_speech is not None else None,
        )
        try:
            with speaking_turn(turn.trace_id):  # HA's TTS stream, made from these deltas, sees it
                async for _content in chat_log.async_add_delta_content_stream(
                    self.entity_id, stream.deltas()
                ):
                    pass
        except asyncio.CancelledError:
            # HA gave up on the turn (a satellite's new pipeline, the dialog's stop).
            async_abandoned(
                turn,
                turn_speech,
                satellite=satellite_of(self.hass, user_input.satellite_id, user_input.device_id),
                tts_opened_at=stream.tts_opened_at,
            )
            raise
        finally:
            # HA gave up on this turn (the pipeline was stopped): stop it, keep what was said.
            turn.cancel("conversation ended")
            # HA keeps the ChatLog for five idle minutes; the turn's LLM API instance (every
            # tool with its compiled schema) is not needed after the turn, so do not keep it.
            chat_log.llm_api = None
        outcome = await turn.result
        async_dispatcher_send(self.hass, SIGNAL_USAGE)
        LOGGER.debug("Turn %s finished: %s", request.context.trace_id, outcome.outcome)
        result = conversation.async_get_result_from_chat_log(user_input, chat_log)
        speech = stream.speech()
        if outcome.outcome == "interrupted":
            # The person spoke over it: a pipeline that has not started speaking yet skips
            # its speech (HA's pipeline skips TTS for an empty answer).
            result.response.async_set_speech("")
        elif speech:
            result.response.async_set_speech(speech)
        # A reply that asks (or holds a call for their yes) lets the satellite listen for the
        # answer without its wake word: our decision, not HA's question-mark guess.
        spoken = speech or _last_reply(chat_log)
        result.continue_conversation = persona.profile.output.follow_ups and expects_answer(
            outcome, spoken
        )
        return result

    async def _async_enrolment(
        self, user_input: conversation.ConversationInput, chat_log: conversation.ChatLog
    ) -> conversation.ConversationResult | None:
        """Answer an utterance heard at a satellite that is enrolling a voice; None: it is not."""
        step = await async_enrolment_step(self.hass, user_input.satellite_id, user_input.text)
        if step is None:
            return None
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(agent_id=self.entity_id, content=step.line)
        )
        result = conversation.async_get_result_from_chat_log(user_input, chat_log)
        result.continue_conversation = step.listens
        return result

    async def _async_speaker(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
        persona: Persona,
    ) -> tuple[Speaker | None, Persona]:
        """Return who speaks the turn, and the persona as it applies to them.

        "That wasn't me" speaks for whom the conversation's last turn was recognised as.
        Until an adult's voice is enrolled there is none to wait for: a yes in the
        conversation approves, as before (the persona's voice rule is off for the turn).
        """
        voices = self.entry.runtime_data.voices
        speaker = await async_turn_speaker(
            self.hass, voices, user_input.context.user_id, user_input.text
        )
        noted = voices.recognised(chat_log.conversation_id, speaker)
        if is_disowning(user_input.text):
            speaker = noted
        if not voices.has_adult:
            persona = replace(persona, rules=replace(persona.applied_rules, voice_approval=False))
        return speaker, persona

    @callback
    def _async_sentence(self, sentence: SentenceOutput, request: TurnRequest) -> None:
        """Fire an event per action tag and update the persona's emotion sensor."""
        context = request.context
        for action in sentence.actions:
            is_emotion = request.persona.profile.output.is_emotion(action)
            self.hass.bus.async_fire(
                EVENT_ACTION,
                {
                    "entity_id": self.entity_id,
                    "conversation_id": context.conversation_id,
                    "trace_id": context.trace_id,
                    "action": action,
                    "kind": "emotion" if is_emotion else "action",
                    "text": sentence.display_text,
                },
            )
            if is_emotion:
                async_dispatcher_send(
                    self.hass, signal_emotion(self.subentry.subentry_id), action.lower()
                )


async def async_turn_request(
    hass: HomeAssistant,
    persona: Persona,
    persona_id: str,
    text: str,
    *,
    conversation_id: str,
    language: str,
    user_id: str | None = None,
    device_id: str | None = None,
    satellite_id: str | None = None,
    instructions: str = HOST_PROMPT,
    hass_tools: HassTurnTools | None = None,
    hooks: Sequence[Hook] = (),
    initiator: Initiator = "person",
    chat_log: conversation.ChatLog | None = None,
    speaker: Speaker | None = None,
) -> TurnRequest:
    """Return the request for one turn of ``persona`` (the subentry ``persona_id``).

    ``hass_tools`` gives the turn HA's tools and the guard its targets and states, and the
    cameras exposed to Assist; without it the turn acts on and sees nothing in the house.
    ``chat_log``'s trace gets each model call's tokens and timings. ``speaker`` says who
    speaks it (``user_id`` is then theirs): whose "yes" may approve what waits for a voice.
    """
    return TurnRequest(
        persona=persona,
        text=text,
        context=ToolContext(
            conversation_id=conversation_id,
            user_id=user_id,
            trace_id=ulid_now(),
            language=language,
            agent_id=persona_id,
        ),
        lines=await async_spoken_lines(hass, language),
        device_id=device_id,
        satellite_id=satellite_id,
        host_instructions=instructions,
        host_tools=hass_tools.tools(persona.applied_rules.marks) if hass_tools is not None else (),
        host_targets=hass_tools,
        host_state=hass_tools,
        host_hooks=hooks,
        initiator=initiator,
        host_cameras=HassCameras(hass)
        if hass_tools is not None and hass_tools.api is not None
        else None,
        on_model_call=None if chat_log is None else trace_to(chat_log),
        speaker=speaker,
    )


@callback
def async_may_ask_back(hass: HomeAssistant, agent_id: str) -> bool:
    """Say whether the conversation agent ``agent_id`` may end a reply waiting for an answer.

    HA's own agent never does (its results never continue); a persona of ours does unless
    its profile turns follow-ups off; any other agent may.
    """
    if agent_id == conversation.HOME_ASSISTANT_AGENT:
        return False
    entity = async_get_entity(hass, agent_id)
    if isinstance(entity, CompanionConversationEntity) and entity.hass is hass:
        return entity.follow_ups
    return True


def _who(speaker: Speaker | None) -> str:
    """Return how the log names a turn's speaker: never a name, a score is enough."""
    if speaker is None:
        return "speaker not known"
    if not speaker.heard:
        return "typed by a signed-in user"
    if speaker.user_id is None:
        return "voice not recognised (household)"
    return f"voice recognised ({speaker.role}, {speaker.score or 0:.2f})"


def _last_reply(chat_log: conversation.ChatLog) -> str:
    """Return the text of the ChatLog's last message if the assistant wrote it, else ""."""
    last = chat_log.content[-1] if chat_log.content else None
    return last.content or "" if isinstance(last, conversation.AssistantContent) else ""


def _features(subentry: ConfigSubentry) -> conversation.ConversationEntityFeature:
    """Return what a persona's agent supports: control of HA when it may use HA's API."""
    if subentry.data.get(CONF_LLM_HASS_API):
        return conversation.ConversationEntityFeature.CONTROL
    return conversation.ConversationEntityFeature(0)
