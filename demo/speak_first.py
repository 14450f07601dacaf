"""The companion speaks first, and is interrupted: ``companion_agent.start_chat`` on a player.

``speak_first`` asks the persona to start talking on the companion's own Assist satellite
(the demo's wyoming-satellite, whose speaker plays into a file) or, without one (headless),
on the demo's living-room media player; it prints what it said and how it ended, and where
the audio is. ``interrupt`` starts a long story there and speaks over it while it still
plays: on the satellite its wake word (as a person would), on the player a second line; the
companion stops the story, whose outcome is then ``interrupted`` with only what was heard kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from .turn import HomeLink, save_audio

PLAYER = "media_player.living_room"
CALL_TIMEOUT = 120.0
INTERRUPT_AFTER = 3.0
"""Seconds into the story before the second line starts."""


async def speak_first(
    link: HomeLink, instruction: str, audio: Path, out: Callable[[str], None] = print
) -> bool:
    """Start a chat on the player; print the line, its outcome and its audio."""
    async with _session(link) as session:
        out(f"home> start_chat on {_target(link)}: {instruction}")
        chat = await _start_chat(session, link, instruction)
        _print_chat(chat, out)
        await _save_played(session, link, audio, out)
    return chat.get("outcome") == "complete"


async def interrupt(link: HomeLink, audio: Path, out: Callable[[str], None] = print) -> bool:
    """Start a story on the player, then a second line over it; print both outcomes."""
    async with _session(link) as session:
        out(f"home> start_chat on {_target(link)}: tell a story")
        story = asyncio.ensure_future(_start_chat(session, link, "Tell them a short story."))
        await asyncio.sleep(INTERRUPT_AFTER)
        if link.satellite and link.speaker:
            # A satellite is spoken over: its wake word while the answer plays (HA refuses a
            # second start_chat on a busy satellite).
            out(f"you>  (the wake word, {INTERRUPT_AFTER:.0f} s into the story)")
            await asyncio.to_thread((Path(link.speaker).parent / "wake").touch)
            first = await story
            _print_chat(first, out)
        else:
            out(f"home> start_chat on {PLAYER} again, {INTERRUPT_AFTER:.0f} s into the story")
            second = await _start_chat(session, link, "Tell them the kitchen lights are still on.")
            first = await story
            _print_chat(first, out)
            _print_chat(second, out)
        await _save_played(session, link, audio, out)
    return first.get("outcome") == "interrupted"


def _target(link: HomeLink) -> str:
    """Return where the companion speaks first: its own satellite, else the player."""
    return link.satellite or PLAYER


def _session(link: HomeLink) -> aiohttp.ClientSession:
    """Return an HTTP session signed in to the demo's HA."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT),
        headers={"Authorization": f"Bearer {link.token}"},
    )


async def _start_chat(
    session: aiohttp.ClientSession, link: HomeLink, instruction: str
) -> dict[str, Any]:
    """Call start_chat for the persona on the player; return the player's chat."""
    async with session.post(
        f"{link.url}/api/services/companion_agent/start_chat?return_response",
        json={"targets": [_target(link)], "persona": link.persona, "instruction": instruction},
    ) as response:
        if response.status != 200:
            return {"outcome": f"refused ({response.status}: {(await response.text())[:200]})"}
        body = await response.json()
    chats = (body.get("service_response") or {}).get("chats") or [{}]
    return dict(chats[0])


def _print_chat(chat: dict[str, Any], out: Callable[[str], None]) -> None:
    """Print what the companion said first and how it ended."""
    out(f"companion> {chat.get('text', '')}")
    out(f"  outcome: {chat.get('outcome')}")


async def _save_played(
    session: aiohttp.ClientSession, link: HomeLink, audio: Path, out: Callable[[str], None]
) -> None:
    """Say where the audio is: the satellite's speaker file, or the player's saved to a file."""
    if link.satellite and link.speaker:
        size = await asyncio.to_thread(_size, Path(link.speaker))
        out(f"  audio:   {link.speaker} ({size} bytes so far: raw 22.05 kHz, 16-bit mono)")
        return
    async with session.get(f"{link.url}/api/states/{PLAYER}") as response:
        state = await response.json() if response.status == 200 else {}
    media = str((state.get("attributes") or {}).get("media_content_id", ""))
    path = urlsplit(media).path
    if not path.startswith("/api/tts_proxy/"):
        out("  audio:   none (the player was handed no speech)")
        return
    saved = await save_audio(session, link.url + path, audio)
    out(f"  audio:   {saved}" if saved else "  audio:   could not be fetched")


def _size(path: Path) -> int:
    """Return a file's size, 0 when it is not there yet."""
    return path.stat().st_size if path.exists() else 0
