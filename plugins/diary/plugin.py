"""The ``diary`` plugin: a day-by-day diary of conversations and notes, one JSONL file a day.

Files live in ``<data folder>/diary/<profile id>/YYYY-MM-DD.jsonl`` so two personas keep two
diaries. Every file operation runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

from custom_components.companion_agent.engine.errors import ToolValidationError
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.plugins import (
    HookPlugin,
    PluginContext,
    ToolPlugin,
    TurnContext,
)
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.holding import HoldingHint
from custom_components.companion_agent.engine.tools.registry import Tool

MEMORY = HoldingHint(kind="memory")
"""What the persona says while the diary is slow: a memory line."""
WRITE_SPEC = ToolSpec(
    name="diary_write",
    description="Write a short note into today's diary, e.g. something the person wants kept.",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 2000}},
        "required": ["text"],
        "additionalProperties": False,
    },
)
READ_SPEC = ToolSpec(
    name="diary_read",
    description="Read the diary of one day (default today): notes and what was said.",
    parameters={
        "type": "object",
        "properties": {"day": {"type": "string", "description": "YYYY-MM-DD (optional)"}},
        "additionalProperties": False,
    },
)

type Entry = dict[str, str]


class DiaryPlugin(HookPlugin, ToolPlugin):
    """Record each exchange after the turn; recall yesterday before it; offer diary tools."""

    def __init__(self, context: PluginContext) -> None:
        """Read settings; the folder is created on the first write."""
        super().__init__(context)
        config = context.config
        self._folder = context.data_dir / context.profile_id
        self._record = config.flag("record_exchanges")
        self._summary_chars = config.integer("summary_chars")
        self._entry_chars = config.integer("entry_chars")
        self._read_limit = config.integer("read_limit")
        self._lock = asyncio.Lock()
        self._summaries: dict[date, str | None] = {}

    def tools(self) -> Sequence[Tool]:
        """Return ``diary_write`` and ``diary_read``."""
        return [
            Tool(spec=WRITE_SPEC, handler=self._write_tool, holding=MEMORY),
            Tool(spec=READ_SPEC, handler=self._read_tool, read_only=True, holding=MEMORY),
        ]

    async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
        """Return yesterday's summary (read once a day, then cached)."""
        yesterday = self.context.now().date() - timedelta(days=1)
        if yesterday not in self._summaries:
            entries = await self._read(yesterday)
            self._summaries = {yesterday: summarise(yesterday, entries, self._summary_chars)}
        return self._summaries[yesterday]

    async def on_first_turn(self, ctx: TurnContext) -> str | None:
        """Return the notes written earlier today, once per conversation."""
        today = self.context.now().date()
        notes = [e for e in await self._read(today) if e.get("kind") == "note"]
        if not notes:
            return None
        lines = [f"- {e.get('time', '')} {e.get('text', '')}" for e in notes[-5:]]
        return "\n".join(["Diary notes from earlier today:", *lines])

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Append the exchange to today's diary."""
        if self._record and (user_text.strip() or assistant_text.strip()):
            await self._append({"kind": "exchange", "user": user_text, "assistant": assistant_text})

    async def _write_tool(self, args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Append a note for the model."""
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ToolValidationError("text must be a non-empty string")
        day = await self._append({"kind": "note", "text": text.strip()})
        return {"saved": True, "day": day.isoformat()}

    async def _read_tool(self, args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Return one day's entries, the latest ``read_limit`` of them."""
        raw = args.get("day")
        try:
            day = date.fromisoformat(raw) if isinstance(raw, str) else self.context.now().date()
        except ValueError as err:
            raise ToolValidationError("day must look like 2026-02-03") from err
        entries = (await self._read(day))[-self._read_limit :]
        return {"day": day.isoformat(), "entries": [dict(e) for e in entries]}

    async def _append(self, fields: Entry) -> date:
        """Write one entry, stamped with the local time, to today's file; return the day."""
        now = self.context.now()
        entry = {key: value[: self._entry_chars] for key, value in fields.items()}
        entry = {"time": now.strftime("%H:%M"), **entry}
        path = self._path(now.date())
        async with self._lock:
            await asyncio.to_thread(_append_line, path, json.dumps(entry, ensure_ascii=False))
        return now.date()

    async def _read(self, day: date) -> list[Entry]:
        """Return a day's entries; a missing day is empty."""
        return await asyncio.to_thread(_read_lines, self._path(day))

    def _path(self, day: date) -> Path:
        """Return the file of ``day``."""
        return self._folder / f"{day.isoformat()}.jsonl"


def summarise(day: date, entries: Sequence[Entry], limit: int) -> str | None:
    """Summarise a day: its notes first, then what the person said, within ``limit`` chars."""
    if not entries:
        return None
    heading = f"Diary of yesterday, {day.strftime('%A')} {day.isoformat()}:"
    notes = [f"- note: {e['text']}" for e in entries if e.get("kind") == "note" and "text" in e]
    said = [
        f"- {e.get('time', '')} they said: {e['user']}"
        for e in entries
        if e.get("kind") == "exchange" and e.get("user")
    ]
    kept: list[str] = []
    used = len(heading)
    for line in [*notes, *reversed(said)]:
        if used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    chosen = set(kept)
    ordered = [line for line in [*notes, *said] if line in chosen]
    return "\n".join([heading, *ordered]) if ordered else None


def _append_line(path: Path, line: str) -> None:
    """Append one line to ``path``, creating its folder; blocking."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write(line + "\n")


def _read_lines(path: Path) -> list[Entry]:
    """Read a JSONL diary file, skipping damaged lines; blocking."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    entries: list[Entry] = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            entries.append({str(k): str(v) for k, v in value.items()})
    return entries
