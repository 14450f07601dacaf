"""Approval by voice: a held unlock waits for an enrolled adult's yes; anyone's no declines it.

The guard is HA's (its default rules), every part real: the audit file, the house, the
consent matcher. Who speaks is what the host says (``Speaker``): a child's voice, a voice
that matched nobody, an adult's, a signed-in person typing, or nothing said at all.
"""

from __future__ import annotations

import asyncio

import pytest

from custom_components.companion_agent.agent.guard_rules import DEFAULT_RULES
from custom_components.companion_agent.engine.audit import AuditSinks
from custom_components.companion_agent.engine.errors import ConfirmationRefusedError
from custom_components.companion_agent.engine.guard.confirmations import (
    ConfirmationToken,
    ConsentReply,
)
from custom_components.companion_agent.engine.guard.executor import GuardedExecutor
from custom_components.companion_agent.engine.guard.policy import GuardPolicy, PolicyRule
from custom_components.companion_agent.engine.json_types import JSONObject
from custom_components.companion_agent.engine.voices import HOUSEHOLD_VOICE, Speaker

from .conftest import CTX, Rig, call

UNLOCK = call("lock_unlock", '{"entity_id": "lock.front_door"}')
DISARM = call("alarm_disarm", '{"entity_id": "alarm_control_panel.home"}', "call_3")
LIGHT = call("light_turn_on", '{"entity_id": "light.kitchen"}', "call_2")
CHILD = Speaker(heard=True, user_id="tom", name="Tom", role="child", score=0.91)
ADULT = Speaker(heard=True, user_id="bob", name="Bob", role="adult", score=0.9, may_approve=True)
ALICE_TYPING = Speaker(heard=False, user_id="alice", may_approve=True)


def voiced(rig: Rig, *, voice_approval: bool = True) -> GuardedExecutor:
    """Return the rig's guard as a persona's turn builds it (voice approval as the persona says).

    The kitchen light is marked ``confirm`` too (as a profile may): a held call no voice
    rule asks an adult for.
    """
    rules = GuardPolicy(rules=DEFAULT_RULES).extended(
        [PolicyRule.for_entity("light.kitchen", "confirm")]
    )
    return GuardedExecutor(
        rig.guard.registry,
        policy=rules,
        resolver=rig.resolver,
        confirmations=rig.guard.confirmations,
        audit=AuditSinks(rig.audit, rig.counters),
        state=None,
        voice_approval=voice_approval,
    )


async def answer(rig: Rig, text: str, speaker: Speaker | None) -> ConsentReply | None:
    """Answer in ``conv-1`` as the turn of ``speaker`` would (its person, or the household)."""
    user = "alice" if speaker is None else speaker.user_id
    return await rig.guard.confirmations.answer(
        text, language="en", user_id=user, conversation_id="conv-1", speaker=speaker
    )


def held(rig: Rig) -> list[ConfirmationToken]:
    """Return the calls waiting in ``conv-1``."""
    return rig.guard.confirmations.pending_for("conv-1")


def approvals(records: list[JSONObject]) -> list[tuple[object, ...]]:
    """Return each approved record's who and how."""
    return [
        (r["tool"], r["approved_by"], r["by_voice"]) for r in records if r["decision"] == "approved"
    ]


@pytest.mark.parametrize("speaker", [CHILD, HOUSEHOLD_VOICE], ids=["child", "household"])
async def test_a_yes_in_a_voice_that_may_not_approve_leaves_the_unlock_waiting(
    rig: Rig, speaker: Speaker
) -> None:
    """A child's or an unknown voice's yes is refused; the token lives; an adult's yes runs it."""
    await voiced(rig).execute(UNLOCK, CTX)
    [token] = held(rig)
    assert token.needs_voice
    reply = await answer(rig, "yes, unlock it", speaker)
    assert reply is not None
    assert (reply.verdict, reply.results, reply.refused) == ("yes", (), (token,))
    assert rig.house.calls == []
    assert [t.token_id for t in held(rig)] == [token.token_id]
    later = await answer(rig, "yes", ADULT)
    assert later is not None
    assert [r.status for r in later.results] == ["executed"]
    assert rig.house.calls == [("unlock", "lock.front_door")]
    records = await rig.records()
    refused = [r for r in records if r["decision"] == "refused"]
    assert [r["category"] for r in refused] == ["not_adult"]
    assert approvals(records) == [("lock_unlock", "bob", True)]


async def test_an_adults_yes_runs_it_once_and_a_replay_runs_nothing(rig: Rig) -> None:
    """Bob's voice approves Alice's unlock in her conversation, once; saying it again finds none."""
    await voiced(rig).execute(UNLOCK, CTX)
    first = await answer(rig, "Yes, unlock the front door.", ADULT)
    assert first is not None
    assert [r.status for r in first.results] == ["executed"]
    assert await answer(rig, "yes", ADULT) is None
    assert await answer(rig, "yes", ALICE_TYPING) is None
    assert rig.house.calls == [("unlock", "lock.front_door")]
    assert approvals(await rig.records()) == [("lock_unlock", "bob", True)]


@pytest.mark.parametrize(
    "speaker", [CHILD, HOUSEHOLD_VOICE, ADULT, None], ids=["child", "household", "adult", "none"]
)
async def test_a_no_from_any_voice_declines_it(rig: Rig, speaker: Speaker | None) -> None:
    """No is the safe direction: any voice in the conversation (or the owner, unheard) declines."""
    await voiced(rig).execute(UNLOCK, CTX)
    reply = await answer(rig, "no, leave it locked", speaker)
    assert reply is not None
    assert [r.status for r in reply.results] == ["cancelled"]
    assert held(rig) == []
    assert rig.house.calls == []


async def test_a_typed_turn_answers_only_its_own_and_the_host_must_vouch(rig: Rig) -> None:
    """Typed: another person's yes finds nothing to answer; the owner's runs it when the host
    says she may approve; a turn the host says nothing about cannot approve it."""
    await voiced(rig).execute(UNLOCK, CTX)
    bob_typing = Speaker(heard=False, user_id="bob", may_approve=True)
    assert await answer(rig, "yes", bob_typing) is None
    unsaid = await answer(rig, "yes", None)
    assert unsaid is not None
    assert len(unsaid.refused) == 1
    assert rig.house.calls == []
    child_typing = Speaker(heard=False, user_id="alice", role="child")
    refused = await answer(rig, "yes", child_typing)
    assert refused is not None
    assert len(refused.refused) == 1
    typed = await answer(rig, "yes", ALICE_TYPING)
    assert typed is not None
    assert [r.status for r in typed.results] == ["executed"]
    assert approvals(await rig.records()) == [("lock_unlock", "alice", False)]


async def test_a_persona_without_voice_approval_confirms_as_before(rig: Rig) -> None:
    """Voice approval off: the unlock needs no voice; the owner's yes runs it, nobody else's."""
    await voiced(rig, voice_approval=False).execute(UNLOCK, CTX)
    [token] = held(rig)
    assert not token.needs_voice
    assert await answer(rig, "yes", CHILD) is None  # not Tom's call
    reply = await answer(rig, "yes", None)
    assert reply is not None
    assert [r.status for r in reply.results] == ["executed"]
    assert rig.house.calls == [("unlock", "lock.front_door")]


async def test_a_call_no_voice_rule_holds_is_answered_as_before(rig: Rig) -> None:
    """A light marked ``confirm`` needs no voice: only its owner answers, speaker or not."""
    await voiced(rig).execute(LIGHT, CTX)
    [token] = held(rig)
    assert not token.needs_voice
    assert await answer(rig, "yes", ADULT) is None
    assert await answer(rig, "no", CHILD) is None
    reply = await answer(rig, "yes", None)
    assert reply is not None
    assert [r.status for r in reply.results] == ["executed"]
    assert rig.house.calls == [("turn_on", "light.kitchen")]


@pytest.mark.parametrize("child_first", [True, False], ids=["child-first", "adult-first"])
async def test_an_adult_and_a_child_saying_yes_at_once_run_it_once_for_the_adult(
    rig: Rig, child_first: bool
) -> None:
    """Racing yeses on one token: it runs at most once, and only on the adult's word."""
    await voiced(rig).execute(UNLOCK, CTX)
    voices = [CHILD, ADULT] if child_first else [ADULT, CHILD]
    replies = await asyncio.gather(*(answer(rig, "yes", voice) for voice in voices))
    ran = [r for reply in replies if reply is not None for r in reply.results]
    assert [r.status for r in ran] == ["executed"]
    assert rig.house.calls == [("unlock", "lock.front_door")]
    assert held(rig) == []
    assert approvals(await rig.records()) == [("lock_unlock", "bob", True)]


async def test_the_dashboard_refuses_a_child_and_keeps_the_call_waiting(rig: Rig) -> None:
    """``adult`` False refuses a yes (``not_adult``) but not a no; True runs it."""
    await voiced(rig).execute(UNLOCK, CTX)
    [token] = held(rig)
    confirmations = rig.guard.confirmations
    with pytest.raises(ConfirmationRefusedError) as refused:
        await confirmations.resolve(token.token_id, approve=True, user_id="alice", adult=False)
    assert refused.value.reason == "not_adult"
    assert confirmations.peek(token.token_id) is not None
    result = await confirmations.resolve(token.token_id, approve=True, user_id="alice")
    assert result.status == "executed"
    await voiced(rig).execute(DISARM, CTX)
    [alarm] = held(rig)
    declined = await confirmations.resolve(
        alarm.token_id, approve=False, user_id="alice", adult=False
    )
    assert declined.status == "cancelled"
    assert rig.house.calls == [("unlock", "lock.front_door")]
    assert approvals(await rig.records()) == [("lock_unlock", "alice", False)]
