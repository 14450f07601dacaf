"""HookManager: concurrent, bounded before-turn hooks; background after-turn hooks; pre-read."""

from __future__ import annotations

import asyncio

import pytest

from custom_components.companion_agent.engine.plugins import (
    HookManager,
    HookPlugin,
    HostServices,
    TurnContext,
)

from .scripted_hooks import CTX, Scripted, context

LATER = TurnContext(conversation_id="conv-1", profile_id="test")


async def test_before_turn_hooks_run_concurrently(host: HostServices) -> None:
    """Two hooks that each wait for the other both finish: they run at the same time."""
    barrier = asyncio.Barrier(2)
    log: list[str] = []

    class Meeting(HookPlugin):
        """Waits at the barrier, then answers."""

        async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
            """Meet the other hook."""
            await barrier.wait()
            log.append(self.plugin_id)
            return f"from {self.plugin_id}"

    hooks = HookManager([Meeting(context("a", host)), Meeting(context("b", host))], timeout=5)
    snippets = await hooks.before_turn("hi", LATER)
    assert [(s.source, s.text) for s in snippets] == [("a", "from a"), ("b", "from b")]
    assert sorted(log) == ["a", "b"]


async def test_slow_hook_is_cut_at_its_timeout(host: HostServices) -> None:
    """A hook that never answers is cancelled at the deadline; the fast one still counts."""
    log: list[str] = []
    never = asyncio.Event()
    slow = Scripted("slow", host, log, text="too late", gate=never)
    fast = Scripted("fast", host, log, text="in time")
    hooks = HookManager([slow, fast], timeout=0.05)
    async with asyncio.timeout(5):
        snippets = await hooks.before_turn("hi", LATER)
    assert [s.text for s in snippets] == ["in time"]
    await hooks.close()
    assert "slow cut" in log


async def test_failing_hook_is_isolated(
    host: HostServices, caplog: pytest.LogCaptureFixture
) -> None:
    """A raising hook is logged and left out; the others still inject and run after the turn."""
    log: list[str] = []
    hooks = HookManager(
        [Scripted("bad", host, log, fail=True), Scripted("good", host, log, text="fine")]
    )
    snippets = await hooks.before_turn("hi", LATER)
    assert [s.source for s in snippets] == ["good"]
    await hooks.after_turn("hi", "answer", LATER)
    assert "good after end: answer" in log
    assert "Hook bad.on_before_turn failed" in caplog.text
    assert "Hook bad.on_after_turn failed" in caplog.text


async def test_after_turn_runs_in_the_background(host: HostServices) -> None:
    """after_turn returns at once; the hook finishes only when the test lets it."""
    log: list[str] = []
    release = asyncio.Event()
    hooks = HookManager([Scripted("memory", host, log, after_gate=release)])
    task = hooks.after_turn("hi", "answer", LATER)
    log.append("answer delivered")
    await asyncio.sleep(0)
    assert not task.done()
    assert hooks.pending == 1
    release.set()
    await hooks.drain(5)
    assert log == ["answer delivered", "memory after start", "memory after end: answer"]
    assert hooks.pending == 0


async def test_after_playback_is_called(host: HostServices) -> None:
    """The playback code's call reaches every hook."""
    log: list[str] = []
    hooks = HookManager([Scripted("diary", host, log)])
    await hooks.after_playback("hi", "spoken answer", LATER)
    assert log == ["diary played: spoken answer"]


async def test_close_cancels_background_work(host: HostServices) -> None:
    """At unload, hooks still waiting are cancelled and nothing is left running."""
    log: list[str] = []
    hooks = HookManager([Scripted("memory", host, log, after_gate=asyncio.Event())])
    task = hooks.after_turn("hi", "answer", LATER)
    await asyncio.sleep(0)
    await hooks.close(grace=0.01)
    assert task.cancelled() or task.done()
    assert hooks.pending == 0
    assert "memory after end: answer" not in log


async def test_preread_is_injected_once(host: HostServices) -> None:
    """The first-turn pre-read joins the first turn's context and no later one."""
    log: list[str] = []
    hooks = HookManager([Scripted("profile", host, log, first="The user's name is Ada.")])
    hooks.start_preread(CTX)
    first = await hooks.before_turn("hi", CTX)
    second = await hooks.before_turn("and now?", LATER)
    again = await hooks.before_turn("hi", CTX)
    assert [s.text for s in first] == ["The user's name is Ada."]
    assert second == ()
    assert again == ()


async def test_late_preread_waits_for_a_later_turn(host: HostServices) -> None:
    """A pre-read that misses the first turn's deadline is injected in the next turn, once."""
    log: list[str] = []
    ready = asyncio.Event()
    hooks = HookManager(
        [Scripted("calendar", host, log, first="Dentist at 15:00.", gate=ready)], timeout=0.05
    )
    assert await hooks.before_turn("hi", CTX) == ()
    ready.set()
    await asyncio.sleep(0)
    second = await hooks.before_turn("what's on?", LATER)
    assert [s.text for s in second] == ["Dentist at 15:00."]
    assert await hooks.before_turn("ok", LATER) == ()


async def test_long_hook_text_is_bounded(host: HostServices) -> None:
    """A hook cannot flood the prompt: its text is cut to max_chars."""
    hooks = HookManager([Scripted("chatty", host, [], text="x" * 500)], max_chars=100)
    (snippet,) = await hooks.before_turn("hi", LATER)
    assert len(snippet.text) == 100
    assert snippet.text.endswith("…")
