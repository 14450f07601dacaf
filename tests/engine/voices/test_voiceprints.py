"""The household's voiceprints on real voices: who is recognised, who approves, a bad file."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import numpy as np
import pytest

from custom_components.companion_agent.engine.errors import VoiceprintFileError
from custom_components.companion_agent.engine.voices import (
    APPROVE_THRESHOLD,
    EMBEDDING_DIM,
    HOUSEHOLD_VOICE,
    IDENTIFY_THRESHOLD,
    Embedding,
    Speaker,
    VoiceprintStore,
    speaker_for,
)
from custom_components.companion_agent.engine.voices.voiceprints import MAX_SAMPLES
from tests.support.voices import Voices

ENROLLED = 5
"""Utterances enrolled per person; the rest of a voice's utterances are heard turns."""


def household(path: Path, voices: Voices) -> VoiceprintStore:
    """Return a store at ``path`` with kal enrolled as an adult and slt as a child."""
    store = VoiceprintStore(path)
    store.enrol("u-kal", "Kal", "adult", voices["kal"][:ENROLLED])
    store.enrol("u-slt", "Sally", "child", voices["slt"][:ENROLLED])
    return store


def test_each_enrolled_voice_is_recognised_as_itself(tmp_path: Path, voices: Voices) -> None:
    """Every heard turn of kal is Kal, every one of slt is Sally, with a score and margin."""
    store = household(tmp_path / "voices.json", voices)
    for speaker, user_id in (("kal", "u-kal"), ("slt", "u-slt")):
        for embedding in voices[speaker][ENROLLED:]:
            found = store.identify(embedding)
            assert found.voice is not None
            assert found.voice.user_id == user_id
            assert found.score is not None
            assert found.score >= IDENTIFY_THRESHOLD
            assert found.margin is not None
            assert found.margin > 0.05


def test_a_voice_nobody_enrolled_is_the_household(tmp_path: Path, voices: Voices) -> None:
    """Piper's joe and Festival's krb match nobody: their turns run as the household."""
    store = household(tmp_path / "voices.json", voices)
    for speaker in ("joe", "krb"):
        for embedding in voices[speaker]:
            found = store.identify(embedding)
            assert found.voice is None
            assert not found.approves
            assert speaker_for(found) is HOUSEHOLD_VOICE
            assert store.speaker(embedding) is HOUSEHOLD_VOICE


def test_an_adult_approves_and_a_child_never_does(tmp_path: Path, voices: Voices) -> None:
    """The same voice enrolled as an adult approves its clear turns; as a child, none."""
    adult = VoiceprintStore(tmp_path / "adult.json")
    adult.enrol("u-slt", "Sally", "adult", voices["slt"][:ENROLLED])
    child = VoiceprintStore(tmp_path / "child.json")
    child.enrol("u-slt", "Sally", "child", voices["slt"][:ENROLLED])
    heard = voices["slt"][ENROLLED:]
    as_adult = [adult.speaker(e) for e in heard]
    as_child = [child.speaker(e) for e in heard]
    assert sum(s.may_approve for s in as_adult) >= len(heard) - 2
    assert all(
        s.may_approve == (s.score is not None and s.score >= APPROVE_THRESHOLD) for s in as_adult
    )
    assert not any(s.may_approve for s in as_child)
    assert {(s.user_id, s.name, s.role, s.heard) for s in as_child} == {
        ("u-slt", "Sally", "child", True)
    }


def test_speaker_for_carries_the_match(tmp_path: Path, voices: Voices) -> None:
    """A match becomes the engine's Speaker: heard, who, role, score and the approval."""
    store = household(tmp_path / "voices.json", voices)
    found = store.identify(voices["kal"][-1])
    assert speaker_for(found) == Speaker(
        heard=True,
        user_id="u-kal",
        name="Kal",
        role="adult",
        score=found.score,
        may_approve=found.approves,
    )
    assert store.speaker(None) is HOUSEHOLD_VOICE


def test_two_people_with_one_voice_are_told_apart_by_nobody(tmp_path: Path, voices: Voices) -> None:
    """Two ids enrolled with the same voice leave no margin: the turn is the household's."""
    store = VoiceprintStore(tmp_path / "voices.json")
    store.enrol("u-a", "A", "adult", voices["kal"][:ENROLLED])
    store.enrol("u-b", "B", "adult", voices["kal"][:ENROLLED])
    found = store.identify(voices["kal"][-1])
    assert found.voice is None
    assert found.margin is not None
    assert found.margin < 0.01


def test_the_file_keeps_the_household_privately(tmp_path: Path, voices: Voices) -> None:
    """A new store reads the same people back from a 0600 file; listing holds no voice data."""
    path = tmp_path / "voices.json"
    first = household(path, voices)
    again = VoiceprintStore(path)
    assert again.voices() == first.voices()
    assert [(v.user_id, v.name, v.role, v.samples) for v in again.voices()] == [
        ("u-kal", "Kal", "adult", ENROLLED),
        ("u-slt", "Sally", "child", ENROLLED),
    ]
    # Read back, each sample is normalised again and BLAS may sum in another order: the same
    # person and verdict, with scores equal to float32's precision (not to the last bit).
    heard, read = first.identify(voices["kal"][-1]), again.identify(voices["kal"][-1])
    assert (read.voice, read.approves) == (heard.voice, heard.approves)
    assert heard.voice is not None
    assert read.score == pytest.approx(heard.score, abs=1e-5)
    assert read.margin == pytest.approx(heard.margin, abs=1e-5)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert again.damaged is None
    assert not any(name.endswith(".partial") for name in (p.name for p in tmp_path.iterdir()))


def test_enrolling_again_adds_samples_up_to_the_bound(tmp_path: Path, voices: Voices) -> None:
    """More utterances join the person's samples (name and role updated); the newest are kept."""
    store = VoiceprintStore(tmp_path / "voices.json")
    first = store.enrol("u-kal", "Kal", "child", voices["kal"][:3])
    more = store.enrol("u-kal", "Kal K.", "adult", voices["kal"][3:6])
    assert (more.samples, more.name, more.role) == (6, "Kal K.", "adult")
    assert more.enrolled_at == first.enrolled_at
    many = store.enrol("u-kal", "Kal", "adult", voices["kal"] * 3)
    assert many.samples == MAX_SAMPLES
    assert len(store.voices()) == 1


def test_remove_forgets_a_voice(tmp_path: Path, voices: Voices) -> None:
    """A removed person is gone from the file; their turns are the household's after."""
    path = tmp_path / "voices.json"
    store = household(path, voices)
    assert store.remove("u-kal") is True
    assert store.remove("u-kal") is False
    assert [v.user_id for v in VoiceprintStore(path).voices()] == ["u-slt"]
    assert store.identify(voices["kal"][-1]).voice is None


def test_bad_enrolments_are_refused(tmp_path: Path, voices: Voices) -> None:
    """No embeddings, an empty id, an unknown role: refused, and nothing is written."""
    path = tmp_path / "voices.json"
    store = VoiceprintStore(path)
    with pytest.raises(ValueError, match="at least one"):
        store.enrol("u-kal", "Kal", "adult", [])
    with pytest.raises(ValueError, match="user_id"):
        store.enrol("  ", "Kal", "adult", voices["kal"][:1])
    with pytest.raises(ValueError, match="role"):
        store.enrol("u-kal", "Kal", "owner", voices["kal"][:1])  # type: ignore[arg-type]
    assert not path.exists()


def test_a_write_that_fails_leaves_the_store_as_it_was(tmp_path: Path, voices: Voices) -> None:
    """A file that cannot be written is a voiceprint file error, and nobody is enrolled."""
    folder = tmp_path / "voices"
    store = VoiceprintStore(folder / "voices.json")
    folder.write_text("not a folder", encoding="utf-8")
    with pytest.raises(VoiceprintFileError, match="cannot be written"):
        store.enrol("u-kal", "Kal", "adult", voices["kal"][:2])
    assert store.voices() == []


def test_a_file_that_cannot_be_read_is_an_error_and_stays(tmp_path: Path) -> None:
    """A path that cannot be read (a folder here) is a clear error; nothing is moved."""
    path = tmp_path / "voices.json"
    path.mkdir()
    with pytest.raises(VoiceprintFileError, match="cannot be read"):
        VoiceprintStore(path)
    assert path.is_dir()


def stored(voices: Voices) -> dict[str, object]:
    """Return a good file's content: kal as an adult with two samples."""
    sample = [float(x) for x in voices["kal"][0].vector]
    return {
        "version": 1,
        "voices": [
            {
                "user_id": "u-kal",
                "name": "Kal",
                "role": "adult",
                "enrolled_at": "2026-01-01T00:00:00+00:00",
                "samples": [sample, sample],
            }
        ],
    }


def damage(content: dict[str, object], how: str) -> str:
    """Return the file's text damaged in one way."""
    voice = content["voices"][0]  # type: ignore[index]
    sample = voice["samples"][0]
    match how:
        case "not json":
            return '{"version": 1, "voices": ['
        case "wrong dimension":
            voice["samples"][0] = sample[:128]
        case "nan":
            return json.dumps(content).replace(str(sample[3]), "NaN", 1)
        case "wrong shape":
            voice["samples"] = sample
        case "unknown role":
            voice["role"] = "owner"
        case "twice":
            content["voices"] = [voice, voice]
        case "not a list":
            content["voices"] = {"u-kal": voice}
    return json.dumps(content)


@pytest.mark.parametrize(
    "how",
    [
        "not json",
        "wrong dimension",
        "nan",
        "wrong shape",
        "unknown role",
        "twice",
        "not a list",
    ],
)
def test_a_damaged_file_is_moved_aside(tmp_path: Path, voices: Voices, how: str) -> None:
    """The file goes to <file>.damaged-<time> as it was, the store starts empty and says so."""
    path = tmp_path / "voices.json"
    good = VoiceprintStore(path)
    assert good.damaged is None
    text = damage(stored(voices), how)
    path.write_text(text, encoding="utf-8")
    store = VoiceprintStore(path)
    assert store.voices() == []
    assert store.damaged is not None
    assert store.damaged.name.startswith("voices.json.damaged-")
    assert store.damaged.read_text(encoding="utf-8") == text
    assert not path.exists()
    store.enrol("u-kal", "Kal", "adult", voices["kal"][:1])
    assert VoiceprintStore(path).damaged is None


def test_the_undamaged_file_reads(tmp_path: Path, voices: Voices) -> None:
    """The content the damaged cases start from is itself a good file."""
    path = tmp_path / "voices.json"
    path.write_text(json.dumps(stored(voices)), encoding="utf-8")
    store = VoiceprintStore(path)
    assert store.damaged is None
    assert [(v.user_id, v.samples) for v in store.voices()] == [("u-kal", 2)]


def test_threads_enrolling_at_once_lose_nobody(tmp_path: Path, voices: Voices) -> None:
    """Eight threads enrolling eight people into one store: all eight are in the file."""
    path = tmp_path / "voices.json"
    store = VoiceprintStore(path)
    rng = np.random.default_rng(7)
    people = [Embedding.of(rng.normal(size=EMBEDDING_DIM)) for _ in range(8)]
    start = threading.Barrier(len(people))

    def enrol(index: int) -> None:
        start.wait()
        store.enrol(f"u-{index}", f"Person {index}", "adult", [people[index]])
        store.identify(voices["kal"][0])

    threads = [threading.Thread(target=enrol, args=(i,)) for i in range(len(people))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(v.user_id for v in VoiceprintStore(path).voices()) == [f"u-{i}" for i in range(8)]
    for index, person in enumerate(people):
        found = store.identify(person)
        assert found.voice is not None
        assert found.voice.user_id == f"u-{index}"
