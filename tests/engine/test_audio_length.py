"""How much of an answer could have been heard: the estimate, the exact length, CJK."""

from __future__ import annotations

from custom_components.companion_agent.engine.speech import SentenceMarks
from custom_components.companion_agent.engine.speech.audio_length import (
    AudioProgress,
    heard_sentences,
    sentences_heard,
    spoken_seconds,
)
from custom_components.companion_agent.engine.speech.synthesizer import AudioChunk

SENTENCES = ["It is sunny.", "Take a hat.", "And bring some water for the long walk."]


def test_chinese_characters_take_longer_than_letters() -> None:
    """Four CJK characters a second, fifteen letters a second."""
    assert spoken_seconds("明天下雨") == 1.0
    assert spoken_seconds("a" * 15) == 1.0


def test_without_a_length_only_less_than_the_fastest_voice_is_a_barge_in() -> None:
    """Half the calm estimate is the fastest voice: before it, the sentences that had begun."""
    fastest = sum(spoken_seconds(s) for s in SENTENCES) / 2
    assert heard_sentences(SENTENCES, fastest, None) is None
    assert heard_sentences(SENTENCES, fastest - 0.01, None) == 3
    assert heard_sentences(SENTENCES, 0.5, None) == 2
    assert heard_sentences(SENTENCES, 0.0, None) == 1  # the first one had begun
    assert heard_sentences(SENTENCES, -1.0, None) == 0  # clocks that disagree: nothing
    assert heard_sentences([], 0.0, None) is None


def test_an_exact_length_places_the_sentences_on_it() -> None:
    """Ten seconds of audio: three seconds in is the second sentence; 9.5 s is the end."""
    assert heard_sentences(SENTENCES, 3.0, 10.0) == 2
    assert heard_sentences(SENTENCES, 9.5, 10.0) is None
    assert heard_sentences(["你好。", "明天见。"], 1.0, 4.0) == 1


def chunk(sentence: int, seconds: float) -> AudioChunk:
    """Return ``seconds`` of 16 kHz 16-bit mono audio of sentence number ``sentence``."""
    return AudioChunk(
        sentence=sentence, rate=16000, width=2, channels=1, audio=bytes(round(seconds * 32000))
    )


def test_the_voices_marks_say_where_each_sentence_begins() -> None:
    """Chunks in order: a sentence begins where the audio before it ends."""
    marks = SentenceMarks()
    for sentence, seconds in ((0, 0.5), (0, 0.5), (1, 2.0), (2, 0.25)):
        marks.add(chunk(sentence, seconds))
    assert marks.starts == [0.0, 1.0, 3.0]


def test_a_device_that_knows_the_seconds_played_keeps_the_sentences_begun() -> None:
    """Marked: exact; none played: nothing; all of a complete answer played: all."""
    starts = (0.0, 1.0, 3.0)
    assert sentences_heard(SENTENCES, AudioProgress(played=2.0, length=4.0, starts=starts)) == 2
    assert sentences_heard(SENTENCES, AudioProgress(played=3.0, starts=starts)) == 3
    assert sentences_heard(SENTENCES, AudioProgress(played=0.0, starts=starts)) == 0
    done = AudioProgress(played=3.8, length=4.0, complete=True, starts=starts)
    assert sentences_heard(SENTENCES, done) is None
    # Not marked (another voice): estimated as before, on the length once all was made.
    unmarked = AudioProgress(played=0.5, length=4.0)
    assert sentences_heard(SENTENCES, unmarked) == heard_sentences(SENTENCES, 0.5, None)
