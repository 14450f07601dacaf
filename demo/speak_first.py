"""The companion speaks first, and is interrupted: ``companion_agent.start_chat`` on a player.

``speak_first`` asks the persona to start talking on the demo's living-room media player
(a satellite once the companion's own has landed), prints what it said and how it ended,
and saves the audio the player was handed. ``interrupt`` starts a long story there, then,
while it still streams, a second line on the same player: HA's companion stops the first
turn, whose outcome is then ``interrupted`` with only what could be heard kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from .turn import HomeLink, save_audio

TARGET = "media_player.living_room"
CALL_TIMEOUT = 120.0
INTERRUPT_AFTER = 3.0
"""Seconds into the story before the second line starts."""


async def speak_first(
    link: HomeLink, instruction: str, audio: Path, out: Callable[[str], None] = print
) -> bool:
    """Start a chat on the player; print the line, its outcome and its audio."""
    async with _session(link) as session:
        out(f"home> start_chat on {TARGET}: {instruction}")
        chat = await _start_chat(session, link, instruction)
        _print_chat(chat, out)
        await _save_played(session, link, audio, out)
    return chat.get("outcome") == "complete"


async def interrupt(link: HomeLink, audio: Path, out: Callable[[str], None] = print) -> bool:
    """Start a story on the player, then a second line over it; print both outcomes."""
    async with _session(link) as session:
        out(f"home> start_chat on {TARGET}: tell a story")
        story = asyncio.ensure_future(_start_chat(session, link, "Tell them a short story."))
        await asyncio.sleep(INTERRUPT_AFTER)
        out(f"home> start_chat on {TARGET} again, {INTERRUPT_AFTER:.0f} s into the story")
        second = await _start_chat(session, link, "Tell them the kitchen lights are still on.")
        first = await story
        _print_chat(first, out)
        _print_chat(second, out)
        await _save_played(session, link, audio, out)
    return first.get("outcome") == "interrupted"


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
        json={"targets": [TARGET], "persona": link.persona, "instruction": instruction},
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
    """Save the audio the player was last handed (HA's TTS proxy URL) to a file."""
    async with session.get(f"{link.url}/api/states/{TARGET}") as response:
        state = await response.json() if response.status == 200 else {}
    media = str((state.get("attributes") or {}).get("media_content_id", ""))
    path = urlsplit(media).path
    if not path.startswith("/api/tts_proxy/"):
        out("  audio:   none (the player was handed no speech)")
        return
    saved = await save_audio(session, link.url + path, audio)
    out(f"  audio:   {saved}" if saved else "  audio:   could not be fetched")
