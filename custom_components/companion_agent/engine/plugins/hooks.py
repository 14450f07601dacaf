"""``HookManager``: runs hook plugins around a turn, bounded, concurrent and isolated.

- ``before_turn`` runs every ``on_before_turn`` concurrently under one deadline; late hooks
  are cut and the turn goes on without them.
- A conversation's first turn also starts a background pre-read (``on_first_turn``); its
  text is injected once, in the first turn that finds it finished. Hooks the host provides
  for a turn (HA's first-turn briefing, memory) run on the same paths, before and after,
  with the same deadlines.
- ``after_turn`` / ``after_playback`` run in tracked background tasks and never delay the
  answer; ``drain`` and ``close`` let the host wait for or cancel them at unload.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

from ..chars import clean_text
from ..messages import ContextSnippet
from .plugin import Hook, TurnContext

LOGGER = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 1.5
PREREAD_TIMEOUT = 5.0
AFTER_TIMEOUT = 30.0
MAX_SNIPPET_CHARS = 2000
MAX_CONVERSATIONS = 64

type Snippets = tuple[ContextSnippet, ...]


class HookManager:
    """Call hook plugins around turns; a slow or failing hook never breaks the turn."""

    def __init__(
        self,
        hooks: Sequence[Hook],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        preread_timeout: float = PREREAD_TIMEOUT,
        after_timeout: float = AFTER_TIMEOUT,
        max_chars: int = MAX_SNIPPET_CHARS,
    ) -> None:
        """Hold ``hooks`` in order; ``timeout`` bounds the wait before each turn."""
        self._hooks = tuple(hooks)
        self._timeout = timeout
        self._preread_timeout = preread_timeout
        self._after_timeout = after_timeout
        self._max_chars = max_chars
        self._prereads: OrderedDict[str, asyncio.Task[Snippets]] = OrderedDict()
        self._preread_used: OrderedDict[str, None] = OrderedDict()
        self._background: set[asyncio.Task[object]] = set()

    @property
    def pending(self) -> int:
        """Return how many background tasks are still running."""
        return sum(not task.done() for task in self._background)

    def start_preread(self, ctx: TurnContext, extra: Sequence[Hook] = ()) -> None:
        """Start the first-turn pre-read for a conversation, once; returns at once."""
        key = ctx.conversation_id
        hooks = (*self._hooks, *extra)
        if not hooks or key in self._prereads or key in self._preread_used:
            return
        task = asyncio.create_task(self._preread(ctx, hooks), name=f"companion preread {key}")
        self._track(task)
        self._prereads[key] = task
        while len(self._prereads) > MAX_CONVERSATIONS:
            _, oldest = self._prereads.popitem(last=False)
            oldest.cancel()

    async def before_turn(
        self, user_text: str, ctx: TurnContext, extra: Sequence[Hook] = ()
    ) -> Snippets:
        """Return the reference snippets for this turn, waiting at most the timeout.

        ``extra`` are the host's hooks for this turn; they run beside the plugins' hooks.
        """
        if ctx.first_turn:
            self.start_preread(ctx, extra)
        tasks = {
            asyncio.create_task(hook.on_before_turn(user_text, ctx)): hook.plugin_id
            for hook in (*self._hooks, *extra)
        }
        for task in tasks:
            self._track(task)
        preread = self._prereads.get(ctx.conversation_id)
        waiting: set[asyncio.Task[object]] = {*tasks, *([preread] if preread else [])}
        try:
            if waiting:
                await asyncio.wait(waiting, timeout=self._timeout)
        finally:
            for task, plugin_id in tasks.items():
                if not task.done():
                    LOGGER.warning("Hook %s.on_before_turn was cut at its timeout", plugin_id)
                    task.cancel()
        snippets = list(self._take_preread(ctx.conversation_id))
        for task, plugin_id in tasks.items():
            text = _result(task, plugin_id, "on_before_turn")
            if text:
                snippets.append(self._snippet(plugin_id, text))
        return tuple(snippets)

    def after_turn(
        self, user_text: str, assistant_text: str, ctx: TurnContext, extra: Sequence[Hook] = ()
    ) -> asyncio.Task[None]:
        """Run every ``on_after_turn`` (``extra``: the host's too) in the background."""
        return self._spawn(
            "on_after_turn",
            lambda hook: hook.on_after_turn(user_text, assistant_text, ctx),
            extra,
        )

    def after_playback(
        self, user_text: str, assistant_text: str, ctx: TurnContext, extra: Sequence[Hook] = ()
    ) -> asyncio.Task[None]:
        """Run every ``on_after_playback`` in the background once the audio has played."""
        return self._spawn(
            "on_after_playback",
            lambda hook: hook.on_after_playback(user_text, assistant_text, ctx),
            extra,
        )

    async def drain(self, grace: float | None = None) -> None:
        """Wait until background work has finished, or ``grace`` seconds have passed."""
        running = [task for task in self._background if not task.done()]
        if running:
            await asyncio.wait(running, timeout=grace)

    async def close(self, grace: float = 0.0) -> None:
        """Give background work ``grace`` seconds, then cancel what is left and wait for it."""
        if grace > 0:
            await self.drain(grace)
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._prereads.clear()

    def _take_preread(self, conversation_id: str) -> Snippets:
        """Return a finished pre-read once and remember it was used."""
        task = self._prereads.get(conversation_id)
        if task is None or not task.done():
            return ()
        del self._prereads[conversation_id]
        self._preread_used[conversation_id] = None
        while len(self._preread_used) > MAX_CONVERSATIONS * 4:
            self._preread_used.popitem(last=False)
        return () if task.cancelled() else task.result()

    async def _preread(self, ctx: TurnContext, hooks: Sequence[Hook]) -> Snippets:
        """Run every ``on_first_turn`` concurrently under the pre-read deadline."""
        tasks = {asyncio.create_task(hook.on_first_turn(ctx)): hook.plugin_id for hook in hooks}
        for task in tasks:
            self._track(task)
        try:
            await asyncio.wait(tasks, timeout=self._preread_timeout)
        finally:
            for task, plugin_id in tasks.items():
                if not task.done():
                    LOGGER.warning("Hook %s.on_first_turn was cut at its timeout", plugin_id)
                    task.cancel()
        texts = ((pid, _result(task, pid, "on_first_turn")) for task, pid in tasks.items())
        return tuple(self._snippet(pid, text) for pid, text in texts if text)

    def _snippet(self, plugin_id: str, text: str) -> ContextSnippet:
        """Bound a hook's text and label it with its plugin."""
        return ContextSnippet(source=plugin_id, text=clean_text(text, self._max_chars, marker="…"))

    def _spawn(
        self, name: str, call: Callable[[Hook], Awaitable[None]], extra: Sequence[Hook] = ()
    ) -> asyncio.Task[None]:
        """Start one tracked background task that runs ``call`` on every hook, isolated."""
        hooks = (*self._hooks, *extra)

        async def run_all() -> None:
            """Run the hook on every plugin concurrently."""
            await asyncio.gather(*(self._isolated(hook, name, call) for hook in hooks))

        task = asyncio.create_task(run_all(), name=f"companion hooks {name}")
        self._track(task)
        return task

    async def _isolated(
        self, hook: Hook, name: str, call: Callable[[Hook], Awaitable[None]]
    ) -> None:
        """Run one hook under the after-turn deadline; log and swallow its failure."""
        try:
            async with asyncio.timeout(self._after_timeout):
                await call(hook)
        except TimeoutError:
            LOGGER.warning("Hook %s.%s timed out", hook.plugin_id, name)
        except Exception:
            LOGGER.warning("Hook %s.%s failed", hook.plugin_id, name, exc_info=True)

    def _track(self, task: asyncio.Task[object]) -> None:
        """Keep a reference to a background task until it ends and collect its exception."""
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[object]) -> None:
        """Forget a finished task and mark its exception as retrieved."""
        self._background.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved here; the hook's failure is logged where it is used


def _result(task: asyncio.Task[str | None], plugin_id: str, name: str) -> str | None:
    """Return a finished hook's text; a cut or failing hook yields None and is logged."""
    if not task.done() or task.cancelled():
        return None
    err = task.exception()
    if err is not None:
        LOGGER.warning("Hook %s.%s failed", plugin_id, name, exc_info=err)
        return None
    return task.result()
