"""The encoder and the test voices' embeddings, made once per session for the voice tests."""

from __future__ import annotations

import pytest

from custom_components.companion_agent.engine.voices import SpeakerEncoder
from tests.support.voices import Voices, pcm_of, speakers, utterances


@pytest.fixture(scope="session")
def encoder() -> SpeakerEncoder:
    """Return the encoder over the shipped weights."""
    return SpeakerEncoder.load()


@pytest.fixture(scope="session")
def voices(encoder: SpeakerEncoder) -> Voices:
    """Return each test voice's utterances' embeddings (kal, slt, joe, krb), in order."""
    wanted = ("kal", "slt", "joe", "krb")
    found = speakers()
    assert set(wanted) <= set(found), found
    embedded: Voices = {}
    for speaker in wanted:
        embeddings = []
        for path in utterances(speaker):
            pcm, rate = pcm_of(path)
            embedding = encoder.embed(pcm, rate=rate)
            assert embedding is not None, path
            embeddings.append(embedding)
        embedded[speaker] = embeddings
    return embedded
