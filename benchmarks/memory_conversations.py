"""Long multi-session conversations with evidence annotations, read for benchmarks/memory_recall.py.

Two public sets share one layout (LoCoMo's): sessions of dated dialog turns (``dia_id``,
speaker, text, maybe a photo's caption) and questions naming the turns that hold the answer
(``evidence``). Neither is kept in this repository; give the folder that holds the files.

- **REALTALK** (Lee et al., 2025): 10 real messaging-app conversations over 21 days, 8 944
  turns, 728 questions. The repository ``danny911kr/REALTALK`` (``data/Chat_*.json``)
  states no licence; it is published for research with a request to cite the paper.
- **LoCoMo** (Maharana et al., ACL 2024): 10 generated conversations, 5 882 turns, 1 986
  questions; CC BY-NC 4.0. ``data/locomo10.json`` of ``snap-research/locomo``, or the same
  conversations one file each (``data/locomo/Chat_*.json`` of the REALTALK repository).
  Category 5 (adversarial: the answer is not in the conversation) is left out.

Evidence ids that name no turn (a few in REALTALK) are dropped; a question left with none
is skipped. REALTALK writes some evidence as one string of several ids ("D1:11; D3:18"):
those are split. ``fill`` stores every turn as one memory, ``score`` asks every question as one
search and scores its hits against the evidence.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.figures import percentile
from custom_components.companion_agent.engine.memory.models import (
    MemoryQuery,
    MemoryScope,
    MemoryStore,
    NewMemory,
)

_SESSION = re.compile(r"session_(\d+)")
_LOCOMO_TIME = "%I:%M %p on %d %B, %Y"
_REALTALK_TIME = "%d.%m.%Y, %H:%M:%S"


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One dialog turn: its id, session, speaker, what was said, and when."""

    id: str
    session: int
    speaker: str
    text: str
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A question, the turns that answer it, and its category in the dataset."""

    text: str
    evidence: frozenset[str]
    category: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """One conversation between two people: its turns in order and its questions."""

    name: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def asked_at(self) -> datetime:
        """Return when the questions are asked: a day after the last turn."""
        return max(turn.at for turn in self.turns) + timedelta(days=1)


def load_folder(folder: Path) -> list[Conversation]:
    """Read every conversation of ``folder`` (``Chat_*.json`` files, or ``locomo10.json``)."""
    files = sorted(folder.glob("Chat_*.json"), key=_chat_number)
    if files:
        return [_conversation(f.stem, json.loads(f.read_text("utf-8"))) for f in files]
    whole = folder / "locomo10.json"
    if whole.exists():
        samples = json.loads(whole.read_text("utf-8"))
        return [_conversation(str(s.get("sample_id", n)), s) for n, s in enumerate(samples)]
    raise SystemExit(f"{folder} holds neither Chat_*.json nor locomo10.json")


def _chat_number(path: Path) -> int:
    """Return the number of a ``Chat_<n>_…`` file, for a stable order."""
    match = re.match(r"Chat_(\d+)", path.name)
    return int(match.group(1)) if match else 0


def _conversation(name: str, raw: dict[str, object]) -> Conversation:
    """Return one conversation of either layout (REALTALK's top level, LoCoMo's nested)."""
    body = raw.get("conversation")
    sessions = body if isinstance(body, dict) else raw
    locomo = isinstance(body, dict)
    speakers = _speakers(raw, sessions)
    turns: list[Turn] = []
    for key, value in sessions.items():
        match = _SESSION.fullmatch(key)
        if match is None or not isinstance(value, list):
            continue
        number = int(match.group(1))
        started = _time(str(sessions.get(f"{key}_date_time", "")))
        for offset, row in enumerate(value):
            turn = _turn(row, number, started, offset)
            if turn is not None:
                turns.append(turn)
    turns.sort(key=lambda t: (t.session, t.at))
    ids = {turn.id for turn in turns}
    questions: list[Question] = []
    qa = raw.get("qa")
    for row in qa if isinstance(qa, list) else []:
        category = int(row.get("category", 0))
        if locomo and category == 5:
            continue
        named = (part.strip() for e in row.get("evidence", []) for part in str(e).split(";"))
        evidence = frozenset(e for e in named if e in ids)
        if evidence:
            questions.append(
                Question(text=str(row["question"]), evidence=evidence, category=category)
            )
    return Conversation(
        name=name, speakers=speakers, turns=tuple(turns), questions=tuple(questions)
    )


def _speakers(raw: dict[str, object], sessions: dict[str, object]) -> tuple[str, str]:
    """Return the two speakers' names."""
    names = raw.get("name")
    if isinstance(names, dict):
        return str(names.get("speaker_1", "")), str(names.get("speaker_2", ""))
    return str(sessions.get("speaker_a", "")), str(sessions.get("speaker_b", ""))


def _turn(row: object, session: int, started: datetime, offset: int) -> Turn | None:
    """Return one turn (a photo's caption joins its text), or None when it says nothing."""
    if not isinstance(row, dict):
        return None
    text = str(row.get("clean_text") or row.get("text") or "").strip()
    caption = str(row.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} (shares a photo: {caption})".strip()
    if not text or "dia_id" not in row:
        return None
    stamp = row.get("date_time")
    at = _time(str(stamp)) if stamp else started + timedelta(seconds=30 * offset)
    return Turn(
        id=str(row["dia_id"]),
        session=session,
        speaker=str(row.get("speaker", "")),
        text=text,
        at=at,
    )


def _time(text: str) -> datetime:
    """Return a session's or turn's time in either layout (UTC); the epoch when unreadable."""
    for layout in (_REALTALK_TIME, _LOCOMO_TIME):
        try:
            return datetime.strptime(text.strip(), layout).replace(tzinfo=UTC)
        except ValueError:
            continue
    return datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """Recall of one configuration over a set of questions."""

    at5: float
    at10: float
    mrr: float
    questions: int
    p95_ms: float


def memories(conversation: Conversation, scope: MemoryScope | None = None) -> list[NewMemory]:
    """Return a conversation's turns as memories of ``scope`` (else of its own persona)."""
    scope = scope or MemoryScope(agent_id=conversation.name, environment="benchmark")
    return [
        NewMemory(
            scope=scope,
            text=turn.text,
            source=f"{conversation.name}:session-{turn.session}",
            at=turn.at,
            names=(turn.speaker,),
        )
        for turn in conversation.turns
    ]


async def fill(store: MemoryStore, conversations: Sequence[Conversation]) -> dict[str, str]:
    """Add every turn; return the dataset's turn id of each record id."""
    ids: dict[str, str] = {}
    for conversation in conversations:
        batch = memories(conversation)
        for start in range(0, len(batch), 250):
            part = batch[start : start + 250]
            stored = await store.add(part)
            turns = conversation.turns[start : start + 250]
            ids.update({r.id: t.id for r, t in zip(stored, turns, strict=True)})
    return ids


async def score(
    store: MemoryStore, conversations: Sequence[Conversation], ids: dict[str, str]
) -> Figures:
    """Ask every question of its conversation; return recall@5, @10, MRR@10."""
    at5 = at10 = mrr = 0.0
    count = 0
    samples: list[float] = []
    for conversation in conversations:
        scope = MemoryScope(agent_id=conversation.name, environment="benchmark")
        for question in conversation.questions:
            query = MemoryQuery(
                text=question.text,
                scopes=(scope,),
                limit=10,
                kinds=frozenset({"detail"}),
                asked_at=conversation.asked_at,
            )
            started = time.perf_counter()
            hits = await store.search(query)
            samples.append((time.perf_counter() - started) * 1000)
            found = [ids.get(hit.record.id, "") for hit in hits]
            evidence = question.evidence
            at5 += len(evidence & set(found[:5])) / len(evidence)
            at10 += len(evidence & set(found[:10])) / len(evidence)
            first = next((n for n, turn in enumerate(found[:10], 1) if turn in evidence), None)
            mrr += 1 / first if first else 0.0
            count += 1
    count = max(count, 1)
    return Figures(
        at5=at5 / count,
        at10=at10 / count,
        mrr=mrr / count,
        questions=count,
        p95_ms=percentile(samples, 95) if len(samples) > 1 else 0.0,
    )
