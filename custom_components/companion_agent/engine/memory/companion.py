"""``CompanionMemory``: the three tiers and the outbox around one store, for one host.

- Tier 1: ``window(scope)`` is the rolling window a turn uses as its history (a view of
  the exchange store the turns are written to).
- Tier 2: turns that overflow the window, and idle windows, become summaries.
- Tier 3: ``before_turn`` reads conclusions, details and the graph within the retrieval
  budget; ``after_turn`` puts the exchange in the durable outbox, whose worker extracts
  and writes its memories. A lasting instruction in the person's words is written as a
  conclusion before the turn goes on (or queued on disk when the store does not answer).

**Lasting instructions** ("from now on…", "以后…", "remember that…", "记住…") must not
depend on a model answering well: the matcher is small, multilingual and model-free (its cues
are in ``topics``), and the person's own sentence is written as the conclusion under the
topic ``topics.statement_topic`` gives it — a known attribute of the person
(``self/name``), or a note of its own, so two different instructions never replace each
other. A later instruction on the same topic supersedes it.

**Forget wins, everywhere and for good.** ``forget`` does, in order:

1. The tombstones (``tombstones``) are written to the outbox file, which in the same
   transaction drops (or trims) every waiting write they cover — on disk first, so a
   restart keeps them — then join the ledger every later write checks before and after.
2. The store and the graph delete what the forget names (said at or before its time; the
   embedded store keeps its own tombstone in the same transaction).
3. For a person or a persona: their exchanges (conversations and recent windows) go from
   the exchange store, which refuses any turn begun before the forget from then on; their
   summaries in progress are cancelled; the entity names extraction found are dropped.

A record id is resolved first (its scope and topic, or its text), so a conclusion forgotten
while its exchange is being extracted does not come back either; a graph id (``rel-…``,
``ent-…``) names its entity or relation. A memory is forgotten with its statement
(``provenance``): the statement leaves a tombstone of its own (whatever its extraction still
writes is refused, whatever its content), the records derived from it go from the store,
what it alone said goes from the graph (an entity or relation another statement also said
stays), and the turn itself goes from the exchange store (which refuses it if it is stored
later).

**"That wasn't me"** (``disown``): what one exchange fed into a person's memory, taken
for theirs by a voice that was someone else's, goes to the household's. No store can move
a record between scopes, so its records are read, forgotten in the person's scope by their
statement (a tombstone refuses whatever its extraction still writes there) and written
again in the household's, as they were, dated when they were said. When none was written
yet (its extraction still waits in the outbox), the exchange is queued for extraction in
the household's scope instead. Its graph facts go from the person's graph and are not
carried over (only that extraction derives the household's).

**Reads for the services** (conclusions, one record, an export page, rollback) are one store
(and graph) call each, bounded by ``CALL_TIMEOUT``.

Counters (retrieval misses, bad answers, summaries, refused writes) are figures, never
content.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from ..chars import clean_text, strip_format
from ..errors import MemoryInputError
from ..turn.exchanges import HOUSEHOLD, ExchangeStore
from .models import (
    MAX_PAGE,
    ExportPage,
    Forget,
    GraphPage,
    GraphStore,
    MemoryKind,
    MemoryRecord,
    MemoryScope,
    MemoryStore,
    NewMemory,
)
from .outbox.outbox import MemoryOutbox
from .outbox.payloads import exchange_entry, screen_entry
from .outbox.tombstones import ForgetLedger, statement_forget, tombstone_of
from .outbox.writes import AnswersFor, MemoryWriter
from .provenance import LEGACY, Provenance
from .retrieval.retrieval import DEFAULT_BUDGET, RetrievalCounters, render, retrieve
from .retrieval.topics import CUE, statement_topic
from .tiers.extraction import clean_memory
from .tiers.summaries import IDLE_AFTER, SessionSummaries
from .tiers.window import RecentWindow

LOGGER = logging.getLogger(__name__)

CALL_TIMEOUT = 10.0
WRITE_TIMEOUT = 1.0
MAX_NAMES = 200
MAX_NAMED_SCOPES = 64
MAX_INSTRUCTION_CHARS = 500
SAID_SLACK = timedelta(minutes=1)
"""How much earlier than its statement a record may be dated and still be looked for."""
MAX_DISOWN_PAGES = 20
"""The most export pages of a person's records read to find what one exchange fed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LastingInstruction:
    """A standing request found in the person's words: its topic and the sentence."""

    topic: str
    text: str


def lasting_instruction(text: str) -> LastingInstruction | None:
    """Return the lasting instruction in ``text``, or None when it holds none."""
    clean = clean_text(strip_format(text), MAX_INSTRUCTION_CHARS, one_line=True)
    match = CUE.search(clean)
    if match is None:
        return None
    topic = statement_topic(clean[match.end() :])
    if not topic:
        return None
    return LastingInstruction(topic=topic, text=clean)


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
        turn counts as open until its ``after_turn`` (so ``wait_idle`` waits for it).
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
            self.summaries.restart_idle_timer(
                scope, lambda s: self.window(s, model).turns(), answers
            )
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

        Return how many records (and graph relations) went (the steps: the module's doc).
        """
        what = replace(what, at=what.at or datetime.now(UTC))
        graph_id = what.record_id is not None and what.record_id.startswith(("rel-", "ent-"))
        record = None
        if what.record_id is not None and not graph_id:
            async with asyncio.timeout(CALL_TIMEOUT):
                record = await self.store.get(what.record_id, what.environment)
        statement = None if record is None else statement_forget(record, what.moment)
        tombstone = tombstone_of(what, record)
        said = None if statement is None else tombstone_of(statement)
        tombstones = [t for t in (tombstone, said) if t is not None]
        if tombstones:
            await self.outbox.forget(tombstones)
            for each in tombstones:
                self.ledger.add(each)
        async with asyncio.timeout(CALL_TIMEOUT):
            removed = await self.store.forget(what)
            if self.graph is not None and (what.record_id is None or graph_id):
                removed += await self.graph.forget(what)
        if statement is not None:
            removed += await self._forget_statement(statement)
        if tombstone is None or tombstone.key is not None:
            return removed
        if what.environment == self.settings.environment:  # the exchanges are this one's
            await self.exchanges.forget(
                persona_id=what.agent_id, owner=what.owner, at=what.moment.timestamp()
            )
        self.summaries.forget(tombstone)
        for scope in [scope for scope in self._names if tombstone.covers(scope, None)]:
            del self._names[scope]
        return removed

    async def disown(
        self,
        scope: MemoryScope,
        statement: str,
        *,
        said: tuple[str, str],
        model: str | None,
        at: datetime,
    ) -> int:
        """Move what the exchange ``statement`` fed into a person's ``scope`` to the household's.

        ``said`` is the exchange (the person's words, what they were shown), ``at`` when it
        was said. Return how many records moved (the way: the module's doc).
        """
        if scope.owner == HOUSEHOLD or not statement:
            return 0
        found = await self._statement_records(scope, statement, at)
        await self.forget(
            Forget(
                statement=statement,
                owner=scope.owner,
                agent_id=scope.agent_id,
                environment=scope.environment,
            )
        )
        household = scope.household
        if not found:
            origin = Provenance(via="turn", statement=statement)
            entry = exchange_entry(
                household, *said, source="", model=model, at=at, provenance=origin
            )
            await self.outbox.put("exchange", entry)
            return 0
        for record in found:
            memory = NewMemory(
                scope=household, text=record.text, kind=record.kind, topic=record.topic,
                source=record.source, at=record.valid_from,
                provenance=replace(record.provenance, person=None),
            )  # fmt: skip
            await self.writer.write_or_queue(memory, CALL_TIMEOUT)
        return len(found)

    async def rollback(self, record_id: str) -> MemoryRecord | None:
        """Retire a conclusion and bring back the one it superseded."""
        async with asyncio.timeout(CALL_TIMEOUT):
            return await self.store.rollback(record_id, self.environment)

    async def conclusions(self, scope: MemoryScope) -> list[MemoryRecord]:
        """Return the current conclusions of exactly ``scope``, newest first."""
        async with asyncio.timeout(CALL_TIMEOUT):
            states = await self.store.current_states([scope])
        return [record for record in states if record.scope == scope]

    async def get(self, record_id: str) -> MemoryRecord | None:
        """Return one record of this memory's environment, if it exists."""
        async with asyncio.timeout(CALL_TIMEOUT):
            return await self.store.get(record_id, self.environment)

    async def export(
        self, scopes: Sequence[MemoryScope], *, offset: int = 0, limit: int = MAX_PAGE
    ) -> tuple[ExportPage, GraphPage]:
        """Return a page of the records of ``scopes`` and of their graph, newest first."""
        async with asyncio.timeout(CALL_TIMEOUT):
            page = await self.store.export(scopes, offset=offset, limit=limit)
            graph = (
                await self.graph.export(scopes, offset=offset, limit=limit)
                if self.graph is not None
                else GraphPage()
            )
        return page, graph

    async def counts(self) -> dict[str, object]:
        """Return counts for diagnostics: records, outbox, retrieval misses; no content."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                records: dict[str, int] | str = await self.store.count()
        except Exception as err:
            records = f"unavailable: {type(err).__name__}"
        return {
            "records": records,
            "outbox": await self.outbox.counts(),
            "retrieval": self.retrieval.snapshot(),
            "bad_answers": self.writer.bad_answers,
            "refused_writes": self.writer.refused,
            "tombstones": len(self.ledger),
            "summaries": {"made": self.summaries.made, "failed": self.summaries.failed},
        }

    async def wait_idle(self, grace: float) -> bool:
        """Wait up to ``grace`` s for open turns, writes, summaries and the outbox to finish."""
        try:
            async with asyncio.timeout(grace):
                await self._no_open_turns.wait()
                if self._writes:
                    await asyncio.gather(*self._writes, return_exceptions=True)
                await self.summaries.wait_idle()
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

    async def _forget_statement(self, statement: Forget) -> int:
        """Delete what one statement left: its records, its graph facts, its turn."""
        assert statement.statement is not None
        assert statement.agent_id is not None
        async with asyncio.timeout(CALL_TIMEOUT):
            removed = await self.store.forget(statement)
            if self.graph is not None:
                removed += await self.graph.forget(statement)
        mine = statement.environment == self.settings.environment
        if mine and not statement.statement.startswith(LEGACY):  # a turn's trace id
            await self.exchanges.forget_turn(
                statement.agent_id, statement.statement, statement.moment.timestamp()
            )
        return removed

    async def _statement_records(
        self, scope: MemoryScope, statement: str, at: datetime
    ) -> list[MemoryRecord]:
        """Return the current records of exactly ``scope`` derived from ``statement``.

        Pages are read newest first, until one reaches records stored before ``at`` (when
        the statement was said), ``MAX_DISOWN_PAGES`` at most.
        """
        found: list[MemoryRecord] = []
        before = at - SAID_SLACK
        for page_number in range(MAX_DISOWN_PAGES):
            async with asyncio.timeout(CALL_TIMEOUT):
                page = await self.store.export([scope], offset=page_number * MAX_PAGE)
            found += [
                record
                for record in page.records
                if record.scope == scope
                and record.provenance.statement == statement
                and record.current
                and record.kind != "summary"
            ]
            older = any(_aware(record.created_at) < before for record in page.records)
            if len(page.records) < MAX_PAGE or older:
                break
        return found

    def _seen_names(self, scope: MemoryScope, names: tuple[str, ...]) -> None:
        """Remember entity names extraction found, to look for them in later turns."""
        known = self._names.pop(scope, [])
        known = list(dict.fromkeys([*names, *known]))[:MAX_NAMES]
        self._names[scope] = known
        while len(self._names) > MAX_NAMED_SCOPES:
            self._names.popitem(last=False)


def _aware(moment: datetime) -> datetime:
    """Return ``moment`` with a time zone (a naive one is UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
