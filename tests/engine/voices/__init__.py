"""Tests of who speaks: the speaker encoder and the household's voiceprints, on real voices."""
