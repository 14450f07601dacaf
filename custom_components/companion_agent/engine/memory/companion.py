"""``CompanionMemory``: the three tiers and the outbox around one store, for one host.

- Tier 1: ``window(scope)`` is the rolling window a turn uses as its history (a view of
  the exchange store the turns are written to).
- Tier 2: turns that overflow the window, and idle windows, become summaries.
- Tier 3: ``before_turn`` reads conclusions, details and the graph within the retrieval
  budget; ``after_turn`` puts the exchange in the durable outbox, whose worker extracts
  and writes its memories. A lasting instruction in the person's words is written as a
  conclusion before the turn goes on (or queued on disk when the store does not answer).

Forget wins: ``forget`` (``forgetting``) keeps a tombstone every later write checks, and
deletes what it names everywhere, so nothing said before it comes back.

Counters (retrieval misses, bad answers, summaries, refused writes) are figures, never
content.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ..errors import MemoryInputError
from ..turn.exchanges import ExchangeStore
from .forgetting import forget_everywhere
from .instructions import lasting_instruction
from .models import (
    Forget,
    GraphStore,
    MemoryKind,
    MemoryRecord,
    MemoryScope,
    MemoryStore,
    NewMemory,
)
from .outbox.outbox import MemoryOutbox
from .outbox.payloads import exchange_entry, screen_entry
from .outbox.tombstones import ForgetLedger
from .outbox.writes import AnswersFor, MemoryWriter
from .provenance import Provenance
from .reads import CALL_TIMEOUT, MemoryReads
from .retrieval.retrieval import DEFAULT_BUDGET, RetrievalCounters, render, retrieve
from .tiers.extraction import clean_memory
from .tiers.summaries import IDLE_AFTER, SessionSummaries
from .tiers.window import RecentWindow

LOGGER = logging.getLogger(__name__)

WRITE_TIMEOUT = 1.0
MAX_NAMES = 200
MAX_NAMED_SCOPES = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySettings:
    """How memory behaves: its environment, its budgets and when a window counts as idle."""

    environment: str = "production"
    retrieval_budget: float = DEFAULT_BUDGET
    window_tokens: int = 3000
    idle_after: float = IDLE_AFTER
    write_timeout: float = WRITE_TIMEOUT


class CompanionMemory(MemoryReads):
    """Every persona's memory on one store, with its windows, outbox and summaries."""

    def __init__(
        self,
        store: MemoryStore,
        outbox: MemoryOutbox,
        *,
        exchanges: ExchangeStore,
        answers_for: AnswersFor,
        summaries_for: AnswersFor | None = None,
        graph: GraphStore | None = None,
        settings: MemorySettings | None = None,
    ) -> None:
        """Use ``store`` (and ``graph``); windows are views of ``exchanges``, summarised by
        ``summaries_for`` (else ``answers_for``)."""
        self.store = store
        self.graph = graph
        self.outbox = outbox
        self.exchanges = exchanges
        self.settings = settings or MemorySettings()
        self.environment = self.settings.environment
        self.retrieval = RetrievalCounters()
        self.ledger = ForgetLedger()
        self._summaries_for = summaries_for or answers_for
        self._names: OrderedDict[MemoryScope, list[str]] = OrderedDict()
        self._writes: set[asyncio.Task[None]] = set()
        self._open_turns = 0
        self._no_open_turns = asyncio.Event()
        self._no_open_turns.set()
        outbox.use_screen(screen_entry)
        self.writer = MemoryWriter(
            store, graph, answers_for, ledger=self.ledger, on_names=self._seen_names,
            queue=outbox.put,
        )  # fmt: skip
        self.summaries = SessionSummaries(self.writer.queue, idle_after=self.settings.idle_after)

    async def start(self, *, drain: bool = True) -> None:
        """Read the tombstones kept on disk, then drain the outbox (what a restart left too)."""
        for tombstone in await self.outbox.tombstones():
            self.ledger.add(tombstone)
        if drain:
            self.outbox.start(self.writer.process, self.store.count)

    def scope(self, agent_id: str, user_id: str | None) -> MemoryScope:
        """Return the scope a turn of ``agent_id`` for ``user_id`` writes to."""
        return MemoryScope.for_turn(agent_id, user_id, self.settings.environment)

    def window(self, scope: MemoryScope, model: str | None = None) -> RecentWindow:
        """Return the rolling window of ``scope``; what overflows it gets summarised."""
        answers = self._summaries_for(model)
        return RecentWindow(
            self.exchanges,
            scope,
            budget=self.settings.window_tokens,
            on_overflow=lambda s, turns: self.summaries.overflowed(s, turns, answers),
        )

    async def before_turn(
        self,
        scope: MemoryScope,
        text: str,
        *,
        began: datetime | None = None,
        provenance: Provenance | None = None,
    ) -> str | None:
        """Write a lasting instruction, then return what the turn may know, as quoted data.

        The instruction is dated ``began`` (when the person spoke; now if not given). The
        turn counts as open until its ``after_turn`` (so ``settle`` waits for it).
        """
        began = began or datetime.now(UTC)
        provenance = provenance or Provenance()
        self._open_turns += 1
        self._no_open_turns.clear()
        found, _ = await asyncio.gather(
            retrieve(
                self.store,
                self.graph,
                scope,
                text,
                budget=self.settings.retrieval_budget,
                known_names=self._names.get(scope, ()),
                counters=self.retrieval,
            ),
            self._instruction(scope, text, began, replace(provenance, via="instruction")),
        )
        return render(found)

    async def after_turn(
        self,
        scope: MemoryScope,
        user_text: str,
        said: str,
        *,
        source: str,
        model: str | None,
        began: datetime | None = None,
        provenance: Provenance | None = None,
    ) -> None:
        """Queue the exchange (dated ``began``, when the person spoke); restart the idle timer."""
        try:
            if not user_text.strip():
                return
            origin = replace(provenance or Provenance(), via="turn")
            at = began or datetime.now(UTC)
            entry = exchange_entry(
                scope, user_text, said, source=source, model=model, at=at, provenance=origin
            )
            await self.outbox.put("exchange", entry)
            answers = self._summaries_for(model)
            self.summaries.went_on(scope, lambda s: self.window(s, model).turns(), answers)
        finally:
            self._open_turns = max(0, self._open_turns - 1)
            if not self._open_turns:
                self._no_open_turns.set()

    async def remember(
        self,
        scope: MemoryScope,
        text: str,
        *,
        topic: str | None = None,
        source: str = "service",
        provenance: Provenance | None = None,
    ) -> MemoryRecord | None:
        """Store a memory now (a conclusion when ``topic`` is given); None: it was queued.

        The call is its statement (a new id, unless ``provenance`` names one).

        A memory the store refuses as input (``MemoryInputError``: empty text, a bad topic)
        raises; one it cannot take now is queued (a tombstone refuses one said before a
        forget: None too).
        """
        kind: MemoryKind = "state" if topic else "detail"
        origin = provenance or Provenance(via="service")
        memory = NewMemory(
            scope=scope, text=clean_memory(text), kind=kind, topic=topic, source=source,
            at=datetime.now(UTC),
            provenance=replace(origin, statement=origin.statement or uuid.uuid4().hex),
        )  # fmt: skip
        return await self.writer.write_or_queue(memory, CALL_TIMEOUT)

    async def forget(self, what: Forget) -> int:
        """Forget what ``what`` names, everywhere, and refuse anything older ever after.

        Return how many records (and graph relations) went (see ``forgetting``).
        """
        return await forget_everywhere(self, what, self._names)

    async def figures(self) -> dict[str, object]:
        """Return counts for diagnostics: records, outbox, retrieval misses; no content."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                records: dict[str, int] | str = await self.store.count()
        except Exception as err:
            records = f"unavailable: {type(err).__name__}"
        return {
            "records": records,
            "outbox": await self.outbox.figures(),
            "retrieval": self.retrieval.snapshot(),
            "bad_answers": self.writer.bad_answers,
            "refused_writes": self.writer.refused,
            "tombstones": len(self.ledger),
            "summaries": {"made": self.summaries.made, "failed": self.summaries.failed},
        }

    async def settle(self, grace: float) -> bool:
        """Wait up to ``grace`` s for open turns, writes, summaries and the outbox to finish."""
        try:
            async with asyncio.timeout(grace):
                await self._no_open_turns.wait()
                if self._writes:
                    await asyncio.gather(*self._writes, return_exceptions=True)
                await self.summaries.settled()
        except TimeoutError:
            return False
        return await self.outbox.drained(grace)

    async def close(self, grace: float = 5.0) -> None:
        """Let queued writes drain for ``grace`` seconds, then release everything."""
        try:
            await self.summaries.close(grace / 2)
            if self._writes:
                await asyncio.wait(self._writes, timeout=grace / 2)
            await self.outbox.close(grace / 2)
        finally:  # even when cancelled: the threads and connections must go
            await self.outbox.close()
            await self.store.close()
            if self.graph is not None:
                await self.graph.close()

    async def _instruction(
        self, scope: MemoryScope, text: str, began: datetime, provenance: Provenance
    ) -> None:
        """Write a lasting instruction as a conclusion, waiting at most the write timeout."""
        found = lasting_instruction(text)
        if found is None:
            return
        memory = NewMemory(
            scope=scope, text=clean_memory(found.text), kind="state", topic=found.topic,
            source=provenance.conversation or "", at=began, provenance=provenance,
        )  # fmt: skip
        task = asyncio.create_task(self._write_state(memory), name="memory instruction")
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        await asyncio.wait([task], timeout=self.settings.write_timeout + 0.5)

    async def _write_state(self, memory: NewMemory) -> None:
        """Supersede now; when the store does not answer in time, queue it on disk."""
        try:
            await self.writer.write_or_queue(memory, self.settings.write_timeout)
        except MemoryInputError as err:
            LOGGER.warning("Memory store refused an instruction: %s", err)

    def _seen_names(self, scope: MemoryScope, names: tuple[str, ...]) -> None:
        """Remember entity names extraction found, to look for them in later turns."""
        known = self._names.pop(scope, [])
        known = list(dict.fromkeys([*names, *known]))[:MAX_NAMES]
        self._names[scope] = known
        while len(self._names) > MAX_NAMED_SCOPES:
            self._names.popitem(last=False)
