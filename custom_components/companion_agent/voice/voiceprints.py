"""The household's enrolled voices for one entry: who speaks what the companion hears.

Each loaded entry keeps its voiceprints in one file beside its other stores
(``<entry>.voiceprints.json``, the engine's ``VoiceprintStore``). The speaker encoder is
loaded once for all entries (``SHARED_ENCODER``; its weights are read-only), in an executor
thread, the first time a voice is enrolled or heard with voices enrolled; every embedding is
computed in an executor thread too, started as soon as an utterance's audio has ended, so it
runs while the speech server is still transcribing.

Nothing here ever stops a turn: a missing or failing encoder, or any error while a voice is
matched, leaves the turn as the household's, with one repair issue for the encoder (it goes
when the encoder loads again). A voiceprint file that cannot be read is moved aside by the
store, with a repair issue naming both paths. Voiceprints and embeddings are never logged.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util.hass_dict import HassKey

from ..const import DOMAIN, LOGGER, STORAGE_FOLDER
from ..engine.errors import VoiceModelError, VoiceprintFileError
from ..engine.voices import (
    HOUSEHOLD_VOICE,
    Embedding,
    EnrolledVoice,
    Role,
    Speaker,
    SpeakerEncoder,
    VoiceprintStore,
    speaker_for,
)
from ..repairs import async_report_bad_voiceprints, async_report_unreadable_voiceprints

VOICEPRINTS_FILE = "voiceprints.json"
ISSUE_VOICE_MODEL = "voice_model_unavailable"
IDENTIFY_TIMEOUT = 5.0
"""Seconds a turn waits for its voice to be matched after its words are known."""
MAX_HEARD_SECONDS = 30
"""Audio kept of one utterance for its voice: the start of a longer one is enough."""
MAX_HEARD_BYTES = MAX_HEARD_SECONDS * 16000 * 2
MAX_CONVERSATIONS = 64
"""Conversations whose last recognised speaker is kept (for "that wasn't me")."""
SHARED_ENCODER: HassKey[SpeakerEncoder] = HassKey(f"{DOMAIN}_speaker_encoder")
"""The one loaded speaker encoder every entry uses (a failure is each entry's own, retried
when it reloads)."""


@dataclass(frozen=True, slots=True)
class HeardVoice:
    """What one utterance's audio says of its speaker: who, and the embedding for enrolment.

    ``text`` and ``at`` (monotonic seconds) bind it to the utterance: the transcript our
    speech to text returned with it, and when.
    """

    speaker: Speaker
    embedding: Embedding | None = field(default=None, repr=False)
    text: str = ""
    at: float = 0.0


UNHEARD = HeardVoice(HOUSEHOLD_VOICE)
"""An utterance whose voice could not be matched (nothing enrolled, too short, no encoder)."""


class HeardAudio:
    """The 16 kHz, 16-bit mono audio of one utterance, kept (bounded) for its voice."""

    def __init__(self) -> None:
        """Keep nothing yet."""
        self._pcm = bytearray()

    def add(self, pcm: bytes) -> None:
        """Keep ``pcm`` while the utterance is under ``MAX_HEARD_SECONDS``."""
        room = MAX_HEARD_BYTES - len(self._pcm)
        if room > 0:
            self._pcm += pcm[:room]

    def pcm(self) -> bytes:
        """Return the audio kept (whole samples only)."""
        return bytes(self._pcm[: len(self._pcm) - len(self._pcm) % 2])


class HouseholdVoices:
    """One entry's enrolled voices: enrolment, removal, and matching what is heard."""

    def __init__(self, hass: HomeAssistant, entry_id: str, path: Path | None = None) -> None:
        """Bind to the entry's voiceprint file; nothing is read until ``async_load``."""
        self.hass = hass
        self.entry_id = entry_id
        self.path = path or Path(hass.config.path(STORAGE_FOLDER, f"{entry_id}.{VOICEPRINTS_FILE}"))
        self._store: VoiceprintStore | None = None
        self._encoder: SpeakerEncoder | None = None
        self._encoder_error: VoiceModelError | None = None
        self._lock = asyncio.Lock()
        self._enrolling = 0
        self._recognised: OrderedDict[str, str] = OrderedDict()

    async def async_load(self) -> None:
        """Read the voiceprint file (a damaged one is moved aside, with a repair issue).

        A file that cannot be read at all (its permissions) is left as it is: no voice is
        enrolled or matched until it can be, and a repair issue names it.
        """
        try:
            store = await self.hass.async_add_executor_job(VoiceprintStore, self.path)
        except VoiceprintFileError as err:
            LOGGER.warning("The voiceprint file cannot be read: %s", err)
            async_report_unreadable_voiceprints(self.hass, self.entry_id, self.path, str(err))
            return
        self._store = store
        if store.damaged is not None:
            LOGGER.warning("The voiceprint file %s was unreadable and was moved aside", self.path)
            async_report_bad_voiceprints(self.hass, self.path, store.damaged)

    @property
    def listening(self) -> bool:
        """Say whether heard audio is worth an embedding: voices are enrolled, or being so."""
        return self._enrolling > 0 or bool(self.voices())

    def voices(self) -> list[EnrolledVoice]:
        """Return the enrolled voices (names, roles and counts; never the voiceprints)."""
        return self._store.voices() if self._store is not None else []

    @property
    def has_adult(self) -> bool:
        """Say whether an adult's voice is enrolled: only then may an unlock wait for one."""
        return any(v.role == "adult" for v in self.voices())

    def role_of(self, user_id: str | None) -> Role | None:
        """Return how ``user_id`` was enrolled, or None when their voice is not."""
        return next((v.role for v in self.voices() if v.user_id == user_id), None)

    def recognised(self, conversation_id: str, speaker: Speaker | None) -> Speaker | None:
        """Note whose voice spoke in ``conversation_id``; return the speaker to disown with.

        "That wasn't me" is short and may match nobody: it then speaks for the person the
        conversation's last turn was recognised as, whose exchange it takes back.
        """
        if speaker is not None and speaker.heard and speaker.user_id is not None:
            self._recognised.pop(conversation_id, None)
            self._recognised[conversation_id] = speaker.user_id
            while len(self._recognised) > MAX_CONVERSATIONS:
                self._recognised.popitem(last=False)
            return speaker
        if speaker is not None and speaker.heard and conversation_id in self._recognised:
            return replace(speaker, user_id=self._recognised[conversation_id])
        return speaker

    def begin_enrolment(self) -> None:
        """Note that an enrolment runs: utterances are embedded even with nobody enrolled."""
        self._enrolling += 1

    def end_enrolment(self) -> None:
        """Note that an enrolment has ended."""
        self._enrolling = max(0, self._enrolling - 1)

    async def async_hear(self, pcm: bytes) -> HeardVoice:
        """Return who spoke ``pcm``: a match, else the household; never raises."""
        if not self.listening or not pcm:
            return UNHEARD
        try:
            embedding = await self.async_embed(pcm)
        except VoiceModelError:
            return UNHEARD
        except Exception:
            LOGGER.exception("Matching a voice failed; the turn is the household's")
            return UNHEARD
        if embedding is None or self._store is None:
            return UNHEARD
        store = self._store
        identification = await self.hass.async_add_executor_job(store.identify, embedding)
        return HeardVoice(speaker_for(identification), embedding)

    async def async_embed(self, pcm: bytes) -> Embedding | None:
        """Return the voice embedding of 16 kHz mono ``pcm`` (None: too little speech).

        Raise ``VoiceModelError`` when the encoder cannot be loaded (a repair issue says so).
        """
        encoder = await self._async_encoder()
        return await self.hass.async_add_executor_job(encoder.embed, pcm)

    async def async_enrol(
        self, user_id: str, name: str, role: Role, embeddings: Sequence[Embedding]
    ) -> EnrolledVoice:
        """Add ``embeddings`` to ``user_id``'s voiceprint (made if new) and save it."""
        store = self._loaded()
        return await self.hass.async_add_executor_job(
            store.enrol, user_id, name, role, list(embeddings)
        )

    async def async_remove(self, user_id: str) -> bool:
        """Remove ``user_id``'s voiceprint; False when there was none."""
        if self._store is None:
            return False
        return await self.hass.async_add_executor_job(self._store.remove, user_id)

    def diagnostics(self) -> dict[str, object]:
        """Return what support may see: who is enrolled, how, how many samples; no data."""
        return {
            "encoder": "failed"
            if self._encoder_error is not None
            else "loaded"
            if self._encoder
            else "idle",
            "voices": [
                {
                    "user_id": v.user_id,
                    "role": v.role,
                    "samples": v.samples,
                    "enrolled_at": v.enrolled_at.isoformat(),
                }
                for v in self.voices()
            ],
        }

    def _loaded(self) -> VoiceprintStore:
        """Return the store; raise ``VoiceprintFileError`` when its file could not be read."""
        if self._store is None:
            raise VoiceprintFileError("the file could not be read", path=self.path)
        return self._store

    async def _async_encoder(self) -> SpeakerEncoder:
        """Return the speaker encoder, loading it once; raise ``VoiceModelError`` when it fails."""
        async with self._lock:
            if self._encoder is not None:
                return self._encoder
            if self._encoder_error is not None:
                raise self._encoder_error
            try:
                shared = self.hass.data.get(SHARED_ENCODER)
                if shared is None:
                    loaded = await self.hass.async_add_executor_job(SpeakerEncoder.load)
                    shared = self.hass.data.setdefault(SHARED_ENCODER, loaded)
                self._encoder = shared
            except VoiceModelError as err:
                self._encoder_error = err
                LOGGER.warning("The speaker encoder could not be loaded: %s", err)
                ir.async_create_issue(
                    self.hass,
                    DOMAIN,
                    ISSUE_VOICE_MODEL,
                    is_fixable=False,
                    severity=ir.IssueSeverity.WARNING,
                    translation_key=ISSUE_VOICE_MODEL,
                    translation_placeholders={"error": str(err)},
                    data={"entry_id": self.entry_id},
                )
                raise
            ir.async_delete_issue(self.hass, DOMAIN, ISSUE_VOICE_MODEL)
            return self._encoder
