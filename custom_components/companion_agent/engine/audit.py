"""The audit trail: one redacted record per tool call attempt, appended off the event loop.

``AuditRecord`` is what one tool call attempt leaves behind, redacted; an ``AuditSink``
accepts records without blocking (``AuditLog`` appends them to a file; the usage counters
count them); ``AuditSinks`` hands each record to several sinks.

**The log file**: JSON lines appended by a writer that never dies. ``record`` serialises
on the caller's loop (tens of microseconds) and queues the line; one writer task collects
lines for ``batch_delay`` seconds and appends them with one write in a worker thread. A
write that fails keeps its lines and is tried again (with a growing pause); only a full
queue drops records, and they are counted. A file whose last line was cut (a crash
mid-write) gets a newline first, so the next record starts on its own line. Past
``max_bytes`` the file is rotated between two batches (``audit.jsonl.1`` … ``.N``), so
rotation never loses a record.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, Self

from .chars import clean_text, valid_text
from .json_types import JSONObject, JSONValue
from .messages import ToolCallRequest
from .redaction import redact, scrub_text
from .retry import RetryPolicy
from .tools.contract import ToolContext, ToolOutcome, parse_arguments

LOGGER = logging.getLogger(__name__)

AUDIT_VERSION = 1
MAX_RAW_CHARS = 2000
MAX_DETAIL_CHARS = 500

type AuditDecision = Literal[
    "allow",
    "validate",
    "confirm",
    "rejected",
    "refused",
    "deduplicated",
    "approved",
    "denied",
    "expired",
    "interrupted",
]
type CallOutcome = Literal["success", "failure", "pending", "cancelled", "refused"]
type AuditOutcome = CallOutcome
type StateSnapshots = tuple[JSONObject | None, JSONObject | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRecord:
    """One attempt at a tool call: who, where, what was asked, what the guard did, how it ended.

    ``token`` is the hashed confirmation token id; the raw id never reaches the log.
    """

    time: float
    trace_id: str
    user_id: str | None
    conversation_id: str
    tool_id: str
    call_id: str
    arguments: str
    decision: AuditDecision
    outcome: AuditOutcome
    category: str | None = None
    detail: str | None = None
    reasons: tuple[str, ...] = ()
    attempts: int = 0
    tool_ms: float = 0.0
    token: str | None = None
    state_before: JSONObject | None = None
    state_after: JSONObject | None = None
    secret: frozenset[str] = frozenset()
    """Argument names the tool's contract marks secret: always masked."""
    approved_by: str | None = None
    """Who approved a held call: a user id, or ``household`` (a voice that matched nobody)."""
    by_voice: bool = False
    """The approval was spoken (a recognised voice), not typed or pressed."""

    @classmethod
    def for_call(
        cls,
        request: ToolCallRequest,
        ctx: ToolContext,
        decision: AuditDecision,
        outcome: ToolOutcome | CallOutcome,
        *,
        category: str | None = None,
        detail: str | None = None,
        reasons: tuple[str, ...] = (),
        attempts: int = 0,
        tool_ms: float = 0.0,
        token: str | None = None,
        state: StateSnapshots = (None, None),
        approved_by: str | None = None,
        by_voice: bool = False,
    ) -> Self:
        """Build the record of one call: by its tool outcome, or by a bare outcome word."""
        if not isinstance(outcome, str):
            if outcome.kind == "failure":
                category = category or outcome.category
            if outcome.kind != "pending":
                detail = outcome.content if detail is None else detail
            outcome = outcome.kind
        return cls(
            time=time.time(),
            trace_id=ctx.trace_id,
            user_id=ctx.user_id,
            conversation_id=ctx.conversation_id,
            tool_id=request.name,
            call_id=request.call_id,
            arguments=request.arguments,
            decision=decision,
            outcome=outcome,
            category=category,
            detail=detail,
            reasons=reasons,
            attempts=attempts,
            tool_ms=tool_ms,
            token=token,
            state_before=state[0],
            state_after=state[1],
            secret=request.secret,
            approved_by=approved_by,
            by_voice=by_voice,
        )

    def to_json(self) -> JSONObject:
        """Return the record as a redacted JSON object."""
        parsed = parse_arguments(self.arguments)
        arguments: JSONValue = (
            redact(parsed, self.secret)
            if parsed is not None
            else scrub_text(clean_text(self.arguments, MAX_RAW_CHARS))
        )
        out: JSONObject = {
            "v": AUDIT_VERSION,
            "time": datetime.fromtimestamp(self.time, UTC).isoformat(timespec="milliseconds"),
            "trace_id": self.trace_id,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "tool": self.tool_id,
            "call": {"id": self.call_id, "name": self.tool_id, "arguments": arguments},
            "decision": self.decision,
            "outcome": self.outcome,
            "attempts": self.attempts,
            "tool_ms": round(self.tool_ms, 3),
        }
        if self.category is not None:
            out["category"] = self.category
        if self.detail is not None:
            out["detail"] = _redacted_detail(self.detail)
        if self.reasons:
            out["reasons"] = list(self.reasons)
        if self.token is not None:
            out["token"] = self.token
        if self.state_before is not None:
            out["state_before"] = redact(self.state_before)
        if self.state_after is not None:
            out["state_after"] = redact(self.state_after)
        if self.approved_by is not None:
            out["approved_by"] = self.approved_by
            out["by_voice"] = self.by_voice
        return out

    def to_line(self) -> str:
        """Return the record as one JSON line."""
        return valid_text(json.dumps(self.to_json(), ensure_ascii=False, default=str)) + "\n"


def _redacted_detail(text: str) -> JSONValue:
    """Return an outcome's text for the audit: JSON redacted by key, bounded, else scrubbed."""
    try:
        value: JSONValue = json.loads(text)
    except ValueError:
        return scrub_text(clean_text(text, MAX_DETAIL_CHARS))
    cleaned = redact(value)
    if len(text) <= MAX_DETAIL_CHARS:
        return cleaned
    return clean_text(json.dumps(cleaned, ensure_ascii=False), MAX_DETAIL_CHARS)


class AuditSink(Protocol):
    """Where the guard sends audit records; ``record`` must not block."""

    def record(self, entry: AuditRecord) -> None:
        """Accept one record."""
        ...


class NullAudit:
    """An audit sink that keeps nothing."""

    def record(self, entry: AuditRecord) -> None:
        """Drop the record."""


class AuditSinks:
    """An audit sink that hands each record to several sinks, in order."""

    def __init__(self, *sinks: AuditSink) -> None:
        """Send to ``sinks``."""
        self._sinks = sinks

    def record(self, entry: AuditRecord) -> None:
        """Hand the record to every sink."""
        for sink in self._sinks:
            sink.record(entry)


# The log file.
MAX_BATCH = 1024
DEFAULT_BATCH_DELAY = 0.05
DEFAULT_MAX_QUEUED = 10_000
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_KEEP = 3
WRITE_RETRY = RetryPolicy(attempts=None, first_delay=0.5, factor=4.0, max_delay=30.0)
"""A batch that could not be written waits and goes again, 0.5 s, 2 s, 8 s, then every 30 s."""
FLUSH_TIMEOUT = 10.0


class AuditLog:
    """Append-only JSON lines in a file the host names; one writer task, writes in a thread."""

    def __init__(
        self,
        path: Path,
        *,
        batch_delay: float = DEFAULT_BATCH_DELAY,
        max_queued: int = DEFAULT_MAX_QUEUED,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        """Name the file and its bounds; nothing is opened until the first batch."""
        self.path = path
        self.dropped = 0
        self.failed = 0
        self._batch_delay = batch_delay
        self._max_queued = max_queued
        self._max_bytes = max_bytes
        self._keep = keep
        self._lines: list[str] = []
        self._waiting = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False

    def record(self, entry: AuditRecord) -> None:
        """Serialise a record and queue it for the writer; start the writer on first use."""
        if self._closed or len(self._lines) >= self._max_queued:
            self.dropped += 1
            LOGGER.warning("Audit record dropped (closed or queue full): %s", entry.tool_id)
            return
        try:
            line = entry.to_line()
        except Exception:
            self.failed += 1
            LOGGER.warning("Audit record for %s not serialisable", entry.tool_id, exc_info=True)
            return
        self._lines.append(line)
        self._idle.clear()
        self._waiting.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(
                self._write_loop(), name="companion_agent audit writer"
            )

    async def flush(self, grace: float = FLUSH_TIMEOUT) -> bool:
        """Wait until every queued record is on disk; False if ``grace`` seconds passed first."""
        try:
            async with asyncio.timeout(grace):
                await self._idle.wait()
        except TimeoutError:
            LOGGER.warning("%d audit records not yet written to %s", len(self._lines), self.path)
            return False
        return True

    async def close(self, grace: float = FLUSH_TIMEOUT) -> None:
        """Write what is queued (within ``grace`` seconds), then stop; later records are dropped."""
        if not await self.flush(grace):
            self.failed += len(self._lines)
        self._closed = True
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer

    async def _write_loop(self) -> None:
        """Collect lines for a moment, then append them; on failure keep them and retry."""
        failures = 0
        while True:
            if not self._lines:
                self._idle.set()
                self._waiting.clear()
                await self._waiting.wait()
            if self._batch_delay > 0:
                await asyncio.sleep(self._batch_delay)
            batch = self._lines[:MAX_BATCH]
            try:
                lines = [line.encode("utf-8", "replace") for line in batch]
                await asyncio.to_thread(_append, self.path, lines, self._max_bytes, self._keep)
            except Exception:
                failures += 1
                delay = WRITE_RETRY.delay(failures)
                LOGGER.warning(
                    "Could not write %d audit records to %s; trying again in %.1f s",
                    len(batch),
                    self.path,
                    delay,
                    exc_info=failures == 1,
                )
                await WRITE_RETRY.sleep(delay)
                continue
            failures = 0
            del self._lines[: len(batch)]


def _append(path: Path, lines: list[bytes], max_bytes: int, keep: int) -> None:
    """Append whole lines, rotating between two lines when the file would grow too big."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = 0
    start = 0
    while start < len(lines):
        end, room = start, max_bytes - size
        while end < len(lines) and ((end == start and not size) or len(lines[end]) <= room):
            room -= len(lines[end])
            end += 1
        if end == start:
            _rotate(path, keep)
            size = 0
            continue
        size += _write(path, b"".join(lines[start:end]), size)
        start = end


def _write(path: Path, data: bytes, size: int) -> int:
    """Append ``data`` in one write on a line of its own; return how many bytes went in."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # the last line was cut: start ours on a line of its own
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return len(data)


def _rotate(path: Path, keep: int) -> None:
    """Shift ``path`` to ``path.1`` (``.1`` to ``.2`` …), keeping ``keep`` old files."""
    for number in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{number}")
        if older.exists():
            os.replace(older, path.with_name(f"{path.name}.{number + 1}"))
    os.replace(path, path.with_name(f"{path.name}.1"))


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditScan:
    """The records of an audit file, and how many of its lines were broken."""

    records: list[JSONObject]
    broken: int


def scan_audit(path: Path) -> AuditScan:
    """Read an audit file, skipping and counting broken lines (blocking)."""
    records: list[JSONObject] = []
    broken = 0
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return AuditScan(records=[], broken=0)
    with handle:
        for line in handle:
            if not line.strip():
                continue
            parsed = parse_arguments(line)
            if parsed is None:
                broken += 1
            else:
                records.append(parsed)
    return AuditScan(records=records, broken=broken)


def read_audit(path: Path) -> list[JSONObject]:
    """Return every readable record of an audit file (blocking: run it in an executor)."""
    return scan_audit(path).records
