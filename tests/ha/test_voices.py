"""Enrolled voices through a real HA: the actions' checks, forgetting, a damaged file, a lost model.

Voices are festival's (a woman, slt, and a man, kal), written as the WAV files a person
would give ``enroll_voice``; the speaker encoder is the one shipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from homeassistant.config_entries import ConfigFlowResult
from homeassistant.core import Context, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized
from homeassistant.helpers import issue_registry as ir
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN, STORAGE_FOLDER
from custom_components.companion_agent.diagnostics import async_get_config_entry_diagnostics
from custom_components.companion_agent.engine.voices import encoder
from custom_components.companion_agent.voice.voiceprints import (
    ISSUE_VOICE_MODEL,
    VOICEPRINTS_FILE,
)
from tests.ha.common import SetupCompanion, add_person, call, persona
from tests.support.festival import RATE, festival_say, write_wav

SENTENCES = (
    "Please turn on the lights in the kitchen.",
    "What is the weather going to be like tomorrow morning?",
    "Remind me to water the plants on Sunday evening.",
)


def voiceprints(hass: HomeAssistant, entry: MockConfigEntry) -> Path:
    """Return where the entry keeps its voiceprints."""
    return Path(hass.config.path(STORAGE_FOLDER, f"{entry.entry_id}.{VOICEPRINTS_FILE}"))


def recordings(folder: Path, voice: str) -> list[str]:
    """Write three recordings of ``voice`` into ``folder``; return their paths."""
    return [
        str(write_wav(folder / f"{voice}-{n}.wav", festival_say(text, voice)))
        for n, text in enumerate(SENTENCES)
    ]


def enrolled(entry: MockConfigEntry) -> dict[str, str]:
    """Return each enrolled user's role."""
    return {v.user_id: v.role for v in entry.runtime_data.voices.voices()}


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    """Return a folder HA may read files in (the test's folder is HA's configuration)."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    return folder


@pytest.fixture
async def entry(
    hass: HomeAssistant, setup_companion: SetupCompanion, allowed: Path
) -> MockConfigEntry:
    """Set up the companion; let HA read files in the ``allowed`` folder."""
    hass.config.allowlist_external_dirs.add(str(allowed))
    return await setup_companion(persona())


async def test_enrolling_from_files_checks_what_it_is_given(
    hass: HomeAssistant, entry: MockConfigEntry, allowed: Path
) -> None:
    """Both sources or none, a path HA may not read, not a WAV, silence: each a clear error."""
    _ada_id, ada = await add_person(hass, "Ada")
    files = recordings(allowed, "slt")
    outside = write_wav(Path(hass.config.path("outside.wav")), festival_say(SENTENCES[0], "slt"))
    text = allowed / "notes.wav"
    text.write_text("not audio", encoding="utf-8")
    silence = write_wav(allowed / "silence.wav", b"\0\0" * RATE * 3)
    cases: dict[str, dict[str, object]] = {
        "enrol_needs_one": {"person": ada},
        "enrol_path_not_allowed": {"person": ada, "audio": [str(outside)]},
        "enrol_bad_audio": {"person": ada, "audio": [str(text)]},
        "enrol_no_speech": {"person": ada, "audio": [str(silence)]},
    }
    for key, data in cases.items():
        with pytest.raises(ServiceValidationError) as raised:
            await call(hass, "enroll_voice", data)
        assert raised.value.translation_key == key
    with pytest.raises(ServiceValidationError) as raised:
        await call(
            hass,
            "enroll_voice",
            {**cases["enrol_needs_one"], "audio": files, "satellite": "assist_satellite.x"},
        )
    assert raised.value.translation_key == "enrol_needs_one"
    hass.states.async_set("person.guest", "home", {"friendly_name": "Guest"})
    with pytest.raises(ServiceValidationError) as raised:
        await call(hass, "enroll_voice", {"person": "person.guest", "audio": files})
    assert raised.value.translation_key == "person_without_user"
    assert enrolled(entry) == {}


async def enrol_as(
    hass: HomeAssistant, user_id: str, data: dict[str, object]
) -> dict[str, object] | None:
    """Call ``enroll_voice`` as the HA user ``user_id``; return its answer."""
    answer = await hass.services.async_call(
        DOMAIN,
        "enroll_voice",
        data,
        blocking=True,
        return_response=True,
        context=Context(user_id=user_id),
    )
    return dict(answer) if answer is not None else None


async def test_only_an_administrator_enrols_others_or_an_adult(
    hass: HomeAssistant, entry: MockConfigEntry, allowed: Path
) -> None:
    """Ben may not enrol Ada; Ada's own enrolment is a child's until an administrator makes
    her an adult, which she keeps when she enrols again; she may not make herself one."""
    admin = await hass.auth.async_create_user("Admin")  # the first user: the owner
    ada_id, ada = await add_person(hass, "Ada")
    ben_id, ben = await add_person(hass, "Ben")
    assert admin.is_admin
    files = recordings(allowed, "slt")
    with pytest.raises(Unauthorized):
        await enrol_as(hass, ben_id, {"person": ada, "audio": files})
    answer = await enrol_as(hass, ada_id, {"person": ada, "audio": files})
    assert answer == {"status": "enrolled", "samples": 3, "skipped": []}
    assert enrolled(entry) == {ada_id: "child"}
    with pytest.raises(ServiceValidationError) as raised:
        await enrol_as(hass, ada_id, {"person": ada, "role": "adult", "audio": files[:1]})
    assert raised.value.translation_key == "enrol_adult_needs_admin"
    await enrol_as(hass, admin.id, {"person": ada, "audio": files[:1]})
    await enrol_as(hass, ada_id, {"person": ada, "audio": files[1:]})
    await enrol_as(
        hass, admin.id, {"person": ben, "role": "child", "audio": recordings(allowed, "kal")[:1]}
    )

    assert enrolled(entry) == {ada_id: "adult", ben_id: "child"}
    saved = voiceprints(hass, entry)
    assert saved.stat().st_mode & 0o077 == 0  # only Home Assistant reads voiceprints


async def test_a_recording_at_another_rate_and_in_stereo_is_heard_as_the_same_voice(
    hass: HomeAssistant, entry: MockConfigEntry, allowed: Path
) -> None:
    """A 48 kHz stereo file enrols as well as a 16 kHz one: the two are one voice."""
    import numpy as np

    ada_id, ada = await add_person(hass, "Ada")
    pcm = np.frombuffer(festival_say(SENTENCES[1], "slt"), "<i2")
    wide = np.repeat(np.interp(np.arange(len(pcm) * 3) / 3, np.arange(len(pcm)), pcm), 2)
    stereo = allowed / "stereo.wav"
    import wave

    with wave.open(str(stereo), "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(48000)
        writer.writeframes(wide.astype("<i2").tobytes())
    await call(hass, "enroll_voice", {"person": ada, "audio": [str(stereo)]})
    voices = entry.runtime_data.voices
    heard = await voices.async_hear(festival_say(SENTENCES[2], "slt"))
    other = await voices.async_hear(festival_say(SENTENCES[2], "kal"))

    assert heard.speaker.user_id == ada_id
    assert other.speaker.user_id is None


async def test_forgetting_removes_the_voice_by_action_by_forget_and_with_the_user(
    hass: HomeAssistant, entry: MockConfigEntry, allowed: Path
) -> None:
    """forget_voice, forget for the person, and deleting the HA user each remove the voiceprint."""
    ada_id, ada = await add_person(hass, "Ada")
    files = recordings(allowed, "slt")
    await call(hass, "enroll_voice", {"person": ada, "audio": files})
    assert await call(hass, "forget_voice", {"person": ada}) == {"removed": True}
    assert await call(hass, "forget_voice", {"person": ada}) == {"removed": False}
    await call(hass, "enroll_voice", {"person": ada, "audio": files})
    forgotten = await call(hass, "forget", {"person": ada})
    assert forgotten["voiceprint_removed"] is True
    assert enrolled(entry) == {}
    await call(hass, "enroll_voice", {"person": ada, "audio": files})
    user = await hass.auth.async_get_user(ada_id)
    assert user is not None
    await hass.auth.async_remove_user(user)
    await hass.async_block_till_done()

    assert enrolled(entry) == {}
    assert ada_id not in voiceprints(hass, entry).read_text(encoding="utf-8")


async def test_a_damaged_voiceprint_file_is_moved_aside_with_a_repair_issue(
    hass: HomeAssistant, setup_companion: SetupCompanion
) -> None:
    """The entry loads with no voices; the damaged file is kept beside, named by the issue."""
    entry = await setup_companion(persona())
    path = voiceprints(hass, entry)
    assert await hass.config_entries.async_unload(entry.entry_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"version": 1, "voices": [{"user_id": "x", "voiceprint": "nonsense"', "utf-8")
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()

    assert enrolled(entry) == {}
    moved = [p for p in path.parent.iterdir() if p.name.startswith(f"{path.name}.damaged")]
    assert len(moved) == 1
    issues = [
        i for (d, i) in ir.async_get(hass).issues if d == DOMAIN and i.startswith("voiceprints_")
    ]
    assert len(issues) == 1
    issue = ir.async_get(hass).async_get_issue(DOMAIN, issues[0])
    assert issue is not None
    assert issue.translation_placeholders == {"path": str(path), "moved": str(moved[0])}


async def test_diagnostics_list_who_is_enrolled_but_never_a_voiceprint(
    hass: HomeAssistant, entry: MockConfigEntry, allowed: Path
) -> None:
    """Each voice's user, role and sample count; nothing of the voiceprint itself."""
    ada_id, ada = await add_person(hass, "Ada")
    await call(hass, "enroll_voice", {"person": ada, "audio": recordings(allowed, "slt")})
    stored = json.loads(voiceprints(hass, entry).read_text(encoding="utf-8"))
    diagnostics = await async_get_config_entry_diagnostics(hass, entry)
    voices = diagnostics["voices"]["voices"]
    said = json.dumps(diagnostics)
    [person] = stored["voices"]
    numbers = [repr(x) for sample in person["samples"] for x in sample if abs(x) > 1e-3]

    assert [(v["user_id"], v["role"], v["samples"]) for v in voices] == [(ada_id, "adult", 3)]
    assert set(voices[0]) == {"user_id", "role", "samples", "enrolled_at"}
    assert len(numbers) > 100  # the file holds the voiceprint's numbers, diagnostics none
    assert [n for n in numbers if n in said] == []
    assert "Ada" not in said


async def test_a_missing_speaker_model_leaves_voices_unheard_with_one_repair_issue(
    hass: HomeAssistant, entry: MockConfigEntry, allowed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Emulates an install that lost its weights file: enrolling fails with a clear error,
    what is heard is the household's, and one repair issue says so until the model loads."""
    _ada_id, ada = await add_person(hass, "Ada")
    files = recordings(allowed, "slt")
    monkeypatch.setattr(encoder, "WEIGHTS", allowed / "missing.npz")
    with pytest.raises(HomeAssistantError) as raised:
        await call(hass, "enroll_voice", {"person": ada, "audio": files})
    assert raised.value.translation_key == "voice_model_unavailable"
    voices = entry.runtime_data.voices
    voices.begin_enrolment()
    heard = await voices.async_hear(festival_say(SENTENCES[0], "slt"))
    again = await voices.async_hear(festival_say(SENTENCES[1], "slt"))

    assert heard.speaker.user_id is None
    assert again.speaker.user_id is None
    assert heard.embedding is None
    issues = [i for (d, i) in ir.async_get(hass).issues if d == DOMAIN and i == ISSUE_VOICE_MODEL]
    assert issues == [ISSUE_VOICE_MODEL]
    assert (await async_get_config_entry_diagnostics(hass, entry))["voices"]["encoder"] == "failed"


async def test_the_options_enrol_and_forget_a_voice_with_the_actions_checks(
    hass: HomeAssistant, entry: MockConfigEntry, allowed: Path
) -> None:
    """Options → a person's voice: files enrol; a path HA may not read is a form error; forget."""
    ada_id, ada = await add_person(hass, "Ada")
    outside = write_wav(Path(hass.config.path("outside.wav")), festival_say(SENTENCES[0], "slt"))

    async def voice_step(data: dict[str, object]) -> ConfigFlowResult:
        """Open the options' voice step and submit ``data``."""
        menu = await hass.config_entries.options.async_init(entry.entry_id)
        form = await hass.config_entries.options.async_configure(
            menu["flow_id"], {"next_step_id": "voice"}
        )
        assert form["step_id"] == "voice"
        return await hass.config_entries.options.async_configure(form["flow_id"], data)

    refused = await voice_step({"person": ada, "audio": [str(outside)]})
    assert refused["errors"] == {"base": "enrol_path_not_allowed"}
    done = await voice_step({"person": ada, "role": "adult", "audio": recordings(allowed, "slt")})
    assert (done["type"], done["reason"]) == (FlowResultType.ABORT, "voice_enrolled")
    assert done["description_placeholders"] == {"samples": "3"}
    assert enrolled(entry) == {ada_id: "adult"}
    forgotten = await voice_step({"person": ada, "forget": True})

    assert forgotten["reason"] == "voice_forgotten"
    assert enrolled(entry) == {}
    assert entry.options == {}  # the options themselves are unchanged


async def test_two_companions_hear_with_one_encoder_loaded_once(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    setup_companion: SetupCompanion,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second entry hears with the encoder the first loaded: its weights are in memory once."""
    loads: list[object] = []
    real_load = encoder.SpeakerEncoder.load

    def counted(path: Path | None = None) -> encoder.SpeakerEncoder:
        loads.append(path)
        return real_load(path)

    monkeypatch.setattr(encoder.SpeakerEncoder, "load", staticmethod(counted))
    other = await setup_companion(persona("Other"))
    heard = []
    for companion in (entry, other):
        voices = companion.runtime_data.voices
        voices.begin_enrolment()
        heard.append(await voices.async_hear(festival_say(SENTENCES[0], "slt")))
        voices.end_enrolment()

    assert len(loads) == 1
    first, second = (h.embedding for h in heard)
    assert first is not None
    assert second is not None
    assert first.cosine(second) > 0.999
    for companion in (entry, other):
        diagnostics = await async_get_config_entry_diagnostics(hass, companion)
        assert diagnostics["voices"]["encoder"] == "loaded"
