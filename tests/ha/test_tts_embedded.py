"""Embedded Piper through a real HA: the flow, clean sentences, cancel, bad voice files.

piper-tts and the CC0 joe voice are real; the only fake is HA's requirement installer
failing (it cannot fail for real here), in the tests named ``fake_installer``.
"""

from pathlib import Path
from unittest.mock import patch

import pytest
from homeassistant import config_entries
from homeassistant.components.tts.const import DATA_COMPONENT
from homeassistant.components.tts.entity import TTSAudioRequest
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import issue_registry as ir
from homeassistant.requirements import RequirementsNotFound
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import (
    CONF_ENGINE,
    CONF_LANGUAGES,
    CONF_VOICE,
    DOMAIN,
    ENGINE_EMBEDDED,
    PIPER_REQUIREMENT,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.engine.speech import LoadedPiperVoice
from custom_components.companion_agent.tts import SAMPLE_OPTIONS, CompanionTtsEntity
from tests.ha.common import SetupCompanion, choose, embedded_voice, tts_entity
from tests.ha.common.audio import CLEAN, MESSY, STREAMING_FRAMES, chunks, stream, wav_format
from tests.support.piper_voice import JOE, JOE_DATA, install_voice

OTHER = "en_US-other-medium"  # the joe voice under a second name
INSTALLER = "custom_components.companion_agent.voice.embedded_piper.async_process_requirements"

type Heard = list[tuple[LoadedPiperVoice, str]]


@pytest.fixture
def folder(hass: HomeAssistant) -> Path:
    """Return the voices folder of the test's HA config (not created yet)."""
    return Path(hass.config.path("companion_agent", "voices"))


@pytest.fixture
def voices(folder: Path) -> Path:
    """Put the joe voice in the voices folder."""
    install_voice(folder)
    return folder


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> Heard:
    """Record every sentence handed to a loaded Piper voice (the real one still speaks)."""
    texts: Heard = []
    real = LoadedPiperVoice.speak

    async def speak(self: LoadedPiperVoice, text: str, speaker: str | None = None) -> bytes:
        texts.append((self, text))
        return await real(self, text, speaker)

    monkeypatch.setattr(LoadedPiperVoice, "speak", speak)
    return texts


def install_broken_voice(folder: Path, name: str) -> None:
    """Put a voice in ``folder`` whose model is not an ONNX model (its config is fine)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.onnx").write_bytes(b"this is no onnx model")
    (folder / f"{name}.onnx.json").write_bytes((JOE_DATA / f"{JOE}.onnx.json").read_bytes())


async def setup_embedded(
    hass: HomeAssistant, setup_companion: SetupCompanion, voice: str = JOE
) -> CompanionTtsEntity:
    """Set up an entry whose only sub-entry is an embedded voice; return its entity."""
    entry = await setup_companion(embedded_voice(voice))
    await hass.async_block_till_done(wait_background_tasks=True)  # the voice is loaded
    return tts_entity(hass, entry)


async def start_embedded_flow(hass: HomeAssistant, entry: MockConfigEntry) -> dict[str, object]:
    """Start adding a voice and pick embedded Piper; return the step that follows."""
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_TTS), context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.MENU
    assert "embedded" in result["menu_options"]
    return dict(await choose(hass, result, "embedded"))


async def test_the_flow_offers_embedded_piper_and_lists_the_folder_voices(
    hass: HomeAssistant, setup_entry: MockConfigEntry, voices: Path, heard: Heard
) -> None:
    install_voice(voices, OTHER)
    result = await start_embedded_flow(hass, setup_entry)
    assert result["step_id"] == "voice"
    options = result["data_schema"].schema[CONF_VOICE].config["options"]  # type: ignore[attr-defined]
    assert [option["value"] for option in options] == [JOE, OTHER]

    result = dict(
        await hass.config_entries.subentries.async_configure(
            str(result["flow_id"]), {CONF_VOICE: JOE}
        )
    )

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == f"{JOE} (embedded)"
    assert result["data"] == {
        CONF_ENGINE: ENGINE_EMBEDDED,
        CONF_VOICE: JOE,
        CONF_LANGUAGES: ["en_US"],
    }
    await hass.async_block_till_done(wait_background_tasks=True)
    (entity_id,) = hass.states.async_entity_ids("tts")
    entity = hass.data[DATA_COMPONENT].get_entity(entity_id)
    assert isinstance(entity, CompanionTtsEntity)
    assert await stream(entity, "Hello there.")
    assert [(voice.name, text) for voice, text in heard] == [(JOE, "Hello there.")]


async def test_an_empty_folder_says_where_to_put_voices_and_looks_again(
    hass: HomeAssistant, setup_entry: MockConfigEntry, folder: Path
) -> None:
    result = await start_embedded_flow(hass, setup_entry)

    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "embedded"
    assert result["errors"] == {"base": "no_voice_files"}
    assert result["description_placeholders"] == {"folder": str(folder)}
    assert await hass.async_add_executor_job(folder.is_dir)  # made, so one can find it

    install_voice(folder)
    result = dict(await hass.config_entries.subentries.async_configure(str(result["flow_id"]), {}))
    assert result["step_id"] == "voice"


async def test_a_corrupt_voice_file_is_a_flow_error(
    hass: HomeAssistant, setup_entry: MockConfigEntry, folder: Path
) -> None:
    install_broken_voice(folder, "en_US-broken-medium")
    result = await start_embedded_flow(hass, setup_entry)

    result = dict(
        await hass.config_entries.subentries.async_configure(
            str(result["flow_id"]), {CONF_VOICE: "en_US-broken-medium"}
        )
    )

    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "voice"
    assert result["errors"] == {"base": "voice_file_invalid"}


async def test_fake_installer_failure_aborts_the_flow_and_points_to_wyoming(
    hass: HomeAssistant, setup_entry: MockConfigEntry, voices: Path
) -> None:
    with patch(INSTALLER, side_effect=RequirementsNotFound(DOMAIN, [PIPER_REQUIREMENT])) as install:
        result = await start_embedded_flow(hass, setup_entry)

    install.assert_awaited_once_with(hass, DOMAIN, [PIPER_REQUIREMENT])
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "piper_unavailable"
    assert result["description_placeholders"] == {"requirement": PIPER_REQUIREMENT}


async def test_fake_installer_failure_makes_the_entity_say_piper_is_unavailable(
    hass: HomeAssistant, setup_companion: SetupCompanion, voices: Path
) -> None:
    with patch(INSTALLER, side_effect=RequirementsNotFound(DOMAIN, [PIPER_REQUIREMENT])):
        entity = await setup_embedded(hass, setup_companion)
        with pytest.raises(HomeAssistantError) as raised:
            await stream(entity, "Hello there.")

    assert raised.value.translation_key == "tts_piper_unavailable"


async def test_streamed_text_reaches_embedded_piper_as_clean_sentences(
    hass: HomeAssistant, setup_companion: SetupCompanion, voices: Path, heard: Heard
) -> None:
    entity = await setup_embedded(hass, setup_companion)

    parts = await stream(entity, MESSY)

    assert wav_format(parts[0]) == (22050, 2, 1, STREAMING_FRAMES)  # streaming: no length
    assert len(parts[0]) == 44
    assert sum(len(part) for part in parts[1:]) > 22050
    assert [text for _, text in heard] == CLEAN
    assert len({id(voice) for voice, _ in heard}) == 1  # loaded once, reused


async def test_the_whole_message_makes_one_wav_with_embedded_piper(
    hass: HomeAssistant, setup_companion: SetupCompanion, voices: Path, heard: Heard
) -> None:
    entity = await setup_embedded(hass, setup_companion)

    extension, data = await entity.async_get_tts_audio(MESSY, "en_US", {})

    assert extension == "wav"
    assert data is not None
    rate, width, channels, frames = wav_format(data)
    assert (rate, width, channels) == (22050, 2, 1)
    assert len(data) == 44 + frames * width
    assert [text for _, text in heard] == CLEAN


async def test_a_cancelled_stream_hands_embedded_piper_nothing_more(
    hass: HomeAssistant, setup_companion: SetupCompanion, voices: Path, heard: Heard
) -> None:
    entity = await setup_embedded(hass, setup_companion)
    response = await entity.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={}, message_gen=chunks(MESSY))
    )
    data = response.data_gen
    assert len(await anext(data)) == 44
    await anext(data)  # the first sentence's audio
    await data.aclose()

    assert [text for _, text in heard] == CLEAN[:1]
    voice = heard[0][0]
    assert await voice.wait_idle()
    assert not voice.busy


async def test_a_missing_voice_file_raises_a_repair_issue_until_it_is_back(
    hass: HomeAssistant, setup_companion: SetupCompanion, folder: Path
) -> None:
    entity = await setup_embedded(hass, setup_companion, OTHER)
    issue_id = f"tts_voice_{entity.subentry.subentry_id}"
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None  # found at setup

    with pytest.raises(HomeAssistantError) as raised:
        await stream(entity, "Hello there.")

    model = str(folder / f"{OTHER}.onnx")
    assert raised.value.translation_key == "tts_voice_file"
    assert raised.value.translation_placeholders == {"voice": OTHER, "path": model}
    issue = ir.async_get(hass).async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    assert issue.translation_key == "tts_voice_file"
    assert issue.translation_placeholders == {"voice": OTHER, "path": model}

    install_voice(folder, OTHER)
    assert await stream(entity, "Hello there.")
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


async def test_a_request_may_pick_another_folder_voice(
    hass: HomeAssistant, setup_companion: SetupCompanion, voices: Path, heard: Heard
) -> None:
    install_voice(voices, OTHER)
    entity = await setup_embedded(hass, setup_companion)
    assert entity.supported_options == ["voice", "speaker", "preferred_format", *SAMPLE_OPTIONS]
    offered = entity.async_get_supported_voices("en_US")
    assert offered is not None
    assert [voice.voice_id for voice in offered] == [JOE, OTHER]

    response = await entity.async_stream_tts_audio(
        TTSAudioRequest(language="en_US", options={"voice": OTHER}, message_gen=chunks("Hi there."))
    )
    assert [part async for part in response.data_gen]
    assert [(voice.name, text) for voice, text in heard] == [(OTHER, "Hi there.")]

    with pytest.raises(ServiceValidationError) as raised:
        await entity.async_get_tts_audio("Hi.", "en_US", {"voice": "en_US-nobody-low"})
    assert raised.value.translation_key == "tts_voice_unknown"
    assert raised.value.translation_placeholders == {
        "voice": "en_US-nobody-low",
        "voices": f"{JOE}, {OTHER}",
    }
