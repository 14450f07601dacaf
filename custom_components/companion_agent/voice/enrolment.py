"""Enrolling a person's voice: from audio files, or phrases read at a satellite; and removing it.

A person enrols by the ``enroll_voice`` action (or the companion's options): their
``person`` entity names them and its HA user is whose voice it is. Opt-in, one person at a
time; an HA administrator may enrol anyone, anyone else only themself. An adult's voice
approves unlocks, so only an administrator (or an automation) enrols a voice as an adult's;
anyone else's own enrolment keeps the role an administrator gave, else is a child's.

- **Files**: WAV files under a folder Home Assistant may read (``allowlist_external_dirs``
  or the media folders); each becomes one sample (at any rate or channel count: they are
  mixed to mono and resampled to 16 kHz). A file with too little speech is skipped and
  named in the answer.
- **At a satellite**: the companion asks the person, through the satellite, to say a few
  short phrases, one at a time; the satellite listens after each without its wake word
  (``assist_satellite.start_conversation``, then follow-ups). Each utterance heard there is
  a sample; one with too little speech is asked again. The enrolment ends after the last
  phrase, after three misses, or five minutes after it began.

Every loaded entry of the companion learns the voice. ``forget_voice`` (and ``forget`` for a
person) removes it; so does deleting the person's HA user.
"""

from __future__ import annotations

import time
import wave
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import voluptuous as vol
from homeassistant.auth import EVENT_USER_REMOVED
from homeassistant.components.assist_satellite import AssistSatelliteEntityFeature
from homeassistant.const import ATTR_ENTITY_ID, ATTR_SUPPORTED_FEATURES
from homeassistant.core import (
    CALLBACK_TYPE,
    Context,
    Event,
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    callback,
)
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.helpers.selector import (
    BooleanSelector,
    EntitySelector,
    EntitySelectorConfig,
    SelectSelector,
    SelectSelectorConfig,
    TextSelector,
    TextSelectorConfig,
)
from homeassistant.helpers.translation import async_get_translations
from homeassistant.util.hass_dict import HassKey
from homeassistant.util.language import matches

from ..const import DOMAIN, LOGGER
from ..engine.errors import VoiceModelError, VoiceprintFileError
from ..engine.voices import Embedding, Role
from ..runtime import loaded, loaded_entries
from .speaking import speaking, take_heard
from .voiceprints import HouseholdVoices

SATELLITE = "assist_satellite"
PHRASES = 4
MAX_MISSES = 3
SESSION_SECONDS = 300.0
MAX_FILES = 10
MAX_FILE_BYTES = 20 * 1024 * 1024
RATE = 16000
ENROLMENTS: HassKey[dict[str, SatelliteEnrolment]] = HassKey(f"{DOMAIN}_enrolments")
LANGUAGES = ("en", "zh-Hans")


@dataclass(slots=True, kw_only=True)
class SatelliteEnrolment:
    """One person's enrolment running at one satellite: the phrases and what was heard."""

    user_id: str
    name: str
    role: Role
    phrases: list[str]
    lines: dict[str, str]
    started: float = field(default_factory=time.monotonic)
    taken: list[Embedding] = field(default_factory=list, repr=False)
    misses: int = 0


@dataclass(frozen=True, slots=True)
class EnrolmentStep:
    """What the agent answers an utterance heard during an enrolment, and if it listens on."""

    line: str
    listens: bool


def entries_voices(hass: HomeAssistant) -> list[HouseholdVoices]:
    """Return every loaded entry's household voices."""
    return [entry.runtime_data.voices for entry in loaded_entries(hass)]


async def _async_person(hass: HomeAssistant, call: ServiceCall) -> tuple[str, str, bool]:
    """Return the HA user and name of the call's ``person``, and whether an administrator
    (or an automation) calls; check the caller may act on them (themself, or anyone if so)."""
    state = hass.states.get(call.data["person"])
    user_id = state.attributes.get("user_id") if state is not None else None
    if state is None or not isinstance(user_id, str) or not user_id:
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="person_without_user"
        )
    caller = call.context.user_id
    user = await hass.auth.async_get_user(caller) if caller is not None else None
    trusted = caller is None or (user is not None and user.is_admin)
    if caller is not None and caller != user_id and not trusted:
        raise Unauthorized(context=call.context)
    return user_id, state.name, trusted


def enrolment_role(
    voices: Sequence[HouseholdVoices], user_id: str, asked: Role | None, *, trusted: bool
) -> Role:
    """Return the role an enrolment gives: an adult's approves unlocks, so only an
    administrator (or an automation) gives it. Anyone else enrolling their own voice keeps the
    role they were given, or is enrolled as a child until an administrator says otherwise.
    """
    if trusted:
        return asked or "adult"
    roles: list[Role] = [r for v in voices if (r := v.role_of(user_id)) is not None]
    given: Role = roles[0] if roles else "child"
    if asked == "adult" and given != "adult":
        raise ServiceValidationError(
            translation_domain=DOMAIN, translation_key="enrol_adult_needs_admin"
        )
    return asked or given


async def async_enroll_voice(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Enrol a person's voice from files, or start an enrolment at a satellite."""
    files: list[str] = call.data.get("audio") or []
    satellite: str | None = call.data.get("satellite")
    if bool(files) == bool(satellite):
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="enrol_needs_one")
    user_id, name, trusted = await _async_person(hass, call)
    voices = entries_voices(hass)
    role = enrolment_role(voices, user_id, call.data.get("role"), trusted=trusted)
    if satellite is not None:
        return await _async_start_at_satellite(
            hass, voices, satellite=satellite, user_id=user_id, name=name, role=role
        )
    return await _async_enrol_files(
        hass, voices, files=files, user_id=user_id, name=name, role=role
    )


async def async_forget_voice(hass: HomeAssistant, call: ServiceCall) -> ServiceResponse:
    """Remove a person's voiceprint from every loaded entry."""
    user_id, _name, _trusted = await _async_person(hass, call)
    removed = await async_remove_voice(hass, user_id)
    return {"removed": removed}


async def async_remove_voice(hass: HomeAssistant, user_id: str) -> bool:
    """Remove ``user_id``'s voiceprint from every loaded entry; say if there was one."""
    removed = False
    for voices in entries_voices(hass):
        removed = await voices.async_remove(user_id) or removed
    return removed


@callback
def async_forget_removed_users(hass: HomeAssistant, voices: HouseholdVoices) -> CALLBACK_TYPE:
    """Remove the voiceprint of every HA user deleted while the entry is loaded."""

    async def _async_removed(event: Event) -> None:
        """Remove the deleted user's voiceprint."""
        user_id = event.data.get("user_id")
        if isinstance(user_id, str) and await voices.async_remove(user_id):
            LOGGER.info("Removed the voiceprint of a deleted user")

    return hass.bus.async_listen(EVENT_USER_REMOVED, _async_removed)


async def _async_enrol_files(
    hass: HomeAssistant,
    voices: list[HouseholdVoices],
    *,
    files: Sequence[str],
    user_id: str,
    name: str,
    role: Role,
) -> ServiceResponse:
    """Embed each file and add the usable ones to the person's voiceprint."""
    if len(files) > MAX_FILES:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="enrol_too_many")

    async def read() -> AsyncIterator[tuple[str, bytes]]:
        """Read each file allowed as 16 kHz PCM, one at a time, named by its path."""
        for name_of_file in files:
            path = Path(name_of_file)
            if not await hass.async_add_executor_job(hass.config.is_allowed_path, str(path)):
                raise ServiceValidationError(
                    translation_domain=DOMAIN,
                    translation_key="enrol_path_not_allowed",
                    translation_placeholders={"path": str(path)},
                )
            try:
                pcm = await hass.async_add_executor_job(read_wav_16k, path)
            except (OSError, EOFError, wave.Error, ValueError) as err:
                raise _bad_audio(str(path), err) from err
            yield str(path), pcm

    return await async_enrol_pcm(voices, read(), user_id=user_id, name=name, role=role)


async def async_enrol_pcm(
    voices: Sequence[HouseholdVoices],
    clips: AsyncIterable[tuple[str, bytes]],
    *,
    user_id: str,
    name: str,
    role: Role,
) -> ServiceResponse:
    """Embed each named clip of 16 kHz, 16-bit mono PCM and add the usable ones to the
    person's voiceprint in every entry of ``voices``; answer the samples and what was skipped.

    Raise ``HomeAssistantError`` (translated): ``voice_model_unavailable``,
    ``enrol_bad_audio``, ``enrol_no_speech`` (no clip had enough speech), ``voiceprint_file``.
    """
    if not voices:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="voice_model_unavailable",
            translation_placeholders={"error": "no companion entry is loaded"},
        )
    samples: list[Embedding] = []
    skipped: list[str] = []
    async for label, pcm in clips:
        try:
            embedding = await voices[0].async_embed(pcm)
        except VoiceModelError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="voice_model_unavailable",
                translation_placeholders={"error": str(err)},
            ) from err
        except ValueError as err:
            raise _bad_audio(label, err) from err
        if embedding is None:
            skipped.append(label)
        else:
            samples.append(embedding)
    if not samples:
        raise ServiceValidationError(translation_domain=DOMAIN, translation_key="enrol_no_speech")
    enrolled = None
    try:
        for household in voices:
            enrolled = await household.async_enrol(user_id, name, role, samples)
    except VoiceprintFileError as err:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="voiceprint_file",
            translation_placeholders={"error": str(err)},
        ) from err
    assert enrolled is not None
    return {"status": "enrolled", "samples": enrolled.samples, "skipped": list(skipped)}


def _bad_audio(label: str, err: Exception) -> ServiceValidationError:
    """Return the error for a recording that is not usable audio."""
    return ServiceValidationError(
        translation_domain=DOMAIN,
        translation_key="enrol_bad_audio",
        translation_placeholders={"path": label, "error": str(err)},
    )


def read_wav_16k(path: Path) -> bytes:
    """Return a WAV file's audio as 16 kHz, 16-bit mono PCM; raise ``ValueError`` if unusable."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError("the file is over 20 MB")
    with wave.open(str(path), "rb") as wav:
        width, channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
        frames = wav.readframes(wav.getnframes())
    if width != 2 or channels < 1 or rate < 8000:
        raise ValueError("only 16-bit PCM WAV at 8 kHz or more is read")
    samples = np.frombuffer(frames[: len(frames) - len(frames) % (2 * channels)], "<i2")
    mono = samples.reshape(-1, channels).astype(np.float32).mean(axis=1)
    if rate != RATE and len(mono):
        positions = np.arange(0, len(mono) * RATE / rate) * rate / RATE
        mono = np.interp(positions, np.arange(len(mono)), mono).astype(np.float32)
    return bytes(np.clip(np.round(mono), -32768, 32767).astype("<i2").tobytes())


async def _async_start_at_satellite(
    hass: HomeAssistant,
    voices: list[HouseholdVoices],
    *,
    satellite: str,
    user_id: str,
    name: str,
    role: Role,
) -> ServiceResponse:
    """Start an enrolment at ``satellite``: it asks for the first phrase and listens."""
    state = hass.states.get(satellite)
    features = int(state.attributes.get(ATTR_SUPPORTED_FEATURES, 0)) if state is not None else 0
    if not features & AssistSatelliteEntityFeature.START_CONVERSATION:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="enrol_satellite_cannot_listen",
            translation_placeholders={"satellite": satellite},
        )
    lines = await async_enrolment_lines(hass, hass.config.language)
    phrases = [lines[f"enrol_phrase_{n}"] for n in range(1, PHRASES + 1)]
    _finish(hass, satellite)  # a newer enrolment there replaces it
    session = SatelliteEnrolment(
        user_id=user_id, name=name, role=role, phrases=phrases, lines=lines
    )
    hass.data.setdefault(ENROLMENTS, {})[satellite] = session
    for household in voices:
        household.begin_enrolment()
    start = _line(lines["enrol_start"], name=name, phrase=phrases[0])
    hass.async_create_task(_async_ask(hass, satellite, start), f"{DOMAIN} enrolment at {satellite}")
    return {"status": "listening", "phrases": len(phrases)}


async def _async_ask(hass: HomeAssistant, satellite: str, message: str) -> None:
    """Have the satellite say ``message`` and listen for the answer."""
    data: dict[str, Any] = {
        ATTR_ENTITY_ID: satellite,
        "start_message": message,
        "preannounce": False,
    }
    try:
        await hass.services.async_call(SATELLITE, "start_conversation", data, blocking=True)
    except HomeAssistantError as err:
        LOGGER.warning("The enrolment at %s could not start: %s", satellite, err)
        _finish(hass, satellite)


def _finish(hass: HomeAssistant, satellite: str) -> SatelliteEnrolment | None:
    """End the enrolment running at ``satellite``, if one is (done, given up, replaced or too
    old), and stop embedding for it; return it."""
    session = hass.data.get(ENROLMENTS, {}).pop(satellite, None)
    if session is not None:
        for entry in loaded(hass):
            entry.runtime_data.voices.end_enrolment()
    return session


async def async_enrolment_step(
    hass: HomeAssistant, satellite_id: str | None, text: str
) -> EnrolmentStep | None:
    """Take an utterance heard at a satellite that is enrolling someone; None: none is.

    The utterance's voice is a sample (``speaking().heard``, or matched from our satellite's
    run); the step says the next phrase, asks again, or ends the enrolment.
    """
    sessions = hass.data.get(ENROLMENTS, {})
    session = sessions.get(satellite_id) if satellite_id is not None else None
    if session is None or satellite_id is None:
        return None
    if time.monotonic() - session.started > SESSION_SECONDS:
        _finish(hass, satellite_id)
        return None
    embedding = await _async_heard_embedding(hass, text)
    lines = session.lines
    if embedding is None:
        session.misses += 1
        if session.misses >= MAX_MISSES:
            _finish(hass, satellite_id)
            return EnrolmentStep(_line(lines["enrol_gave_up"], name=session.name), listens=False)
        phrase = session.phrases[len(session.taken)]
        return EnrolmentStep(_line(lines["enrol_again"], phrase=phrase), listens=True)
    session.taken.append(embedding)
    if len(session.taken) < len(session.phrases):
        phrase = session.phrases[len(session.taken)]
        return EnrolmentStep(_line(lines["enrol_next"], phrase=phrase), listens=True)
    _finish(hass, satellite_id)
    for household in entries_voices(hass):
        await household.async_enrol(session.user_id, session.name, session.role, session.taken)
    return EnrolmentStep(_line(lines["enrol_done"], name=session.name), listens=False)


async def _async_heard_embedding(hass: HomeAssistant, text: str) -> Embedding | None:
    """Return the voice embedding of the utterance this run heard (``text``), if it has one."""
    heard = take_heard(text)
    if heard is not None:
        return heard.embedding
    run = speaking().run
    if run is None:
        return None
    for entry in loaded_entries(hass):
        return (await entry.runtime_data.voices.async_hear(run.voice.pcm())).embedding
    return None


def _line(template: str, **values: str) -> str:
    """Fill a spoken line's ``{placeholders}`` (names are people's, never format strings)."""
    for key, value in values.items():
        template = template.replace(f"{{{key}}}", value)
    return template


ENROLMENT_KEYS = (
    "enrol_start",
    "enrol_next",
    "enrol_again",
    "enrol_done",
    "enrol_gave_up",
    *(f"enrol_phrase_{n}" for n in range(1, PHRASES + 1)),
)


async def async_enrolment_lines(hass: HomeAssistant, language: str) -> dict[str, str]:
    """Return the enrolment's spoken lines in ``language`` (English where it has none)."""
    best = matches(language, list(LANGUAGES)) if language else []
    texts = await _async_texts(hass, "en")
    if best and best[0] != "en":
        texts |= {k: v for k, v in (await _async_texts(hass, best[0])).items() if v}
    return texts


async def _async_texts(hass: HomeAssistant, language: str) -> dict[str, str]:
    """Return one language's enrolment lines by their short key."""
    found = await async_get_translations(hass, language, "exceptions", [DOMAIN])
    prefix = f"component.{DOMAIN}.exceptions.spoken_"
    return {key: found.get(f"{prefix}{key}.message", "") for key in ENROLMENT_KEYS}


def voice_schema() -> vol.Schema:
    """Return the options form for a person's voice: who, how, and from what."""
    return vol.Schema(
        {
            vol.Required("person"): EntitySelector(EntitySelectorConfig(domain="person")),
            vol.Required("role", default="adult"): SelectSelector(
                SelectSelectorConfig(options=["adult", "child"], translation_key="voice_role")
            ),
            vol.Optional("satellite"): EntitySelector(EntitySelectorConfig(domain=SATELLITE)),
            vol.Optional("audio"): TextSelector(TextSelectorConfig(multiple=True)),
            vol.Required("forget", default=False): BooleanSelector(),
        }
    )


async def async_voice_option(
    hass: HomeAssistant, data: Mapping[str, Any], user_id: str | None
) -> tuple[str, dict[str, str]]:
    """Do what the options form asks as ``user_id``; return how the flow ends, and its words.

    Raise ``HomeAssistantError`` (translated) as the actions do.
    """
    context = Context(user_id=user_id)
    person = str(data["person"])
    if data.get("forget"):
        call = ServiceCall(hass, DOMAIN, "forget_voice", {"person": person}, context)
        removed = await async_forget_voice(hass, call)
        return ("voice_forgotten" if removed and removed["removed"] else "voice_not_enrolled"), {}
    fields = {"person": person, "role": data.get("role", "adult")}
    if data.get("satellite"):
        fields["satellite"] = data["satellite"]
    if audio := [a for a in data.get("audio") or [] if str(a).strip()]:
        fields["audio"] = audio
    call = ServiceCall(hass, DOMAIN, "enroll_voice", fields, context)
    answer = await async_enroll_voice(hass, call) or {}
    if answer.get("status") == "listening":
        return "voice_listening", {}
    return "voice_enrolled", {"samples": str(answer.get("samples", 0))}
