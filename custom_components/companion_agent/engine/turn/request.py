"""What a host asks for when it starts a turn: ``TurnRequest``, its ``Persona``, its lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..guard.policy import StateProbe, TargetResolver
from ..llm import ChatModel
from ..plugins import Hook, PluginSet, Profile
from ..tools.contract import ToolContext
from ..tools.registry import Tool
from .loop import SpokenLines
from .stored import Initiator

__all__ = ["Initiator", "Persona", "SpokenLines", "TurnRequest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    """A snapshot of one persona: a running turn keeps the one it started with."""

    profile: Profile
    plugins: PluginSet
    model: ChatModel


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """What the host knows about one utterance, and what only it can supply.

    ``context.agent_id`` names the persona whose conversations (and memory) the turn uses.
    """

    persona: Persona
    text: str
    context: ToolContext
    lines: SpokenLines
    device_id: str | None = None
    satellite_id: str | None = None
    """The host's id of the satellite the person spoke through: the first turn of a new
    conversation on a satellite that has just asked the person something
    (``Engine.expect_answer``) continues the conversation it asked in."""
    host_instructions: str = ""
    host_tools: Sequence[Tool] = ()
    host_targets: TargetResolver | None = None
    host_state: StateProbe | None = None
    host_hooks: Sequence[Hook] = ()
    initiator: Initiator = "person"
    """``proactive``: the home speaks first; ``text`` is its instruction, not the person's."""
