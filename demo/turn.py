"""One turn through Home Assistant's Assist pipeline, printed as it streams.

``say`` runs ``assist_pipeline/run`` over HA's WebSocket (text in, TTS out: what the Assist
dialog does), prints the reply's text as HA streams it, each tool call and result, the
memory the companion read (what the demo replay model was sent in the ``[memory context]``
block) and wrote (HA's ``companion_agent.export_memories`` before and after), and saves
the pipeline's audio to a file.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

TURN_TIMEOUT = 120.0
MEMORY_SETTLE = 4.0
"""Seconds to wait for the memory model's writes, which land after the answer."""
EXTENSIONS = {"audio/mpeg": "mp3", "audio/wav": "wav", "audio/x-wav": "wav", "audio/flac": "flac"}


@dataclass(slots=True, kw_only=True)
class TurnReport:
    """What one turn did: its text, tools, memory, audio and conversation."""

    text: str = ""
    conversation_id: str | None = None
    tools: list[str] = field(default_factory=list)
    memory_read: list[str] = field(default_factory=list)
    memory_written: list[str] = field(default_factory=list)
    audio: Path | None = None
    error: str | None = None
    first_text_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HomeLink:
    """A running demo HA: where it is, a token, the pipeline and persona to use."""

    url: str
    token: str
    pipeline_id: str
    persona: str
    satellite: str | None = None
    """The companion's own Assist satellite (the demo's wyoming-satellite), if it runs."""
    speaker: str | None = None
    """The file that satellite's speaker writes (raw 22.05 kHz, 16-bit mono)."""


async def say(
    link: HomeLink,
    text: str,
    *,
    conversation_id: str | None,
    audio: Path,
    model_log: Path | None,
    out: Callable[[str], None] = print,
) -> TurnReport:
    """Run one turn; print it as it streams; return what it did."""
    report = TurnReport()
    headers = {"Authorization": f"Bearer {link.token}"}
    timeout = aiohttp.ClientTimeout(total=TURN_TIMEOUT)
    offset = await asyncio.to_thread(_size, model_log)
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:
        before = await _memories(session, link)
        out(f"you> {text}")
        started = time.monotonic()
        run = _Run(report=report, started=started, out=out)
        tts_url = await run.through(session, link, text, conversation_id)
        if tts_url is not None and report.error is None:
            report.audio = await save_audio(session, link.url + tts_url, audio)
        report.memory_written = await _written(session, link, before)
    if model_log is not None:
        report.memory_read = await asyncio.to_thread(_read_memory, model_log, offset)
    _print_summary(report, out)
    return report


@dataclass(slots=True, kw_only=True)
class _Run:
    """One pipeline run being printed: its report, start time and printer."""

    report: TurnReport
    started: float
    out: Callable[[str], None]

    async def through(
        self,
        session: aiohttp.ClientSession,
        link: HomeLink,
        text: str,
        conversation_id: str | None,
    ) -> str | None:
        """Run the pipeline; print its stream; return the TTS URL (None without one)."""
        return await _run(session, link, text, conversation_id, self)


async def _run(
    session: aiohttp.ClientSession,
    link: HomeLink,
    text: str,
    conversation_id: str | None,
    run_: _Run,
) -> str | None:
    """Run the pipeline; print its stream; return the TTS URL (None without one)."""
    report, started, out = run_.report, run_.started, run_.out
    tts_url: str | None = None
    line = ""
    async with session.ws_connect(link.url + "/api/websocket") as ws:
        await ws.receive_json()
        await ws.send_json({"type": "auth", "access_token": link.token})
        if (await ws.receive_json()).get("type") != "auth_ok":
            raise RuntimeError("Home Assistant refused the demo's token")
        run: dict[str, Any] = {
            "id": 1,
            "type": "assist_pipeline/run",
            "start_stage": "intent",
            "end_stage": "tts",
            "input": {"text": text},
            "pipeline": link.pipeline_id,
        }
        if conversation_id:
            run["conversation_id"] = conversation_id
        await ws.send_json(run)
        while True:
            message = await ws.receive_json()
            if message.get("type") == "result":
                if not message.get("success"):
                    report.error = str(message.get("error"))
                    return None
                continue
            event = message.get("event", {})
            kind, data = event.get("type"), event.get("data") or {}
            if kind == "intent-progress" and (delta := data.get("chat_log_delta")):
                line = _delta(delta, report, started, line, out)
            elif kind == "intent-end":
                output = data.get("intent_output") or {}
                report.conversation_id = output.get("conversation_id")
                speech = output.get("response", {}).get("speech", {}).get("plain", {})
                report.text = str(speech.get("speech", ""))
            elif kind == "tts-end":
                tts_url = (data.get("tts_output") or {}).get("url")
            elif kind == "error":
                report.error = f"{data.get('code')}: {data.get('message')}"
            elif kind == "run-end":
                if line.strip():
                    out(f"companion> {line.strip()}   (+{time.monotonic() - started:.2f} s)")
                return tts_url


def _delta(
    delta: dict[str, Any],
    report: TurnReport,
    started: float,
    line: str,
    out: Callable[[str], None],
) -> str:
    """Print one ChatLog delta as it arrives; return the sentence still being written."""
    if content := delta.get("content"):
        if report.first_text_s is None:
            report.first_text_s = time.monotonic() - started
        line += content
        while (cut := _sentence_end(line)) > 0:
            sentence, line = line[:cut].strip(), line[cut:]
            if sentence:
                out(f"companion> {sentence}   (+{time.monotonic() - started:.2f} s)")
    for call in delta.get("tool_calls") or []:
        shown = f"{call.get('tool_name')}({json.dumps(call.get('tool_args'), ensure_ascii=False)})"
        report.tools.append(shown)
        out(f"  [tool call] {shown}")
    if delta.get("role") == "tool_result":
        result = json.dumps(delta.get("tool_result"), ensure_ascii=False)
        out(f"  [tool result] {delta.get('tool_name')}: {_short(result)}")
    return line


def _sentence_end(text: str) -> int:
    """Return where the first whole sentence of ``text`` ends (0: none yet)."""
    for at, char in enumerate(text):
        if char in ".!?" and at + 1 < len(text) and text[at + 1] == " ":
            return at + 1
    return 0


async def _memories(session: aiohttp.ClientSession, link: HomeLink) -> dict[str, str]:
    """Return what the persona remembers now, by id (empty when memory cannot be read)."""
    try:
        async with session.post(
            f"{link.url}/api/services/companion_agent/export_memories?return_response",
            json={"persona": link.persona},
        ) as response:
            if response.status != 200:
                return {}
            body = await response.json()
    except aiohttp.ClientError:
        return {}
    records = (body.get("service_response") or {}).get("memories") or []
    return {str(r.get("id")): _shown(r) for r in records if isinstance(r, dict)}


async def _written(
    session: aiohttp.ClientSession, link: HomeLink, before: dict[str, str]
) -> list[str]:
    """Return the memories that appeared since ``before`` (waiting briefly for late ones)."""
    deadline = time.monotonic() + MEMORY_SETTLE
    while True:
        now = await _memories(session, link)
        new = [text for key, text in now.items() if key not in before]
        if new or time.monotonic() > deadline:
            return new
        await asyncio.sleep(0.5)


def _shown(record: dict[str, Any]) -> str:
    """Return one memory record as a line: its kind, topic and text."""
    kind = record.get("kind") or record.get("type") or "memory"
    topic = f" [{record['topic']}]" if record.get("topic") else ""
    return f"{kind}{topic}: {record.get('text', '')}"


def _size(path: Path | None) -> int:
    """Return the size of ``path`` (0 when there is none)."""
    return path.stat().st_size if path is not None and path.exists() else 0


def _read_memory(log: Path, offset: int) -> list[str]:
    """Return the memory items the model was sent during this turn (from the replay's log)."""
    if not log.exists():
        return []
    with log.open(encoding="utf-8") as read:
        read.seek(offset if offset <= log.stat().st_size else 0)
        lines = read.read().splitlines()
    items: list[str] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        items.extend(i for i in entry.get("memory", []) if i not in items)
    return items


async def save_audio(session: aiohttp.ClientSession, url: str, folder: Path) -> Path | None:
    """Fetch audio from HA's TTS proxy and write it to the next ``turn-NNN`` file there."""
    async with session.get(url) as response:
        if response.status != 200:
            return None
        kind = response.headers.get("Content-Type", "").split(";")[0]
        body = await response.read()
    return await asyncio.to_thread(_write_next, folder, EXTENSIONS.get(kind, "audio"), body)


def _write_next(folder: Path, extension: str, body: bytes) -> Path:
    """Write ``body`` to the next free ``turn-NNN.<extension>`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    number = len(list(folder.glob("turn-*"))) + 1
    path = folder / f"turn-{number:03d}.{extension}"
    path.write_bytes(body)
    return path


def _short(text: str, limit: int = 160) -> str:
    """Return ``text`` cut to ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _print_summary(report: TurnReport, out: Callable[[str], None]) -> None:
    """Print what the turn read and wrote, and where its audio is."""
    if report.error:
        out(f"  [error] {report.error}")
    out("  memory read:    " + ("" if report.memory_read else "nothing"))
    for item in report.memory_read:
        out(f"    {_short(item)}")
    out("  memory written: " + ("" if report.memory_written else "nothing"))
    for item in report.memory_written:
        out(f"    {_short(item)}")
    if report.audio is not None:
        out(f"  audio:          {report.audio} ({report.audio.stat().st_size} bytes)")
    else:
        out("  audio:          none (no voice in the pipeline)")
