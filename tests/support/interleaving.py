"""A deterministic scheduler for a race of two sides: every atomic step of each is gated.

A test names the awaits that are atomic steps — a SQLite transaction, a model's answer, a
call into mem0 or over Bolt — with ``Interleaving.gate``: each call then waits at its side's
gate until the test allows that side so many steps (``allow``), so a test chooses exactly
where one side stops and the other runs. A step's side is the task that takes it: the tasks
a test names (``name``) or else ``rest`` (a queue's worker, say). While the scheduler is
not ``active`` every call passes straight through (setting up, closing).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

REST = "rest"
WAIT = 20.0
"""Seconds a test waits for a side to reach its gate before it fails."""

type Gated = Callable[..., Awaitable[Any]]


class Interleaving:
    """Two (or more) sides that take gated steps only as far as the test allows."""

    def __init__(self) -> None:
        """Start inactive, with no side allowed a step."""
        self.active = False
        self.taken: Counter[str] = Counter()
        self.steps: dict[str, list[str]] = {}
        self._allowed: dict[str, float] = {}
        self._waiting: Counter[str] = Counter()
        self._sides: dict[asyncio.Task[Any], str] = {}
        self._where: dict[str, str] = {}
        self._changed = asyncio.Condition()

    def gate(self, monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> None:
        """Make every call of ``owner.name`` (a coroutine method) one gated step."""
        original: Gated = getattr(owner, name)
        label = f"{owner.__name__}.{name}"

        async def gated(this: object, *args: object, **kwargs: object) -> object:
            """Wait at the caller's gate, then make the call."""
            await self._step(label)
            return await original(this, *args, **kwargs)

        monkeypatch.setattr(owner, name, gated)

    def name(self, task: asyncio.Task[Any], side: str) -> None:
        """Count the steps ``task`` takes as ``side``'s."""
        self._sides[task] = side

    async def allow(self, side: str, steps: float) -> None:
        """Let ``side`` take up to ``steps`` steps in all (``inf``: as many as it takes)."""
        async with self._changed:
            self._allowed[side] = steps
            self._changed.notify_all()

    async def stopped(self, side: str, task: asyncio.Task[Any]) -> str | None:
        """Wait until ``side`` waits at its gate with every allowed step taken, and return
        where; or until ``task`` (the side's) ends first: then None."""

        async def waiting() -> str:
            """Wait for the side at its gate."""
            async with self._changed:
                await self._changed.wait_for(
                    lambda: self._waiting[side] > 0 and self.taken[side] >= self._allowed[side]
                )
            return self._where[side]

        waiter = asyncio.create_task(waiting())
        try:
            async with asyncio.timeout(WAIT):
                await asyncio.wait([waiter, task], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not waiter.done():
                waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
        return None if waiter.cancelled() else waiter.result()

    async def _step(self, label: str) -> None:
        """Take one step of the current task's side when the test allows it."""
        if not self.active:
            return
        task = asyncio.current_task()
        side = self._sides.get(task, REST) if task is not None else REST
        async with self._changed:
            self._waiting[side] += 1
            self._where[side] = label
            self._changed.notify_all()
            await self._changed.wait_for(lambda: self.taken[side] < self._allowed.get(side, 0))
            self._waiting[side] -= 1
            self.taken[side] += 1
            self.steps.setdefault(side, []).append(label)
            self._changed.notify_all()
