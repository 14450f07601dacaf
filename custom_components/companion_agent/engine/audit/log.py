"""The audit log: one JSON line per tool call attempt, appended off the event loop.

``AuditRecord`` is what one attempt leaves behind; ``AuditLog`` appends records to a file;
``Tee`` sends each record to several sinks (the file and the usage counters).
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

from ..json_types import JSONObject, JSONValue
from ..messages import ToolCallRequest
from ..tools.contract import ToolContext, ToolOutcome, parse_arguments
from .redaction import redact, scrub_text

LOGGER = logging.getLogger(__name__)

AUDIT_VERSION = 1
MAX_BATCH = 1024
DEFAULT_BATCH_DELAY = 0.05
DEFAULT_MAX_QUEUED = 10_000
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
        )

    def to_json(self) -> JSONObject:
        """Return the record as a redacted JSON object."""
        parsed = parse_arguments(self.arguments)
        arguments: JSONValue = (
            redact(parsed) if parsed is not None else scrub_text(self.arguments[:MAX_RAW_CHARS])
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
        return out

    def to_line(self) -> str:
        """Return the record as one JSON line."""
        return json.dumps(self.to_json(), ensure_ascii=False, default=str) + "\n"


def _redacted_detail(text: str) -> JSONValue:
    """Return an outcome's text for the audit: JSON redacted by key, bounded, else scrubbed."""
    try:
        value: JSONValue = json.loads(text)
    except ValueError:
        return scrub_text(text[:MAX_DETAIL_CHARS])
    cleaned = redact(value)
    if len(text) <= MAX_DETAIL_CHARS:
        return cleaned
    return json.dumps(cleaned, ensure_ascii=False)[:MAX_DETAIL_CHARS]


class AuditSink(Protocol):
    """Where the guard sends audit records; ``record`` must not block."""

    def record(self, entry: AuditRecord) -> None:
        """Accept one record."""
        ...


class NullAudit:
    """An audit sink that keeps nothing."""

    def record(self, entry: AuditRecord) -> None:
        """Drop the record."""


class Tee:
    """An audit sink that hands each record to several sinks, in order."""

    def __init__(self, *sinks: AuditSink) -> None:
        """Send to ``sinks``."""
        self._sinks = sinks

    def record(self, entry: AuditRecord) -> None:
        """Hand the record to every sink."""
        for sink in self._sinks:
            sink.record(entry)


class AuditLog:
    """Append-only JSON lines in a file the host names; one writer task, writes in a thread.

    ``record`` serialises and redacts on the caller's loop (tens of microseconds) and
    queues the line; the writer collects lines for ``batch_delay`` seconds and appends them
    with one write in a worker thread, so the loop never waits on the disk and the thread
    never competes with it for the GIL. The file is opened for append on every batch, so a
    new instance (after a restart) continues the same file. Beyond ``max_queued`` waiting
    lines new records are dropped and counted.
    """

    def __init__(
        self,
        path: Path,
        *,
        batch_delay: float = DEFAULT_BATCH_DELAY,
        max_queued: int = DEFAULT_MAX_QUEUED,
    ) -> None:
        """Name the file; nothing is opened until the first batch."""
        self.path = path
        self.dropped = 0
        self.failed = 0
        self._batch_delay = batch_delay
        self._max_queued = max_queued
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False

    def record(self, entry: AuditRecord) -> None:
        """Serialise a record and queue it for the writer; start the writer on first use."""
        if self._closed or self._queue.qsize() >= self._max_queued:
            self.dropped += 1
            LOGGER.warning("Audit record dropped (closed or queue full): %s", entry.tool_id)
            return
        try:
            line = entry.to_line()
        except (TypeError, ValueError):
            self.failed += 1
            LOGGER.warning("Audit record for %s not serialisable", entry.tool_id, exc_info=True)
            return
        self._queue.put_nowait(line)
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(
                self._write_loop(), name="companion_agent audit writer"
            )

    async def flush(self) -> None:
        """Wait until every queued record is on disk (or has failed)."""
        if self._writer is not None:
            await self._queue.join()

    async def close(self) -> None:
        """Write what is queued, then stop the writer; later records are dropped."""
        await self.flush()
        self._closed = True
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer

    async def _write_loop(self) -> None:
        """Collect lines for a moment, then append them in one write by a worker thread."""
        while True:
            lines = [await self._queue.get()]
            if self._batch_delay > 0:
                await asyncio.sleep(self._batch_delay)
            while len(lines) < MAX_BATCH and not self._queue.empty():
                lines.append(self._queue.get_nowait())
            try:
                await asyncio.to_thread(_append, self.path, "".join(lines).encode())
            except OSError:
                self.failed += len(lines)
                LOGGER.warning("Could not write %d audit records", len(lines), exc_info=True)
            finally:
                for _ in lines:
                    self._queue.task_done()


def _append(path: Path, data: bytes) -> None:
    """Append bytes in one write, creating the file private (runs in a worker thread)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)


def read_audit(path: Path) -> list[JSONObject]:
    """Read every record of an audit file (blocking: run it in an executor)."""
    if not path.exists():
        return []
    records: list[JSONObject] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            parsed = parse_arguments(line)
            if line.strip() and parsed is not None:
                records.append(parsed)
    return records
