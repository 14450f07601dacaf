"""Reading a TTS server's info tolerantly: missing or odd fields never break describe."""

from custom_components.companion_agent.engine.speech import TtsInfo, TtsVoice
from custom_components.companion_agent.engine.speech.info import parse_tts_info


def test_a_server_that_omits_fields_still_describes() -> None:
    info = parse_tts_info({"tts": [{"voices": [{"name": "bare"}]}]})

    assert info == TtsInfo(programs=("",), voices=(TtsVoice(name="bare"),))
    assert info.supports_streaming is False


def test_malformed_entries_are_skipped_and_the_rest_kept() -> None:
    info = parse_tts_info(
        {
            "tts": [
                "not a program",
                {
                    "name": "multi",
                    "supports_synthesize_streaming": "yes",  # not a bool: not streaming
                    "voices": [
                        {"languages": ["en"]},  # no name
                        {
                            "name": "pair",
                            "languages": ["en_GB", 7],
                            "speakers": [{"name": "a"}, {"id": 2}, "b"],
                            "description": None,
                        },
                    ],
                },
                {"name": "streamer", "voices": None, "supports_synthesize_streaming": True},
            ],
            "asr": [{"name": "not ours"}],
        }
    )

    assert info.programs == ("multi", "streamer")
    assert info.voices == (TtsVoice(name="pair", languages=("en_GB",), speakers=("a",)),)
    assert info.voice("pair") is info.voices[0]
    assert info.voice("bare") is None
    assert info.supports_streaming is True


def test_no_tts_at_all_is_an_empty_description() -> None:
    assert parse_tts_info({}) == TtsInfo()
    assert parse_tts_info({"tts": "piper"}) == TtsInfo()
