"""Gates that test plugins wait on, so a test decides when a hook or tool goes on.

User plugins written by the HA tests import ``GATES`` and call ``Gate.pass_through`` in the
hook or tool the test wants to hold; the test awaits ``reached``, acts, then sets ``opened``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass(slots=True)
class Gate:
    """Events one plugin sets or waits for, and the order in which things happened."""

    reached: asyncio.Event = field(default_factory=asyncio.Event)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    passed: asyncio.Event = field(default_factory=asyncio.Event)
    cut: asyncio.Event = field(default_factory=asyncio.Event)
    log: list[str] = field(default_factory=list)

    async def pass_through(self, what: str) -> None:
        """Say the gate was reached, wait until it opens, and note a cut or a pass."""
        self.log.append(f"{what} reached")
        self.reached.set()
        try:
            await self.opened.wait()
        except asyncio.CancelledError:
            self.log.append(f"{what} cut")
            self.cut.set()
            raise
        self.log.append(f"{what} passed")
        self.passed.set()


GATES: dict[str, Gate] = {}
