"""The household's enrolled voices in one JSON file, and who of them a heard voice is.

A person is enrolled with a few utterances' embeddings (the newest ``MAX_SAMPLES`` are kept);
their voiceprint is the normalised mean of them. ``identify`` compares a heard embedding with
every voiceprint by cosine: the best is a match only at ``IDENTIFY_THRESHOLD`` or above and
``MARGIN`` clear of the second best; the match approves a held call only for an adult at
``APPROVE_THRESHOLD`` or above.

The thresholds come from ``benchmarks/speakers.py`` (the encoder of ``encoder.py``, energy
silence cut; five utterances enrolled per voice; each voice left out in turn as the unknown
one): 14 synthetic voices (``script/peers voices``: 16 household sentences each) and 7 people
recorded for Asterisk's prompts (``script/peers voices-real``: 4 wideband, 3 telephone band,
40 prompts of 1.5-6 s each). Together, the equal-error point lies at cosine 0.76 (0.72 %).

- 0.80 to identify: 98.0 % of enrolled turns named correctly (people 96.7 %); an unknown
  voice taken for someone in 1.8 % of its turns (people 0.36 %, synthetic 3.6 %).
- 0.85 to approve: an unknown voice approves in 0 of 502 turns (the highest cosine of two
  different voices was 0.844), while 88.9 % of an enrolled adult's turns approve (people
  82.9 %): a refused approval asks again; a wrong one opens a door.
- 0.05 margin: the closest voiceprint was right for every enrolled turn, and a second person
  within 0.05 of the best means two voices too alike to tell apart: nobody is named.

The file is written whole and atomically (mode 0600). A file that is not what it should be
(bad JSON, a wrong shape or dimension, numbers that are not finite) is moved aside to
``<file>.damaged-<time>`` and the store starts empty; ``damaged`` says where it went (the
file itself if it could not be moved), so the host can tell the person. The store is safe to
use from several threads at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TypeGuard, get_args

import numpy as np

from ..errors import VoiceprintFileError
from ..json_types import JSONObject, JSONValue
from .encoder import EMBEDDING_DIM, Embedding
from .speaker import HOUSEHOLD_VOICE, Role, Speaker

LOGGER = logging.getLogger(__name__)

IDENTIFY_THRESHOLD: Final = 0.80
"""The least cosine at which a heard voice is taken for an enrolled person (see above)."""
APPROVE_THRESHOLD: Final = 0.85
"""The least cosine at which an enrolled adult's voice approves a held call (see above)."""
MARGIN: Final = 0.05
"""How far the best voiceprint must lead the second best for a match (see above)."""
MAX_SAMPLES: Final = 20
"""Embeddings kept per person: the newest; the voiceprint is their normalised mean."""
MAX_VOICES: Final = 32
"""People enrolled in one household at most."""
MAX_TEXT_CHARS: Final = 200
MAX_FILE_BYTES: Final = 8 * 1024 * 1024
FILE_VERSION: Final = 1
ROLES: Final[tuple[str, ...]] = get_args(Role.__value__)


@dataclass(frozen=True, slots=True, kw_only=True)
class EnrolledVoice:
    """One enrolled person, without their voice data: who, their role, how many samples."""

    user_id: str
    name: str
    role: Role
    samples: int
    enrolled_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Identification:
    """Who a heard voice is: ``voice`` None when nobody matched well enough.

    ``score`` is the best cosine against any voiceprint (None with nobody enrolled),
    ``margin`` how far it led the second best (None with one person enrolled), ``approves``
    whether the match is an adult at the approval threshold.
    """

    voice: EnrolledVoice | None
    score: float | None = None
    margin: float | None = None
    approves: bool = False


NOBODY: Final = Identification(voice=None)
"""No voice heard, or nobody enrolled."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """One person as the store holds them: who, their kept samples, their voiceprint."""

    voice: EnrolledVoice
    samples: tuple[Embedding, ...]
    voiceprint: Embedding


class DamagedFileError(ValueError):
    """The voiceprint file is not what it should be (the message says what)."""


def speaker_for(identification: Identification) -> Speaker:
    """Return who speaks a heard turn: the matched person, or the household."""
    voice = identification.voice
    if voice is None:
        return HOUSEHOLD_VOICE
    return Speaker(
        heard=True,
        user_id=voice.user_id,
        name=voice.name,
        role=voice.role,
        score=identification.score,
        may_approve=identification.approves,
    )


class VoiceprintStore:
    """The enrolled voices of one household, kept in one JSON file at ``path``.

    Reading the file happens here (blocking: build it in an executor); so do the writes of
    ``enrol`` and ``remove``. A damaged file is moved aside and ``damaged`` names where.
    """

    def __init__(self, path: Path) -> None:
        """Read the household's voices from ``path`` (missing: none enrolled yet).

        VoiceprintFileError if the file is there and cannot be read (no permission, say): it
        is left as it is, never overwritten by an empty store.
        """
        self.path = path
        self.damaged: Path | None = None
        self._lock = threading.Lock()
        try:
            entries = _read(path)
        except FileNotFoundError:
            entries = ()
        except OSError as err:
            raise VoiceprintFileError(
                f"the voiceprints cannot be read ({err.strerror or err})", path=path
            ) from err
        except (DamagedFileError, UnicodeDecodeError) as err:
            self.damaged = _move_aside(path, err) or path
            entries = ()
        self._entries: tuple[_Entry, ...] = entries

    def voices(self) -> list[EnrolledVoice]:
        """Return everyone enrolled, in the order they were first enrolled."""
        return [entry.voice for entry in self._entries]

    def enrol(
        self, user_id: str, name: str, role: Role, embeddings: Sequence[Embedding]
    ) -> EnrolledVoice:
        """Add ``embeddings`` to ``user_id``'s voice (new or not) and write the file.

        The name and role are set to those given; the newest ``MAX_SAMPLES`` embeddings are
        kept. ValueError on an empty or over-long id or name, an unknown role, no embeddings,
        or a household already of ``MAX_VOICES``; VoiceprintFileError if the file cannot be
        written (the store is then as it was).
        """
        user_id, name = _text(user_id, "user_id"), _text(name, "name")
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}")
        if not embeddings or not all(isinstance(e, Embedding) for e in embeddings):
            raise ValueError("enrolment needs at least one Embedding")
        with self._lock:
            entries = list(self._entries)
            index = next((i for i, e in enumerate(entries) if e.voice.user_id == user_id), None)
            if index is None and len(entries) >= MAX_VOICES:
                raise ValueError(f"a household holds at most {MAX_VOICES} voices")
            old = entries[index].samples if index is not None else ()
            samples = (*old, *embeddings)[-MAX_SAMPLES:]
            enrolled_at = (
                entries[index].voice.enrolled_at if index is not None else datetime.now(UTC)
            )
            voice = EnrolledVoice(
                user_id=user_id,
                name=name,
                role=role,
                samples=len(samples),
                enrolled_at=enrolled_at,
            )
            entry = _Entry(voice, samples, _mean(samples))
            if index is None:
                entries.append(entry)
            else:
                entries[index] = entry
            self._save(tuple(entries))
            return voice

    def remove(self, user_id: str) -> bool:
        """Forget ``user_id``'s voice and write the file; False if they were not enrolled."""
        with self._lock:
            kept = tuple(e for e in self._entries if e.voice.user_id != user_id)
            if len(kept) == len(self._entries):
                return False
            self._save(kept)
            return True

    def identify(self, embedding: Embedding) -> Identification:
        """Return who of the household ``embedding`` is, if anyone (see the module's note)."""
        entries = self._entries
        if not entries:
            return NOBODY
        prints = np.stack([entry.voiceprint.vector for entry in entries])
        scores = prints @ embedding.vector
        order = np.argsort(scores)[::-1]
        best = float(scores[order[0]])
        margin = float(best - scores[order[1]]) if len(order) > 1 else None
        if not math.isfinite(best):
            return NOBODY
        voice = entries[int(order[0])].voice
        matched = best >= IDENTIFY_THRESHOLD and (margin is None or margin >= MARGIN)
        if not matched:
            return Identification(voice=None, score=best, margin=margin)
        approves = voice.role == "adult" and best >= APPROVE_THRESHOLD
        return Identification(voice=voice, score=best, margin=margin, approves=approves)

    def speaker(self, embedding: Embedding | None) -> Speaker:
        """Return who speaks a heard turn whose voice is ``embedding`` (None: too short)."""
        if embedding is None:
            return HOUSEHOLD_VOICE
        return speaker_for(self.identify(embedding))

    def _save(self, entries: tuple[_Entry, ...]) -> None:
        """Write ``entries`` whole and atomically (mode 0600), then hold them; caller locks."""
        data: JSONObject = {
            "version": FILE_VERSION,
            "voices": [_dump(entry) for entry in entries],
        }
        partial = self.path.with_name(f"{self.path.name}.partial")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                os.fchmod(file.fileno(), 0o600)
                json.dump(data, file, separators=(",", ":"))
                file.flush()
                os.fsync(file.fileno())
            os.replace(partial, self.path)
        except OSError as err:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
            raise VoiceprintFileError(
                f"the voiceprints cannot be written ({err.strerror or err})", path=self.path
            ) from err
        self._entries = entries


def _text(value: str, what: str) -> str:
    """Return ``value`` stripped; ValueError if it is not text of 1-200 characters."""
    if not isinstance(value, str) or not 0 < len(value.strip()) <= MAX_TEXT_CHARS:
        raise ValueError(f"{what} must be text of 1 to {MAX_TEXT_CHARS} characters")
    return value.strip()


def _mean(samples: Sequence[Embedding]) -> Embedding:
    """Return the voiceprint of ``samples``: their normalised mean."""
    try:
        return Embedding.of(np.mean([s.vector for s in samples], axis=0))
    except ValueError as err:  # opposite samples cancel out: nothing to recognise
        raise ValueError("these embeddings have no common voice") from err


def _dump(entry: _Entry) -> JSONObject:
    """Return one person as the file stores them."""
    # Each number's shortest text that reads back as the same float32: exact, and short.
    samples: list[JSONValue] = [[float(str(x)) for x in sample.vector] for sample in entry.samples]
    return {
        "user_id": entry.voice.user_id,
        "name": entry.voice.name,
        "role": entry.voice.role,
        "enrolled_at": entry.voice.enrolled_at.isoformat(),
        "samples": samples,
    }


def _read(path: Path) -> tuple[_Entry, ...]:
    """Return the people in the file; FileNotFoundError, OSError or DamagedFileError."""
    with path.open("rb") as file:
        raw = file.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise DamagedFileError(f"larger than {MAX_FILE_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as err:
        raise DamagedFileError(f"not JSON ({err})") from err
    if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
        raise DamagedFileError(f"not a version {FILE_VERSION} voiceprint file")
    voices = data.get("voices")
    if not isinstance(voices, list) or len(voices) > MAX_VOICES:
        raise DamagedFileError(f"voices is not a list of at most {MAX_VOICES}")
    entries = [_load(item) for item in voices]
    if len({e.voice.user_id for e in entries}) != len(entries):
        raise DamagedFileError("a person is enrolled twice")
    return tuple(entries)


def _load(item: object) -> _Entry:
    """Return one stored person; DamagedFileError if anything in them is wrong."""
    if not isinstance(item, dict):
        raise DamagedFileError("a voice is not an object")
    user_id, name, role = item.get("user_id"), item.get("name"), item.get("role")
    if not (_stored_text(user_id) and _stored_text(name)):
        raise DamagedFileError(f"a voice's user_id or name is not text of 1 to {MAX_TEXT_CHARS}")
    if role not in ROLES:
        raise DamagedFileError("a voice's role is unknown")
    try:
        enrolled_at = datetime.fromisoformat(str(item.get("enrolled_at")))
    except ValueError as err:
        raise DamagedFileError("a voice's enrolled_at is not a time") from err
    raw_samples = item.get("samples")
    if not isinstance(raw_samples, list) or not 0 < len(raw_samples) <= MAX_SAMPLES:
        raise DamagedFileError(f"a voice's samples are not a list of 1 to {MAX_SAMPLES}")
    samples = []
    for raw in raw_samples:
        if (
            not isinstance(raw, list)
            or len(raw) != EMBEDDING_DIM
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw)
        ):
            raise DamagedFileError(f"a sample is not {EMBEDDING_DIM} numbers")
        try:
            samples.append(Embedding.of(raw))
        except ValueError as err:
            raise DamagedFileError(f"a sample is unusable ({err})") from err
    try:
        voiceprint = _mean(samples)
    except ValueError as err:
        raise DamagedFileError(str(err)) from err
    voice = EnrolledVoice(
        user_id=user_id,
        name=name,
        role="adult" if role == "adult" else "child",
        samples=len(samples),
        enrolled_at=enrolled_at if enrolled_at.tzinfo else enrolled_at.replace(tzinfo=UTC),
    )
    return _Entry(voice, tuple(samples), voiceprint)


def _stored_text(value: object) -> TypeGuard[str]:
    """Say whether a stored id or name is usable: text of 1 to 200 characters."""
    return isinstance(value, str) and 0 < len(value) <= MAX_TEXT_CHARS


def _move_aside(path: Path, err: Exception) -> Path | None:
    """Move an unusable file to ``<file>.damaged-<time>``; return where (None if it stays)."""
    moved = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
    counter = 1
    while moved.exists():
        counter += 1
        moved = moved.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{counter}")
    try:
        os.replace(path, moved)
    except OSError as move_err:
        LOGGER.warning("Voiceprint file %s is unusable (%s) and stays: %s", path, err, move_err)
        return None
    LOGGER.warning("Voiceprint file %s is unusable (%s); moved to %s", path, err, moved)
    return moved
