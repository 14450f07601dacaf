"""Home Assistant's default guard rules: what always waits for the person's yes.

The engine knows only that a rule matches a tool, a domain or an entity; which actions are
risky in a home is HA knowledge, and lives here. A target whose action the resolver could
not tell (``action`` None) is treated as the risky one: the guard fails closed. Unlocking,
disarming and moving a garage door, gate or door also wait for an enrolled adult's voice
(``voice``), unless the persona switches that off (``PersonaRules.voice_approval``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..engine.guard.policy import PolicyRule, Target, TargetCondition

OPENING_VALVE = frozenset({"open_valve", "set_valve_position", "toggle", "turn_on"})


def _action_in(actions: Iterable[str]) -> TargetCondition:
    """Match a target whose action is one of ``actions``, or unknown."""
    chosen = frozenset(actions)

    def condition(target: Target) -> bool:
        """Return True when the target's action is risky or unknown."""
        return target.action is None or target.action in chosen

    return condition


def _device_class_in(classes: Iterable[str]) -> TargetCondition:
    """Match a target of one of the device classes ``classes``."""
    chosen = frozenset(classes)
    return lambda target: target.device_class in chosen


def _gas_valve_opening(target: Target) -> bool:
    """Match a gas valve being opened (or an action the resolver could not tell)."""
    return target.device_class == "gas" and (
        target.action is None or target.action in OPENING_VALVE
    )


DEFAULT_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(
        policy="confirm",
        domain="lock",
        when=_action_in({"unlock", "open"}),
        reason="unlocking or opening a lock",
        voice=True,
    ),
    PolicyRule(
        policy="confirm",
        domain="alarm_control_panel",
        when=_action_in({"alarm_disarm", "disarm"}),
        reason="disarming an alarm",
        voice=True,
    ),
    PolicyRule(
        policy="confirm",
        domain="cover",
        when=_device_class_in({"garage", "gate", "door"}),
        reason="moving a garage door, gate or door",
        voice=True,
    ),
    PolicyRule(
        policy="confirm",
        domain="valve",
        when=_device_class_in({"garage", "gate", "door"}),
        reason="moving a garage door, gate or door",
    ),
    PolicyRule(
        policy="confirm", domain="valve", when=_gas_valve_opening, reason="opening a gas valve"
    ),
)
