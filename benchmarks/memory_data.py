"""The recall question set (benchmarks/data/memory_recall.json), read into typed records."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from custom_components.companion_agent.engine.memory import HOUSEHOLD
from custom_components.companion_agent.engine.memory.models import MemoryScope, NewMemory

DATA = Path(__file__).resolve().parent / "data" / "memory_recall.json"
AGENT = "nova"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    """One thing told in one session; a fact with a topic supersedes that topic's earlier one."""

    id: str
    owner: str
    session: int
    text: str
    topic: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A paraphrased question, the facts that answer it, and superseded ones that must not."""

    owner: str
    text: str
    expect: frozenset[str]
    stale: frozenset[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """Facts, questions and the templates fillers are made from."""

    facts: tuple[Fact, ...]
    questions: tuple[Question, ...]
    templates: dict[str, dict[str, list[str]]]

    def fillers(self, count: int, seed: int = 7) -> list[NewMemory]:
        """Return ``count`` generated everyday memories (3 English : 2 Chinese), any scope."""
        rng = random.Random(seed)
        out: list[NewMemory] = []
        for n in range(count):
            lang = "en" if n % 5 < 3 else "zh"
            parts = self.templates[lang]
            subject, verb, obj, when = (
                rng.choice(parts[key]) for key in ("subjects", "verbs", "objects", "times")
            )
            text = (
                f"{subject} {verb} {obj} {when}" if lang == "en" else f"{subject}{when}{verb}{obj}"
            )
            owner = rng.choice(["anna", "ben", HOUSEHOLD])
            out.append(NewMemory(scope=scope_of(owner), text=text, source="filler"))
        return out


def scope_of(owner: str) -> MemoryScope:
    """Return the scope of a dataset owner (a person's name or ``household``)."""
    return MemoryScope.for_turn(AGENT, None if owner == HOUSEHOLD else owner)


def load(path: Path = DATA) -> Dataset:
    """Read the question set."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    facts = tuple(
        Fact(
            id=str(m["id"]),
            owner=str(m["owner"]),
            session=int(m["session"]),
            text=str(m["text"]),
            topic=None if m.get("topic") is None else str(m["topic"]),
        )
        for m in raw["memories"]
    )
    questions = tuple(
        Question(
            owner=str(q["owner"]),
            text=str(q["text"]),
            expect=frozenset(map(str, q["expect"])),
            stale=frozenset(map(str, q["stale"])),
        )
        for q in raw["questions"]
    )
    templates = {
        lang: {key: [str(word) for word in words] for key, words in parts.items()}
        for lang, parts in raw["fillers"].items()
    }
    return Dataset(facts=facts, questions=questions, templates=templates)
