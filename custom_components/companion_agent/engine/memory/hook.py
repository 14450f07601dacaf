"""``MemoryHook``: one turn's memory, given to the turn runner as a host hook.

Before the turn it writes a lasting instruction and returns the retrieved memories for the
``[memory context]`` block (within the retrieval budget); after the turn it queues the
exchange (the person's words and what they were shown) for extraction. Both are dated when
the turn began (a forget after that wins over them) and say who spoke, on which device, in
which conversation, and which statement they come from: the turn's trace id, so that
forgetting either forgets everything the turn left.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

from ..plugins.plugin import TurnContext
from .companion import CompanionMemory
from .models import MemoryScope
from .provenance import Provenance


class MemoryHook:
    """The memory of one persona for one person (or the household), around one turn."""

    plugin_id = "memory"

    def __init__(
        self,
        memory: CompanionMemory,
        scope: MemoryScope,
        model: str | None,
        *,
        statement: str | None = None,
    ) -> None:
        """Read and write ``scope``; extract with ``model`` (None: the entry's model).

        ``statement`` is the turn's id (its trace id); a new one when it has none.
        """
        self.memory = memory
        self.scope = scope
        self.model = model
        self.began = datetime.now(UTC)
        self.statement = statement or uuid.uuid4().hex

    async def on_first_turn(self, ctx: TurnContext) -> str | None:
        """Add nothing at a conversation's start: every turn reads memory."""
        return None

    async def on_before_turn(self, user_text: str, ctx: TurnContext) -> str | None:
        """Return what this scope remembers about ``user_text``, as quoted data."""
        return await self.memory.before_turn(
            self.scope, user_text, began=self.began, provenance=self._provenance(ctx)
        )

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Queue the exchange for extraction; a turn that failed before a word still counts."""
        await self.memory.after_turn(
            self.scope,
            user_text,
            assistant_text,
            source=ctx.conversation_id,
            model=self.model,
            began=self.began,
            provenance=self._provenance(ctx),
        )

    async def on_after_playback(
        self, user_text: str, assistant_text: str, ctx: TurnContext
    ) -> None:
        """Do nothing after playback."""

    def _provenance(self, ctx: TurnContext) -> Provenance:
        """Return who spoke in the turn, on which device, in which conversation, its id."""
        origin = Provenance(
            via="turn", person=ctx.user_id, device=ctx.device_id, conversation=ctx.conversation_id
        )
        return replace(origin, statement=self.statement)
