"""Who may use the memory services on whose memories, through a real HA and its users."""

from __future__ import annotations

from typing import cast

import pytest
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized
from homeassistant.util.json import JsonObjectType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.companion_agent.const import DOMAIN
from tests.ha.common import add_person, call, row, rows


async def as_user(
    hass: HomeAssistant, user_id: str, service: str, data: dict[str, object]
) -> JsonObjectType:
    """Call a memory service as the HA user ``user_id`` (as the UI does)."""
    result = await hass.services.async_call(
        DOMAIN,
        service,
        data,
        blocking=True,
        return_response=True,
        context=Context(user_id=user_id),
    )
    return dict(result or {})


async def test_a_non_admin_reaches_only_their_own_and_the_households_memories(
    hass: HomeAssistant, one_persona: tuple[MockConfigEntry, str]
) -> None:
    """Bob cannot read, forget, roll back or write Alice's memories; Alice can hers."""
    _entry, ada = one_persona
    alice, alice_person = await add_person(hass, "Alice")
    bob, _bob_person = await add_person(hass, "Bob")
    assert not (await hass.auth.async_get_user(bob)).is_admin  # type: ignore[union-attr]
    first = await call(
        hass, "remember", {"persona": ada, "person": alice_person, "text": "Black", "topic": "tea"}
    )
    secret = row(
        await call(
            hass,
            "remember",
            {"persona": ada, "person": alice_person, "text": "Green", "topic": "tea"},
        ),
        "memory",
    )
    shared = row(
        await call(hass, "remember", {"persona": ada, "text": "Bins on Monday", "topic": "bins"}),
        "memory",
    )

    bobs = await as_user(hass, bob, "export_memories", {"persona": ada})
    assert [m["text"] for m in rows(bobs)] == ["Bins on Monday"]
    assert bobs["total"] == {"memories": 1, "entities": 0, "relations": 0}
    assert bobs["next_offset"] is None
    denied: list[tuple[str, dict[str, object]]] = [
        ("export_memories", {"persona": ada, "person": alice_person}),
        ("forget", {"person": alice_person}),
        ("forget", {"id": secret["id"]}),
        ("forget", {"persona": ada}),
        ("rollback_memory", {"id": secret["id"]}),
        ("remember", {"persona": ada, "person": alice_person, "text": "Coffee", "topic": "tea"}),
        ("forget", {"id": "no-such-id"}),
    ]
    for service, data in denied:
        with pytest.raises(Unauthorized):
            await as_user(hass, bob, service, data)

    everything = rows(await call(hass, "export_memories", {"persona": ada}))
    assert sorted(str(m["text"]) for m in everything) == ["Bins on Monday", "Black", "Green"]

    mine = rows(await as_user(hass, alice, "export_memories", {"persona": ada}))
    assert sorted(str(m["text"]) for m in mine) == ["Bins on Monday", "Black", "Green"]
    back = await as_user(hass, alice, "rollback_memory", {"id": secret["id"]})
    assert row(back, "current")["id"] == row(first, "memory")["id"]
    gone = await as_user(hass, bob, "forget", {"id": shared["id"]})  # the household's: shared
    assert cast(int, gone["forgotten"]) == 1
    assert (await as_user(hass, alice, "forget", {"person": alice_person}))["forgotten"] == 2
    assert rows(await call(hass, "export_memories", {"persona": ada})) == []
