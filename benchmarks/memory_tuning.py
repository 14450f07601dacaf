"""Choose the search's weights on a held-out split: ``memory_recall.py --part tune``.

One store holds the dev conversations (REALTALK 1–5); each weight of ``SearchSettings``
is varied in turn from the product's defaults, every variant asked every dev question,
and the figures printed best first. The product's defaults were read off this table; the
held-out conversations (6–10) and LoCoMo are never used to choose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path

from benchmarks.memory_conversations import Conversation, fill, score
from custom_components.companion_agent.engine.memory.embeddings import Embedder
from custom_components.companion_agent.engine.memory.stores.sqlite.store import (
    EmbeddedStore,
    SearchSettings,
)

VALUES: dict[str, tuple[float | bool, ...]] = {
    "candidates": (30, 60, 100),
    "rrf_k": (10, 30, 60, 120),
    "vectors": (0.7, 1.0, 1.3),
    "context_vectors": (0.0, 0.5, 0.7, 1.0, 1.5),
    "hubness": (0.0, 0.2, 0.35, 0.5),
    "about": (0.0, 0.25, 0.5, 1.0),
    "about_vectors": (0.0, 1.0, 1.5, 2.0, 3.0),
    "names": (0.0, 1.0, 2.0, 3.0),
    "time": (0.0, 1.0),
    "neighbours": (0.0, 0.1),
    "context": (0.0, 0.3, 0.5),
    "common_words": (False, True),
}


async def tune(dev: Sequence[Conversation], folder: Path, embedder: Embedder) -> None:
    """Print recall on ``dev`` for each one-weight change from the defaults."""
    path = folder / "tune.db"
    filler = await EmbeddedStore.create(path, embedder=embedder, backfill=False)
    ids = await fill(filler, dev)
    await filler.close()
    base = SearchSettings()
    names = {f.name for f in fields(SearchSettings)}
    rows: list[tuple[float, float, float, str]] = []
    for name, values in VALUES.items():
        assert name in names
        for value in values:
            settings = replace(base, **{name: value})  # type: ignore[arg-type]
            store = await EmbeddedStore.create(
                path, embedder=embedder, query_timeout=60.0, search=settings, backfill=False
            )
            result = await score(store, dev, ids)
            await store.close()
            rows.append((result.at10, result.at5, result.mrr, f"{name}={value}"))
            print(
                f"{name}={value}: R@5 {result.at5:.3f} R@10 {result.at10:.3f} MRR {result.mrr:.3f}"
            )
    print("best first:")
    for at10, at5, mrr, label in sorted(rows, reverse=True)[:10]:
        print(f"  {label:>22}: R@10 {at10:.3f} R@5 {at5:.3f} MRR {mrr:.3f}")
