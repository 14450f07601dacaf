"""``CompanionMemory``: the three tiers and the outbox around one store, for one host.

- Tier 1: ``window(scope)`` is the rolling window a turn uses as its history.
- Tier 2: turns that overflow the window, and idle windows, become summaries.
- Tier 3: ``before_turn`` reads conclusions, details and the graph within the retrieval
  budget; ``after_turn`` puts the exchange in the durable outbox, whose worker extracts
  and writes its memories. A lasting instruction in the person's words is written as a
  conclusion before the turn goes on (or queued on disk when the store does not answer).

Counters (retrieval misses, bad answers, summaries) are figures, never content.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import MemoryInputError
from .extraction import clean_memory
from .instructions import lasting_instruction
from .outbox import MemoryOutbox
from .retrieval import DEFAULT_BUDGET, RetrievalCounters, render, retrieve
from .summaries import IDLE_AFTER, SessionSummaries
from .types import (
    Forget,
    GraphStore,
    MemoryKind,
    MemoryRecord,
    MemoryScope,
    MemoryStore,
    NewMemory,
)
from .window import RecentWindow, WindowFiles, forget_windows
from .writes import AnswersFor, MemoryWriter, dump_memory, exchange_entry, forgotten_by

LOGGER = logging.getLogger(__name__)

WRITE_TIMEOUT = 1.0
CALL_TIMEOUT = 10.0
MAX_NAMES = 200
MAX_NAMED_SCOPES = 64
MAX_PERSONAS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySettings:
    """How memory behaves: its environment, its budgets and when a window counts as idle."""

    environment: str = "production"
    retrieval_budget: float = DEFAULT_BUDGET
    window_tokens: int = 3000
    idle_after: float = IDLE_AFTER
    write_timeout: float = WRITE_TIMEOUT


class CompanionMemory:
    """Every persona's memory on one store, with its windows, outbox and summaries."""

    def __init__(
        self,
        store: MemoryStore,
        outbox: MemoryOutbox,
        *,
        windows: Path,
        answers_for: AnswersFor,
        summaries_for: AnswersFor | None = None,
        graph: GraphStore | None = None,
        settings: MemorySettings | None = None,
    ) -> None:
        """Use ``store`` (and ``graph``), windows in ``windows``, summaries by ``summaries_for``."""
        self.store = store
        self.graph = graph
        self.outbox = outbox
        self.settings = settings or MemorySettings()
        self.retrieval = RetrievalCounters()
        self._summaries_for = summaries_for or answers_for
        self._windows_root = windows
        self._windows: OrderedDict[str, WindowFiles] = OrderedDict()
        self._names: OrderedDict[MemoryScope, list[str]] = OrderedDict()
        self._writes: set[asyncio.Task[None]] = set()
        self._open_turns = 0
        self._no_open_turns = asyncio.Event()
        self._no_open_turns.set()
        self.writer = MemoryWriter(store, graph, answers_for, on_names=self._seen_names)
        self.summaries = SessionSummaries(self._queue, idle_after=self.settings.idle_after)

    def start(self) -> None:
        """Start draining the outbox (what a restart left in it, too)."""
        self.outbox.start(self.writer.process, self.store.count)

    def scope(self, agent_id: str, user_id: str | None) -> MemoryScope:
        """Return the scope a turn of ``agent_id`` for ``user_id`` writes to."""
        return MemoryScope.for_turn(agent_id, user_id, self.settings.environment)

    def window(self, scope: MemoryScope, model: str | None = None) -> RecentWindow:
        """Return the rolling window of ``scope``; what overflows it gets summarised."""
        files = self._windows.pop(scope.agent_id, None) or WindowFiles(
            self._windows_root / scope.agent_id
        )
        self._windows[scope.agent_id] = files
        while len(self._windows) > MAX_PERSONAS:
            self._windows.popitem(last=False)
        answers = self._summaries_for(model)
        return files.window(
            scope,
            budget=self.settings.window_tokens,
            on_overflow=lambda s, turns: self.summaries.overflowed(s, turns, answers),
        )

    async def before_turn(self, scope: MemoryScope, text: str) -> str | None:
        """Write a lasting instruction, then return what the turn may know, as quoted data.

        The turn counts as open until its ``after_turn`` (so ``settle`` waits for it).
        """
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
            self._instruction(scope, text),
        )
        return render(found)

    async def after_turn(
        self, scope: MemoryScope, user_text: str, said: str, *, source: str, model: str | None
    ) -> None:
        """Queue the exchange for extraction (on disk) and restart the idle timer."""
        try:
            if not user_text.strip():
                return
            entry = exchange_entry(
                scope, user_text, said, source=source, model=model, at=datetime.now(UTC)
            )
            await self.outbox.put("exchange", entry)
            answers = self._summaries_for(model)
            self.summaries.went_on(scope, lambda s: self.window(s, model).turns(), answers)
        finally:
            self._open_turns = max(0, self._open_turns - 1)
            if not self._open_turns:
                self._no_open_turns.set()

    async def remember(
        self, scope: MemoryScope, text: str, *, topic: str | None = None, source: str = "service"
    ) -> MemoryRecord | None:
        """Store a memory now (a conclusion when ``topic`` is given); None: it was queued.

        A memory the store refuses as input (``MemoryInputError``: empty text, a bad topic)
        raises; one it cannot take now is queued.
        """
        clean = clean_memory(text)
        kind: MemoryKind = "state" if topic else "detail"
        memory = NewMemory(scope=scope, text=clean, kind=kind, topic=topic, source=source)
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                if topic:
                    return await self.store.supersede(memory)
                return (await self.store.add([memory]))[0]
        except MemoryInputError:
            raise
        except Exception as err:
            LOGGER.warning("Memory store did not take the memory (%s); it is queued", err)
        if topic:
            await self.outbox.put("state", {"memory": dump_memory(memory)})
        else:
            await self.outbox.put("add", {"memories": [dump_memory(memory)]})
        return None

    async def forget(self, what: Forget) -> int:
        """Forget what ``what`` names: store, graph and rolling windows; return records gone."""
        if what.record_id is None:  # what waits on disk would bring it back
            await self.outbox.drop(forgotten_by(what))
        async with asyncio.timeout(CALL_TIMEOUT):
            removed = await self.store.forget(what)
            if self.graph is not None and what.record_id is None:
                removed += await self.graph.forget(what)
        await forget_windows(self._windows_root, self._windows, what)
        return removed

    async def rollback(self, record_id: str) -> MemoryRecord | None:
        """Retire a conclusion and bring back the one it superseded."""
        async with asyncio.timeout(CALL_TIMEOUT):
            return await self.store.rollback(record_id, self.settings.environment)

    async def conclusions(self, scope: MemoryScope) -> list[MemoryRecord]:
        """Return the current conclusions of exactly ``scope``, newest first."""
        async with asyncio.timeout(CALL_TIMEOUT):
            states = await self.store.current_states([scope])
        return [record for record in states if record.scope == scope]

    async def export(self, scopes: Sequence[MemoryScope]) -> list[MemoryRecord]:
        """Return every record of ``scopes``, history included, oldest first."""
        async with asyncio.timeout(CALL_TIMEOUT):
            return await self.store.export(scopes)

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

    async def prune(self, retention: float) -> int:
        """Delete windows nobody has spoken in for ``retention`` seconds; return how many."""
        root = self._windows_root
        personas = await asyncio.to_thread(
            lambda: [p.name for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
        )
        removed = 0
        for persona_id in personas:
            files = self._windows.get(persona_id) or WindowFiles(root / persona_id)
            removed += await files.store.prune(retention)
        return removed

    async def flush(self) -> None:
        """Write every open window to disk."""
        await asyncio.gather(*(files.flush() for files in self._windows.values()))

    async def close(self, grace: float = 5.0) -> None:
        """Let queued writes drain for ``grace`` seconds, then release everything."""
        try:
            await self.summaries.close(grace / 2)
            if self._writes:
                await asyncio.wait(self._writes, timeout=grace / 2)
            await self.outbox.close(grace / 2)
            await self.flush()
        finally:  # even when cancelled: the threads and connections must go
            await self.outbox.close()
            await self.store.close()
            if self.graph is not None:
                await self.graph.close()

    async def _instruction(self, scope: MemoryScope, text: str) -> None:
        """Write a lasting instruction as a conclusion, waiting at most the write timeout."""
        found = lasting_instruction(text)
        if found is None:
            return
        memory = NewMemory(
            scope=scope, text=clean_memory(found.text), kind="state", topic=found.topic
        )
        task = asyncio.create_task(self._write_state(memory), name="memory instruction")
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        await asyncio.wait([task], timeout=self.settings.write_timeout + 0.5)

    async def _write_state(self, memory: NewMemory) -> None:
        """Supersede now; when the store does not answer in time, queue it on disk."""
        try:
            async with asyncio.timeout(self.settings.write_timeout):
                await self.store.supersede(memory)
                return
        except MemoryInputError as err:
            LOGGER.warning("Memory store refused an instruction: %s", err)
            return
        except Exception as err:
            LOGGER.warning("Memory store did not take an instruction (%s); it is queued", err)
        await self.outbox.put("state", {"memory": dump_memory(memory)})

    async def _queue(self, memory: NewMemory) -> None:
        """Queue a summary for the store."""
        await self.outbox.put("add", {"memories": [dump_memory(memory)]})

    def _seen_names(self, scope: MemoryScope, names: tuple[str, ...]) -> None:
        """Remember entity names extraction found, to look for them in later turns."""
        known = self._names.pop(scope, [])
        known = list(dict.fromkeys([*names, *known]))[:MAX_NAMES]
        self._names[scope] = known
        while len(self._names) > MAX_NAMED_SCOPES:
            self._names.popitem(last=False)
