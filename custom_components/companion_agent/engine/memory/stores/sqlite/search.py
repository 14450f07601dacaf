"""The embedded store's search: keywords at once, vectors when they come in time, fused.

A search starts its keyword ranking on the worker thread and the query's embedding at the
same time. Keywords (FTS5, BM25 over the record's own terms, the turn said before it in
its conversation, and the names it is about) answer in milliseconds, their records read
in the same trip to the thread; the query's vector is waited for only until
``MemoryQuery.vector_wait`` (the store's query timeout when unset); when it comes, the
nearest records by cosine join in a second trip (and the records said just after a
question near it: an answer is found by the meaning of its question); when it is late,
the keywords' answer is returned as it is and the embedding goes on for the next search
of the same text.

A question that names someone the memories are about ("What drinks does Nicolas like?",
see **Who a question is about** below) adds a keyword ranking and a vector ranking
restricted to the memories about them, the name left out (its embedding starts as soon as
the keyword trip has found the name, and joins only when it comes in time).

A question that names a time ("on 29 Dec 2023", "in June", "last week", "上个月", see
``asked_about`` below) adds a ranking of each kind restricted to the memories said within
it: those rise, the others stay. Rankings are fused by weighted reciprocal rank
(``ranking``; the weights were chosen on a held-out split of a public conversation set,
see ``benchmarks/memory_recall.py``).

**When a question asks about**: ``asked_about(text, now)`` returns the span of time a
question names ("on 29 Dec 2023", "24.01.2024", "in June", "last week", "上个月"), or None.
The memories said within that span rank higher (the others are never dropped: "last year"
in "the trip we took last year" may be relative to something said, not to today). English
and Chinese; a month without a year is the latest such month up to ``now``; times are UTC
(a memory's time is when it was said, as stored). Dates in digits: ISO "2024-01-21", day
first with dots "21.01.2024" (as written in most of Europe), with slashes only when the
order cannot be mistaken ("21/1/2024", "1/21/2024"; not "3/4/2024"), "2024年1月21日".

**Who a question is about**: the names it shares with the memories it can read. A memory
keeps the names it is about (the speaker, the people and things it names) in the ``names``
column of ``memory_terms``. When a question names one of them ("What drinks does Nicolas
like?"), the search adds rankings restricted to the memories about that name, in which the
name itself no longer tells anything: the keywords ranked by the question's other words,
the vectors by the question embedded without the name. A small embedding model ranks a
sentence largely by the names in it (a greeting "Hey Nicolas!" outranks "I love Inca
Kola"), so only inside the restricted set does the rest of the question decide. The
unrestricted rankings stay as they are: "kitchen" in a question may name a room the
memories are about, and those memories must still be found when they say it otherwise.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ....sqlite import SQLiteWorker
from ...embeddings import Embedder
from ...models import MemoryHit, MemoryQuery, MemoryScope, bounded
from ...retrieval.keywords import COMMON_WORDS, WORD, fold, match_expression, query_terms
from ...retrieval.query_vectors import QueryVectors
from ..inputs import clean_scope, memory_text
from . import records_sql
from .ranking import Ranking, SearchSettings, fuse
from .vectors import Span, VectorCache, VectorRow, pack, vector_rows


class StoreSearch:
    """Searches of one embedded store (its worker thread, vector cache and embedder)."""

    def __init__(
        self,
        worker: SQLiteWorker,
        vectors: VectorCache,
        embedder: Embedder | None,
        *,
        rankings: frozenset[Ranking],
        settings: SearchSettings,
        query_timeout: float,
    ) -> None:
        """Search through ``worker`` and ``vectors``; embed queries with ``embedder``."""
        self._worker = worker
        self._vectors = vectors
        self.rankings = rankings
        self.settings = settings
        self._query_timeout = query_timeout
        self._embedder: Embedder | None = None
        self._queries: QueryVectors | None = None
        self.use(embedder)

    @property
    def query_timeout(self) -> float:
        """Return how long a query's embedding may take at most."""
        return self._query_timeout

    @query_timeout.setter
    def query_timeout(self, seconds: float) -> None:
        """Let a query's embedding take at most ``seconds`` from now on."""
        self._query_timeout = seconds
        self.use(self._embedder)

    def use(self, embedder: Embedder | None) -> None:
        """Embed queries with ``embedder`` from now on (None: keywords only)."""
        if self._queries is not None:
            self._queries.close()
        self._embedder = embedder
        self._queries = (
            QueryVectors(embedder, timeout=self.query_timeout)
            if embedder is not None and "vector" in self.rankings
            else None
        )

    async def search(self, query: MemoryQuery) -> list[MemoryHit]:
        """Return at most ``query.limit`` records matching ``query.text``, best first."""
        text = memory_text(query.text)
        scopes = tuple(clean_scope(scope) for scope in query.scopes)
        limit = bounded(query.limit)
        expression = match_expression(text, common=self.settings.common_words)
        if expression is None or not scopes or not query.kinds:
            return []
        span = asked_about(text, query.asked_at) if self.settings.time > 0 else None
        candidates = max(self.settings.candidates, limit * 3)
        wait = self.query_timeout if query.vector_wait is None else query.vector_wait
        deadline = asyncio.get_running_loop().time() + wait
        probe = (
            asyncio.ensure_future(self._queries.vector(text, wait))
            if self._queries is not None
            else None
        )
        words = [term for term in query_terms(text) if term not in COMMON_WORDS]
        restricts_vectors = self._queries is not None and self.settings.about_vectors > 0
        asks_about = self.settings.about > 0 or restricts_vectors

        def ranked(
            db: sqlite3.Connection, lists: list[tuple[list[int], float]], vectors: _Probes
        ) -> list[MemoryHit]:
            """Add the vector rankings when there are vectors, fuse, read the records back."""
            lists = list(lists)
            lists.extend(
                self._vector_rankings(
                    db,
                    query=query,
                    scopes=scopes,
                    probes=vectors,
                    span=span,
                    candidates=candidates,
                )
            )
            fused = self._fuse(lists)
            if self.settings.neighbours > 0 and fused and "detail" in query.kinds:
                best = [rowid for rowid, _ in fused[: self.settings.hops]]
                lists.append((records_sql.neighbours(db, best), self.settings.neighbours))
                fused = self._fuse(lists)
            found = records_sql.records(db, [rowid for rowid, _ in fused[:limit]])
            return [
                MemoryHit(record=found[rowid], score=score, channel=found[rowid].kind)
                for rowid, score in fused[:limit]
                if rowid in found
            ]

        def keywords(db: sqlite3.Connection) -> _KeywordAnswer:
            """Rank by keywords; read the keywords' answer too, ready if the vector is late."""
            names = names_in(db, words, scopes) if asks_about else []
            among = rowids_about(db, names) if names and restricts_vectors else frozenset()
            lists = self._keyword_rankings(
                db, query=query, scopes=scopes, expression=expression, span=span,
                candidates=candidates, names=names, others=[w for w in words if w not in names],
            )  # fmt: skip
            return lists, ranked(db, lists, _Probes()), names, among

        aside: asyncio.Future[list[float] | None] | None = None
        try:
            keyword_lists, keyword_hits, names, among = await self._worker.run(keywords)
            if among and self._queries is not None:
                remaining = deadline - asyncio.get_running_loop().time()
                aside = asyncio.ensure_future(
                    self._queries.vector(without_names(text, names), remaining)
                )
            vector = await probe if probe is not None else None
            about_vector = await aside if aside is not None else None
        finally:
            for pending in (probe, aside):
                if pending is not None and not pending.done():
                    pending.cancel()
        if vector is None and about_vector is None:
            return keyword_hits  # no further trip to the thread: the answer is ready
        probes = _Probes(
            whole=None if vector is None else pack(vector),
            about=None if about_vector is None else pack(about_vector),
            among=among,
        )
        return await self._worker.run(lambda db: ranked(db, keyword_lists, probes))

    def _fuse(self, lists: Sequence[tuple[list[int], float]]) -> list[tuple[int, float]]:
        """Fuse weighted rankings by reciprocal rank."""
        return fuse([r for r, _ in lists], k=self.settings.rrf_k, weights=[w for _, w in lists])

    def _keyword_rankings(
        self,
        db: sqlite3.Connection,
        *,
        query: MemoryQuery,
        scopes: Sequence[MemoryScope],
        expression: str,
        span: TimeSpan | None,
        candidates: int,
        names: Sequence[str],
        others: Sequence[str],
    ) -> list[tuple[list[int], float]]:
        """Return the keyword rankings (whole, within ``span``, about ``names``), weighted."""
        if "keyword" not in self.rankings:
            return []
        weights = (1.0, self.settings.context, self.settings.names)
        asked: list[tuple[str, tuple[float, float, float], TimeSpan | None, str | None, float]]
        asked = [(expression, weights, None, None, self.settings.keywords)]
        if span is not None:
            asked.append(
                (expression, weights, span, None, self.settings.keywords * self.settings.time)
            )
        if names and others and self.settings.about > 0:
            words = " OR ".join(f'"{word}"' for word in others)
            restricted = (1.0, self.settings.context, 0.0)
            weight = self.settings.keywords * self.settings.about
            asked.append((words, restricted, None, names_expression(names), weight))
        return [
            (
                records_sql.keyword_ranking(
                    db,
                    match,
                    scopes=scopes,
                    kinds=query.kinds,
                    include_history=query.include_history,
                    limit=candidates,
                    weights=columns,
                    span=None if within is None else _iso(within),
                    about=subject,
                ),
                weight,
            )
            for match, columns, within, subject, weight in asked
        ]

    def _vector_rankings(
        self,
        db: sqlite3.Connection,
        *,
        query: MemoryQuery,
        scopes: Sequence[MemoryScope],
        probes: _Probes,
        span: TimeSpan | None,
        candidates: int,
    ) -> list[tuple[list[int], float]]:
        """Return rowids by cosine to the probes (within ``span``, about names), weighted."""
        model = self._embedder.model_id if self._embedder is not None else ""
        history = query.include_history
        cache = VectorCache() if history else self._vectors

        def load(scope: tuple[str, str, str]) -> Iterable[VectorRow]:
            """Read a scope's vectors of this model (retired ones only for history)."""
            return vector_rows(db, scope, model, history=history)

        keys = [(scope.agent_id, scope.environment, scope.owner) for scope in scopes]
        asked: list[tuple[bytes, Span | None, frozenset[int] | None, bool, float]] = []
        weight = self.settings.vectors
        if probes.whole is not None:
            asked.append((probes.whole, None, None, False, weight))
            if span is not None:
                seconds = (span.start.timestamp(), span.end.timestamp())
                asked.append((probes.whole, seconds, None, False, weight * self.settings.time))
            if self.settings.context_vectors > 0 and "detail" in query.kinds:
                asked.append(
                    (probes.whole, None, None, True, weight * self.settings.context_vectors)
                )
        if probes.about is not None and probes.among:
            asked.append(
                (probes.about, None, probes.among, False, weight * self.settings.about_vectors)
            )
        found: list[tuple[list[int], float]] = []
        for probe, within, among, before, weight in asked:
            nearest = cache.nearest(
                keys, probe, candidates, load, query.kinds, span=within, among=among,
                before=before, hubness=self.settings.hubness,
            )  # fmt: skip
            found.append(([rowid for rowid, _ in nearest], weight))
        return found

    def close(self) -> None:
        """Cancel query embeddings still under way."""
        if self._queries is not None:
            self._queries.close()


@dataclass(frozen=True, slots=True)
class _Probes:
    """The query's vectors that came in time: whole, and without the names it is about."""

    whole: bytes | None = None
    about: bytes | None = None
    among: frozenset[int] = frozenset()
    """The rowids of the memories about those names."""


type _KeywordAnswer = tuple[
    list[tuple[list[int], float]], list[MemoryHit], list[str], frozenset[int]
]


def _iso(span: TimeSpan) -> tuple[str, str]:
    """Return a span as the ISO times records are stored with."""
    return records_sql.iso(span.start), records_sql.iso(span.end)


# When a question asks about (``asked_about``): the span of time it names.
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.IGNORECASE)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}(?:\s+(?:of\s+)?{_YEAR})?\b", re.IGNORECASE)
_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})\b")
_DOTTED = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.((?:19|20)\d\d)\b")
_SLASHED = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d\d)\b")
_CN_MONTH_NUMBER = "(十[一二]|[一二三四五六七八九十]|1[0-2]|[1-9])"
_CN_DAY_NUMBER = r"(\d{1,2}|[一二三四五六七八九十]{1,3})"
_CN_DAY = re.compile(rf"(?:(\d{{4}})年)?{_CN_MONTH_NUMBER}月{_CN_DAY_NUMBER}[日号]")
_YEAR_ONLY = re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.IGNORECASE)
_AGO = re.compile(r"\b(\d{1,3}|a|an|one|two|three)\s+(day|week|month)s?\s+ago\b", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|last\s+night|(?:last|this|past)\s+(?:week(?:end)?|month|year))\b",
    re.IGNORECASE,
)
_CN_MONTH = re.compile(rf"(?:(\d{{4}})年)?{_CN_MONTH_NUMBER}月")
_CN_YEAR = re.compile(r"(\d{4})年")
_CN_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_RELATIVE = (
    ("前天", "day", -2),
    ("昨天", "day", -1),
    ("昨晚", "day", -1),
    ("今天", "day", 0),
    ("上上周", "week", -2),
    ("上周", "week", -1),
    ("上星期", "week", -1),
    ("上个星期", "week", -1),
    ("上礼拜", "week", -1),
    ("这周", "week", 0),
    ("本周", "week", 0),
    ("这个星期", "week", 0),
    ("上个月", "month", -1),
    ("上月", "month", -1),
    ("这个月", "month", 0),
    ("本月", "month", 0),
    ("前年", "year", -2),
    ("去年", "year", -1),
    ("今年", "year", 0),
)
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """A span of time, ``start`` included, ``end`` excluded (UTC)."""

    start: datetime
    end: datetime

    def __contains__(self, moment: datetime) -> bool:
        """Say whether ``moment`` falls within the span."""
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return self.start <= moment < self.end


def asked_about(text: str, now: datetime | None = None) -> TimeSpan | None:
    """Return the span of time ``text`` asks about, or None when it names none."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    for find in (_day, _month, _year, _relative, _chinese):
        span = find(text, now)
        if span is not None:
            return span
    return None


def _day(text: str, now: datetime) -> TimeSpan | None:
    """Return the day of "29 Dec 2023", "October 13, 2023", "June 5th", "24.01.2024"."""
    start = _numeric_day(text, now)
    if start is not None:
        return TimeSpan(start, start + timedelta(days=1))
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        match = pattern.search(text)
        if match is None:
            continue
        month = _MONTHS[match.group(month_group).lower().rstrip(".")]
        day, year = int(match.group(day_group)), match.group(3)
        start = _dated(int(year) if year else None, month, day, now)
        if start is not None:
            return TimeSpan(start, start + timedelta(days=1))
    return None


def _numeric_day(text: str, now: datetime) -> datetime | None:
    """Return midnight of a date written in digits ("2024-01-21", "21.01.2024", 1月21日)."""
    if match := _ISO.search(text):
        year, month, day = (int(group) for group in match.groups())
        return _dated(year, month, day, now)
    if match := _DOTTED.search(text):
        day, month, year = (int(group) for group in match.groups())
        return _dated(year, month, day, now)
    if match := _CN_DAY.search(text):
        year_text, month_text, day_text = match.groups()
        year_number = int(year_text) if year_text else None
        return _dated(year_number, _cn_number(month_text), _cn_number(day_text), now)
    for match in _SLASHED.finditer(text):
        first, second, year = (int(group) for group in match.groups())
        if (first > 12) != (second > 12):  # only one order is a date
            day, month = (first, second) if first > 12 else (second, first)
            return _dated(year, month, day, now)
    return None


def _month(text: str, now: datetime) -> TimeSpan | None:
    """Return the month of "in June", "July 2023" (not the word "may" alone)."""
    for match in _MONTH_YEAR.finditer(text):
        name, year = match.group(1).lower(), match.group(2)
        if name == "may" and not year and not _after_preposition(text, match.start()):
            continue  # "may" is far more often the verb
        short = len(name) == 3 and name != "may" and not match.group(0).endswith(".")
        if short and not year and not _after_preposition(text, match.start()):
            continue  # "mar", "jan" alone are too often other words
        return _month_span(int(year) if year else None, _MONTHS[name.rstrip(".")], now)
    return None


def _after_preposition(text: str, index: int) -> bool:
    """Say whether the word before ``index`` is "in", "during", "since", "of", "early"…."""
    before = text[:index].split()
    return bool(before) and before[-1].lower() in {"in", "during", "since", "of", "early", "late"}


def _year(text: str, now: datetime) -> TimeSpan | None:
    """Return the year of "in 2023"."""
    match = _YEAR_ONLY.search(text)
    if match is None:
        return None
    year = int(match.group(1))
    return TimeSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _relative(text: str, now: datetime) -> TimeSpan | None:
    """Return the span of "yesterday", "last week", "3 days ago", "this month"."""
    match = _AGO.search(text)
    if match is not None:
        count = _WORD_NUMBERS.get(match.group(1).lower()) or int(match.group(1))
        unit = match.group(2).lower()
        days = {"day": 1, "week": 7, "month": 30}[unit] * count
        centre = _midnight(now) - timedelta(days=days)
        slack = timedelta(days={"day": 1, "week": 3, "month": 10}[unit])
        return TimeSpan(centre - slack, centre + slack + timedelta(days=1))
    match = _RELATIVE.search(text)
    if match is None:
        return None
    phrase = " ".join(match.group(1).lower().split())
    if phrase in ("today", "tonight"):
        return _unit_span("day", 0, now)
    if phrase in ("yesterday", "last night"):
        return _unit_span("day", -1, now)
    which, unit = phrase.split(" ")
    if unit == "weekend":
        saturday = _midnight(now) - timedelta(days=(now.weekday() - 5) % 7 or 7)
        return TimeSpan(saturday, saturday + timedelta(days=2))
    if which == "past":
        days = {"week": 7, "month": 31, "year": 366}[unit]
        return TimeSpan(_midnight(now) - timedelta(days=days), now + timedelta(seconds=1))
    return _unit_span(unit, -1 if which == "last" else 0, now)


def _chinese(text: str, now: datetime) -> TimeSpan | None:
    """Return the span of 昨天, 上周, 上个月, 去年, 六月, 2023年."""
    for word, unit, offset in _CN_RELATIVE:
        if word in text:
            return _unit_span(unit, offset, now)
    match = _CN_MONTH.search(text)
    if match is not None:
        return _month_span(
            int(match.group(1)) if match.group(1) else None, _cn_number(match.group(2)), now
        )
    match = _CN_YEAR.search(text)
    if match is not None:
        year = int(match.group(1))
        return TimeSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
    return None


def _cn_number(text: str) -> int:
    """Return 1..99 written in digits or in Chinese numerals (五, 十二, 二十一); 0 if neither."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return _CN_NUMBERS.get(text, 0)
    tens, _, ones = text.partition("十")
    return (_CN_NUMBERS.get(tens, 0) if tens else 1) * 10 + _CN_NUMBERS.get(ones, 0)


def _unit_span(unit: str, offset: int, now: datetime) -> TimeSpan:
    """Return the day, week (from Monday), month or year ``offset`` units from now's."""
    today = _midnight(now)
    if unit == "day":
        start = today + timedelta(days=offset)
        return TimeSpan(start, start + timedelta(days=1))
    if unit == "week":
        start = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return TimeSpan(start, start + timedelta(weeks=1))
    if unit == "month":
        index = now.year * 12 + now.month - 1 + offset
        return _month_span(index // 12, index % 12 + 1, now)
    year = now.year + offset
    return TimeSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _month_span(year: int | None, month: int, now: datetime) -> TimeSpan:
    """Return one month; without a year, the latest such month up to ``now``."""
    if year is None:
        year = now.year if month <= now.month else now.year - 1
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return TimeSpan(start, end)


def _dated(year: int | None, month: int, day: int, now: datetime) -> datetime | None:
    """Return midnight of a date (without a year, the latest up to ``now``); None if invalid."""
    try:
        if year is not None:
            return datetime(year, month, day, tzinfo=UTC)
        moment = datetime(now.year, month, day, tzinfo=UTC)
        return moment if moment <= now else datetime(now.year - 1, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _midnight(moment: datetime) -> datetime:
    """Return the start of ``moment``'s day."""
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


# Who a question is about: the names it shares with the memories it can read.
MAX_NAMES = 4
"""At most this many names of one question restrict: the first it names."""


def names_in(
    db: sqlite3.Connection, terms: Sequence[str], scopes: Sequence[MemoryScope]
) -> list[str]:
    """Return the ``terms`` that are a name of a current memory of ``scopes``."""
    where, params = records_sql.scope_clause(scopes, "m")
    found: list[str] = []
    for term in terms:
        # CROSS JOIN keeps the FTS5 match the outer loop: each match is looked up by rowid
        # and the first readable one ends it. Joined freely, SQLite may walk the scope's
        # rows and match each (hundreds of ms at 10 k memories); as an IN subquery, it
        # collects every match first (5 ms for a name 10 k memories share).
        row = db.execute(
            "SELECT 1 FROM memory_terms CROSS JOIN memories m ON m.rowid = memory_terms.rowid "
            f"WHERE memory_terms MATCH ? AND {where} AND m.valid_until IS NULL LIMIT 1",
            (f'{{names}} : "{term}"', *params),
        ).fetchone()
        if row is not None:
            found.append(term)
            if len(found) == MAX_NAMES:
                break
    return found


def names_expression(names: Sequence[str]) -> str:
    """Return the FTS5 expression matching a memory about any of ``names``."""
    return "{names} : (" + " OR ".join(f'"{name}"' for name in names) + ")"


def rowids_about(db: sqlite3.Connection, names: Sequence[str]) -> frozenset[int]:
    """Return the rowids of the memories about any of ``names`` (any scope: filter later)."""
    rows = db.execute(
        "SELECT rowid FROM memory_terms WHERE memory_terms MATCH ?", (names_expression(names),)
    )
    return frozenset(int(row[0]) for row in rows)


def without_names(text: str, names: Sequence[str]) -> str:
    """Return ``text`` without the words that are ``names`` (and a possessive ``'s``).

    Latin names are whole words; a CJK name (a bigram or a character) is cut where it
    stands. The text is returned as it is when nothing else would be left.
    """
    wanted = set(names)
    pieces: list[str] = []
    last = 0
    dropped = False
    for match in WORD.finditer(text):
        folded = fold(match.group())
        gap = text[last : match.start()]
        possessive = dropped and folded == "s" and gap in ("'", "’")
        if possessive:
            dropped = False
        elif folded in wanted:
            pieces.append(" ")
            dropped = True
        else:
            pieces += [gap, match.group()]
            dropped = False
        last = match.end()
    stripped = "".join([*pieces, text[last:]])
    for name in wanted:
        if not name.isascii():
            stripped = stripped.replace(name, " ")
    stripped = re.sub(r"\s+", " ", stripped).strip()
    return stripped if WORD.search(stripped) else text
