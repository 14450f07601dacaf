"""``Engine``: the one place the parts are put together, from one frozen ``EngineSettings``.

A host builds one ``Engine``, ``await engine.start()`` (plugins and profiles are loaded off
the loop, memory opened), builds a ``Persona`` per persona with ``persona()`` and starts
turns with ``start_turn(request) -> Turn``. The engine owns the guard and its held calls,
the audit log and the usage counters, the turn runner, every persona's conversations and
models (``personas.py``), memory, AI tasks (``tasks.py``), every turn's speech (``speech``)
and the follow-ups of conversations the companion started. ``close()`` lets turns finish
(bounded), writes and closes everything; ``stop()`` writes everything when the host stops
without unloading. Either ends every held call out loud (``Confirmations.close``) and
leaves what its people have not heard yet in ``settings.notices_file`` for the next
engine's ``start``.

Its data folder holds ``audit.jsonl``, ``exchanges.db`` (conversations and recent windows:
one store, two views; old JSON folders read in once) and memory's files (``backends``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime

from .audit import AuditLog, AuditSinks
from .errors import CompanionError
from .guard.confirmations import (
    UNRUN_REASONS,
    ConfirmationResult,
    Confirmations,
    ConfirmationStatus,
    ConfirmationToken,
    read_kept,
    write_kept,
)
from .guard.executor import Guard
from .llm.adapter import ChatModels, ModelCall
from .llm.roles import RoleChoice, RoleChoices
from .memory.backends import MemoryProblem, open_memory, unreachable
from .memory.companion import CompanionMemory
from .memory.hook import MemoryHook
from .memory.models import Forget
from .messages import AssistantMessage
from .personas import FALLBACK_PROFILE, Personas, PersonaSetup
from .pipeline import speech_config, spoken_sentences
from .plugins import Library, LoadProblem, PolicyLevel, load_library
from .settings import EngineSettings
from .speech.turn_speech import SpeechTurns, TurnSpeech
from .tasks import TaskRequest, TaskResult, TaskRunner, TaskTools
from .tools.contract import ToolContext
from .turn.disown import Disowned, is_disowning
from .turn.exchanges import ExchangeStore, LegacyFolders, owner_of
from .turn.follow_ups import FollowUps
from .turn.handle import Turn
from .turn.limits import TurnLimits
from .turn.request import Persona, TurnRequest
from .turn.runner import TurnRunner
from .turn.usage import UsageCounters

__all__ = [
    "UNRUN_REASONS",
    "ConfirmationResult",
    "ConfirmationStatus",
    "ConfirmationToken",
    "Disowned",
    "Engine",
    "EngineSettings",
    "MemoryProblem",
    "ModelCall",
    "PersonaSetup",
    "RoleChoice",
    "RoleChoices",
    "TaskRequest",
    "TaskResult",
    "TaskTools",
    "TurnLimits",
]

LOGGER = logging.getLogger(__name__)

AUDIT_FILE = "audit.jsonl"
EXCHANGES_FILE = "exchanges.db"
TURN_GRACE = 5.0
FLUSH_GRACE = 10.0
MEMORY_CLOSE_GRACE = 5.0


class Engine:
    """The companion engine of one host: turns, their guard, their memory, their files."""

    def __init__(self, settings: EngineSettings) -> None:
        """Build every part from ``settings``; nothing is read or opened until ``start``."""
        self.settings = settings
        self._audit = AuditLog(settings.data_dir / AUDIT_FILE)
        self._usage = UsageCounters()
        audit = AuditSinks(self._audit, self._usage)
        self._confirmations = Confirmations(
            ttl=settings.confirm_ttl, audit=audit, listener=settings.on_confirmation
        )
        guard = Guard(confirmations=self._confirmations, audit=audit, rules=settings.rules)
        self._runner = TurnRunner(guard, self._usage, settings.limits)
        self._models = ChatModels(settings.model, settings.http, settings.on_model_round)
        self._tasks = TaskRunner(settings.model, self._models, guard)
        here, bad = settings.data_dir, settings.on_bad_history
        old = LegacyFolders(conversations=here / "conversations", windows=here / "recent")
        self._exchanges = ExchangeStore(here / EXCHANGES_FILE, legacy=old, on_corrupt=bad)
        self._follow_ups = FollowUps()
        self._speech = SpeechTurns()
        self._library = Library()
        self._personas = Personas(self._models, settings.model)
        self._memory: CompanionMemory | None = None
        self._closed = False

    @property
    def library(self) -> Library:
        """Return the plugins and profiles loaded last."""
        return self._library

    @property
    def problems(self) -> list[LoadProblem]:
        """Return every plugin and profile problem: the library's and each persona's."""
        return [*self._library.problems, *self._personas.problems]

    @property
    def usage(self) -> UsageCounters:
        """Return the tokens and tool calls counted since the engine was built."""
        return self._usage

    @property
    def memory(self) -> CompanionMemory | None:
        """Return the open memory, or None (none configured, or it could not open)."""
        return self._memory

    @property
    def speech(self) -> SpeechTurns:
        """Return the speech of recent turns: their sentences, voices and audio timelines."""
        return self._speech

    def speech_text(self, text: AsyncIterator[str]) -> AsyncIterator[str]:
        """Return the sentences to speak of a text from no turn: the default profile's tags."""
        tags = (self._library.profiles.default or FALLBACK_PROFILE).output.tags
        return spoken_sentences(text, speech_config(tags))

    async def start(self, *, drain: bool = True) -> MemoryProblem | None:
        """Load plugins and profiles (off the loop) and open memory; say what did not answer.

        A memory that cannot open leaves memory off; one that opened but does not answer
        yet stays on (writes wait in its outbox). Turns answer either way. ``drain`` False
        leaves the outbox waiting (an engine opened only to forget). What the engine before
        this one left untold of its held calls is read first.
        """
        if (notices := self.settings.notices_file) is not None:
            self._confirmations.restore(await asyncio.to_thread(read_kept, notices))
        self._library = await asyncio.to_thread(load_library, self.settings.library_roots)
        self._personas.bind_all(self._library, self.settings.personas)
        config = self.settings.memory
        if config is None:
            return None
        settings = self.settings
        try:
            memory = await open_memory(
                config,
                settings.data_dir,
                model=settings.model,
                http=settings.http,
                window_tokens=settings.limits.history_tokens,
                exchanges=self._exchanges,
                on_corrupt=settings.on_bad_memory_file,
                roles=self._personas.background,
            )
        except (CompanionError, OSError) as err:
            return MemoryProblem(detail=str(err), opened=False)
        self._memory = memory
        await memory.start(drain=drain)
        if (problem := await unreachable(memory)) is not None:
            return MemoryProblem(detail=problem, opened=True)
        return None

    async def reload(self) -> None:
        """Load plugins and profiles again (off the loop) for new personas; keep good ones."""
        roots = self.settings.library_roots
        self._library = await asyncio.to_thread(load_library, roots, self._library)

    def persona(
        self,
        persona_id: str,
        profile_id: str,
        roles: RoleChoices | None = None,
        *,
        kept: Mapping[str, PolicyLevel] | None = None,
        voice_approval: bool = True,
    ) -> Persona:
        """Build a persona snapshot: its profile, rules, plugins and models.

        Each role's model is ``roles``' choice, else the profile's, else the host's. A
        profile that cannot be read gives way to the default one; its rules are then
        ``kept``, the last good marks the host kept of it, else every action waits for a
        yes (``personas.py``). ``voice_approval`` False: no held call of this persona
        waits for an adult's voice (``PersonaRules.voice_approval``).
        """
        setup = PersonaSetup(
            profile_id=profile_id,
            roles=roles or RoleChoices(),
            kept=kept,
            voice_approval=voice_approval,
        )
        return self._personas.build(self._library, self.settings.host, persona_id, setup)

    def start_turn(self, request: TurnRequest) -> Turn:
        """Start a turn in a task of its own and return its handle at once.

        The turn continues its conversation (or, on a satellite that has just asked the
        person something, that conversation). A person's turn also reads and feeds memory:
        its rolling window is the history it is sent (unless it follows up a conversation
        the companion started), and it remembers the exchange; a proactive turn does not.
        "That wasn't me" (``disown``) is answered without a model and remembered by nobody.
        """
        ctx = request.context
        now = asyncio.get_running_loop().time()
        history_id = self._follow_ups.history_id(ctx.conversation_id, request.satellite_id, now)
        memory = self._memory
        remembered = (
            memory is not None and request.initiator == "person" and not is_disowning(request.text)
        )
        windowed = remembered and history_id == ctx.conversation_id
        history = self._exchanges.conversation(
            ctx.agent_id, history_id, owner=owner_of(ctx.user_id), windowed=windowed
        )
        model = request.persona.memory_key or request.persona.profile.models.memory

        async def disown(turn_ctx: ToolContext) -> Disowned:
            """Take back the last exchange of this conversation stored as the person's."""
            return await self.disown(turn_ctx.agent_id, history_id, turn_ctx.user_id, model=model)

        if memory is None or not remembered:
            turn = self._runner.start(request, history, disown=disown)
        else:
            scope = memory.scope(ctx.agent_id, ctx.user_id)
            window = memory.window(scope, model) if windowed else None
            hook = MemoryHook(memory, scope, model, statement=ctx.trace_id)
            turn = self._runner.start(
                replace(request, host_hooks=(*request.host_hooks, hook)),
                history,
                window,
                disown=disown,
            )
        speech = self._speech.follow(
            TurnSpeech(turn.trace_id, turn.guessed_speech, waiting=turn.waiting_for_tools)
        )
        turn.on_cancel(lambda _reason: speech.stop())
        turn.on_finished(lambda result: self._speech.ended(turn.trace_id, result.spoken))
        return turn

    async def disown(
        self,
        persona_id: str,
        conversation_id: str,
        user_id: str | None,
        *,
        model: str | None = None,
    ) -> Disowned:
        """ "That wasn't me": give the household the last exchange stored as ``user_id``'s.

        The conversation's newest exchange of the person (their own "that wasn't me" and
        proactive turns passed over) becomes the household's, in its window too, and what
        it fed into their memory moves to the household's (``CompanionMemory.disown``;
        ``model`` extracts it again when its extraction had not run yet). Nobody named
        (``user_id`` None), or nothing of theirs: nothing moves.
        """
        if not user_id:
            return Disowned()
        turn = await self._exchanges.disown(persona_id, conversation_id, user_id)
        if turn is None:
            return Disowned()
        moved = 0
        if (memory := self._memory) is not None and turn.trace_id:
            said = "".join(m.content for m in turn.messages if isinstance(m, AssistantMessage))
            at = datetime.fromtimestamp(turn.began or turn.time, UTC)
            scope = memory.scope(persona_id, user_id)
            moved = await memory.disown(
                scope, turn.trace_id, said=(turn.user, said), model=model, at=at
            )
        LOGGER.info("An exchange of %s was disowned and is now the household's", persona_id)
        return Disowned(trace_id=turn.trace_id, memories=moved)

    async def generate(self, request: TaskRequest) -> TaskResult:
        """Answer an AI task (``tasks.py``); raise ``TaskError`` when it gets no usable answer."""
        return await self._tasks.run(request)

    def expect_answer(self, satellite_id: str, conversation_id: str) -> None:
        """Say ``satellite_id`` just asked the person something in ``conversation_id``.

        Its next turn, within a minute, continues that conversation.
        """
        now = asyncio.get_running_loop().time()
        self._follow_ups.started(satellite_id, conversation_id, now)

    def pending_confirmation(self, token_id: str) -> ConfirmationToken | None:
        """Return the held call waiting under ``token_id``, if any."""
        return self._confirmations.peek(token_id)

    def pending_confirmations(self) -> list[ConfirmationToken]:
        """Return every held call still waiting for its answer, oldest first."""
        return self._confirmations.tokens.live()

    async def confirm(
        self, token_id: str, *, approve: bool, user_id: str | None, adult: bool = True
    ) -> ConfirmationResult:
        """Approve or deny a held call from outside a conversation (a dashboard, a phone).

        ``adult`` False (the host knows the person approving is enrolled as a child): a
        call that needs an adult's voice (``ConfirmationToken.needs_voice``) is refused
        (``ConfirmationRefusedError``, reason ``not_adult``) and keeps waiting; a no still
        declines it.
        """
        return await self._confirmations.resolve(
            token_id, approve=approve, user_id=user_id, adult=adult
        )

    async def diagnostics(self) -> dict[str, object]:
        """Return what support needs to see: what is loaded, counted, held and open."""
        return {
            "profiles": sorted(profile.id for profile in self._library.profiles),
            "plugins": sorted(self._library.catalog.plugins),
            "problems": [str(problem) for problem in self.problems],
            "usage": self._usage.snapshot(),
            "pending_confirmations": self._confirmations.pending_count(),
            "conversations": await self._exchanges.counts(),
            "memory": await self._memory.counts() if self._memory is not None else None,
            "models": self._personas.background.redacted_settings(),
        }

    async def prune(self, retention: float) -> int:
        """Delete exchanges whose conversation and window were idle longer than ``retention``.

        A closed engine prunes nothing (a prune timer may fire while its host unloads).
        """
        return 0 if self._closed else await self._exchanges.prune(retention)

    async def forget_persona(self, persona_id: str) -> int:
        """Forget everything of a persona: memories, graph, queued writes, exchanges."""
        if (memory := self._memory) is not None:
            gone = Forget(agent_id=persona_id, environment=memory.settings.environment)
            return await memory.forget(gone)
        return await self._exchanges.forget(persona_id=persona_id)

    async def flush(self, grace: float = FLUSH_GRACE) -> None:
        """Write what is still in memory (audit records, amended turns), ``grace`` s at most."""
        await self._runner.flush(grace)
        await self._audit.flush(grace)

    async def stop(self) -> None:
        """End held calls, write everything, close memory (bounded) and the exchanges.

        The host is stopping without unloading: a held call ends out loud here.
        """
        await self._end_held_calls()
        await self.flush()
        await self._close_memory()
        self._closed = True
        await self._exchanges.close()

    async def close(self) -> None:
        """Let running turns finish (bounded), then write and close everything."""
        self._closed = True
        await self._runner.drain(TURN_GRACE)
        await self._end_held_calls()
        await self.flush()
        await self._close_memory()
        await self._exchanges.close()
        await self._audit.close()
        self._speech.close()

    async def _end_held_calls(self) -> None:
        """End every waiting call unrun (audited, announced, noticed); keep what is untold."""
        self._confirmations.close()
        if (notices := self.settings.notices_file) is None:
            return
        try:
            await asyncio.to_thread(write_kept, notices, self._confirmations.kept())
        except OSError as err:
            LOGGER.warning("Cannot keep the notices of held calls in %s: %s", notices, err)

    async def _close_memory(self) -> None:
        """Let the outbox drain a little, then close the store (bounded)."""
        if (memory := self._memory) is not None:
            self._memory = None
            await memory.close(MEMORY_CLOSE_GRACE)
