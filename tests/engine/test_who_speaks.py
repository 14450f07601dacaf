"""Who speaks, through real turns: a voice's yes to a held unlock, and "that wasn't me".

Real peers: the engine with HA's default guard rules, the openai SDK against the local
server, the exchange store and the embedded SQLite memory in a temporary folder. A line
the engine says without a model is checked by the model requests that did not happen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from custom_components.companion_agent.agent.guard_rules import DEFAULT_RULES
from custom_components.companion_agent.engine.engine import Engine, EngineSettings
from custom_components.companion_agent.engine.guard.policy import Target
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.memory.backends import MemoryConfig
from custom_components.companion_agent.engine.memory.companion import CompanionMemory
from custom_components.companion_agent.engine.memory.models import MemoryRecord, MemoryScope
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool
from custom_components.companion_agent.engine.turn.disown import is_disowning
from custom_components.companion_agent.engine.turn.request import Persona, TurnRequest
from custom_components.companion_agent.engine.voices import Speaker
from tests.engine.common import ask, finish
from tests.support.chat_requests import user_text
from tests.support.lines import ENGLISH
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

CHILD = Speaker(heard=True, user_id="tom", name="Tom", role="child", score=0.9)
BOB = Speaker(heard=True, user_id="bob", name="Bob", role="adult", score=0.9, may_approve=True)
UNLOCK_CALL = ("c1", "lock_unlock", '{"entity_id": "lock.front_door"}')
PRODUCTION = {"environment": "production"}
SAID = "Remember that my locker code is 7788."
EXTRACTED = (
    '{"facts": ["The locker code is 7788."], "conclusions": [], "entities": ["locker"],'
    ' "relations": []}'
)


class Doors:
    """The host's view of one lock: the unlock tool and what it acts on."""

    def __init__(self) -> None:
        """Start with nothing unlocked."""
        self.unlocked: list[str] = []

    async def resolve(self, tool_id: str, args: JSONObject, ctx: ToolContext) -> Sequence[Target]:
        """Return the lock the call names, with the action it takes."""
        entity_id = str(args.get("entity_id", ""))
        return (Target(entity_id=entity_id, domain="lock", action="unlock", name="Front door"),)

    async def check(
        self, tool_id: str, args: JSONObject, targets: Sequence[Target], ctx: ToolContext
    ) -> str | None:
        """Allow every call."""
        return None

    def tool(self) -> Tool:
        """Return the unlock tool, which records what it unlocked."""

        async def unlock(args: JSONObject, ctx: ToolContext) -> JSONValue:
            """Unlock (in the log)."""
            self.unlocked.append(str(args["entity_id"]))
            return "unlocked"

        schema: JSONObject = {
            "type": "object",
            "properties": {"entity_id": {"type": "string"}},
            "required": ["entity_id"],
        }
        spec = ToolSpec(name="lock_unlock", description="Unlock a lock", parameters=schema)
        return Tool(spec=spec, handler=unlock)


def at_door(
    persona: Persona, doors: Doors, text: str, speaker: Speaker | None = None
) -> TurnRequest:
    """Return a turn in ``conv-1`` with the door tool; a recognised voice's turn is theirs."""
    request = ask(persona, text, host_tools=(doors.tool(),), host_targets=doors, speaker=speaker)
    if speaker is not None and speaker.user_id is not None:
        return replace(request, context=replace(request.context, user_id=speaker.user_id))
    return request


async def test_a_childs_yes_is_refused_out_loud_and_an_adults_runs_the_unlock(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """Tom's yes: the refusal line, no model, the unlock still waits; Bob's yes runs it once."""
    engine = Engine(replace(settings, rules=DEFAULT_RULES))
    await engine.start()
    persona, doors = engine.persona("p1", "default"), Doors()
    llm_server.script(Reply.tool_calls(UNLOCK_CALL), Reply.text("Shall I unlock it?"))
    await finish(engine.start_turn(at_door(persona, doors, "Unlock the front door")))
    [token] = engine.pending_confirmations()
    assert token.needs_voice
    asked = len(llm_server.requests)
    text, result = await finish(engine.start_turn(at_door(persona, doors, "yes", CHILD)))
    assert text == ENGLISH.voice_refused
    assert result.outcome == "complete"
    assert len(llm_server.requests) == asked
    assert engine.pending_confirmation(token.token_id) is not None
    assert doors.unlocked == []
    llm_server.script(Reply.text("It's open."))
    text, result = await finish(engine.start_turn(at_door(persona, doors, "Yes please.", BOB)))
    assert text == "It's open."
    assert '"status":"executed"' in user_text(llm_server.requests[-1]).replace(" ", "")
    assert [(e.tool_name, e.status) for e in result.tool_calls] == [("lock_unlock", "completed")]
    assert doors.unlocked == ["lock.front_door"]
    assert engine.pending_confirmations() == []
    await engine.close()


async def test_a_persona_without_voice_approval_takes_its_persons_typed_yes(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """Voice approval off: the unlock needs no voice, and Alice's yes runs it, host silent."""
    engine = Engine(replace(settings, rules=DEFAULT_RULES))
    await engine.start()
    persona, doors = engine.persona("p1", "default", voice_approval=False), Doors()
    llm_server.script(Reply.tool_calls(UNLOCK_CALL), Reply.text("Shall I?"), Reply.text("Done."))
    await finish(engine.start_turn(at_door(persona, doors, "Unlock the front door")))
    [token] = engine.pending_confirmations()
    assert not token.needs_voice
    text, _ = await finish(engine.start_turn(at_door(persona, doors, "yes")))
    assert text == "Done."
    assert doors.unlocked == ["lock.front_door"]
    await engine.close()


async def records_of(memory: CompanionMemory, scope: MemoryScope) -> list[MemoryRecord]:
    """Return the current records of exactly ``scope``."""
    page, _ = await memory.export([scope])
    return [r for r in page.records if r.scope == scope and r.current]


async def test_that_wasnt_me_gives_the_exchange_and_its_memories_to_the_household(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """The last exchange taken as Alice's, and what it fed her memory, become the household's;
    the line is said without a model; said again, nothing of hers is left to take back."""
    engine = Engine(replace(settings, memory=MemoryConfig()))
    assert await engine.start() is None
    memory = engine.memory
    assert memory is not None
    persona = engine.persona("p1", "default")
    alice, household = memory.scope("p1", "alice"), memory.scope("p1", None)
    llm_server.script(Reply.text("Noted."))
    llm_server.script_structured(Reply.text(EXTRACTED))
    await finish(engine.start_turn(ask(persona, SAID)))
    assert await memory.wait_idle(10)
    statement = f"t-{SAID}"
    before = sorted(r.text for r in await records_of(memory, alice))
    assert len(before) == 2  # the lasting instruction, and the extracted fact
    assert all(r.provenance.statement == statement for r in await records_of(memory, alice))
    asked = len(llm_server.requests)
    text, _ = await finish(engine.start_turn(ask(persona, "That wasn't me.")))
    assert text == ENGLISH.disowned
    assert len(llm_server.requests) == asked
    assert await memory.wait_idle(10)
    assert await records_of(memory, alice) == []
    moved = await records_of(memory, household)
    assert sorted(r.text for r in moved) == before
    assert {r.provenance.statement for r in moved} == {statement}
    assert [t.user for t in await memory.window(alice).turns()] == []
    assert [t.user for t in await memory.window(household).turns()] == [SAID]
    again, _ = await finish(engine.start_turn(ask(persona, "那不是我")))
    assert again == ENGLISH.nothing_disowned
    assert len(llm_server.requests) == asked
    assert sorted(r.text for r in await records_of(memory, household)) == before
    await engine.close()


async def test_that_wasnt_me_before_extraction_queues_it_for_the_household(
    settings: EngineSettings, llm_server: LLMServer
) -> None:
    """Nothing extracted yet (the outbox waits): Alice's waiting write goes, the household's
    extraction of the same exchange waits instead."""
    engine = Engine(replace(settings, memory=MemoryConfig()))
    await engine.start(drain=False)
    memory = engine.memory
    assert memory is not None
    persona = engine.persona("p1", "default")
    llm_server.script(Reply.text("Blue it is."))
    await finish(engine.start_turn(ask(persona, "My locker is blue.")))
    await memory.wait_idle(1.0)  # its exchange is queued (the outbox is not drained: False)
    [waiting] = await memory.outbox.entries()
    assert waiting.payload["scope"] == {"agent_id": "p1", "owner": "user:alice", **PRODUCTION}
    text, _ = await finish(engine.start_turn(ask(persona, "that was not me")))
    assert text == ENGLISH.disowned
    await memory.wait_idle(1.0)
    [queued] = await memory.outbox.entries()
    assert queued.payload["scope"] == {"agent_id": "p1", "owner": "household", **PRODUCTION}
    assert "My locker is blue." in str(queued.payload)
    await engine.close()


def test_only_the_whole_utterance_disowns() -> None:
    """The phrases, in English and Chinese, folded; a request that starts alike does not."""
    for said in ("That wasn't me!", "that wasnt me", "Wasn’t me.", "THAT WAS NOT ME", "那不是我。",
                 "不是我说的", "刚才不是我"):  # fmt: skip
        assert is_disowning(said), said
    for said in ("that wasn't me who left the door open", "was it me?", "不是我", "me"):
        assert not is_disowning(said), said
