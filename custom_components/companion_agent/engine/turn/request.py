"""What a host asks for when it starts a turn: ``TurnRequest``, its ``Persona``, its lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..guard.policy import StateProbe, TargetResolver
from ..llm import ChatModel
from ..llm.models import CallListener
from ..llm.roles import PersonaModels
from ..plugins import Hook, PluginSet, Profile
from ..tools.contract import ToolContext
from ..tools.registry import Tool
from ..vision import CameraSource
from .loop import SpokenLines
from .stored import Initiator

__all__ = ["Initiator", "Persona", "SpokenLines", "TurnRequest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Persona:
    """A snapshot of one persona: a running turn keeps the one it started with.

    Its models included: a turn started before the persona's models changed ends on the
    models it started with.
    """

    profile: Profile
    plugins: PluginSet
    model: ChatModel
    vision: ChatModel | None = None
    """Describes images for a chat model that cannot see them; None: no vision model."""
    models: PersonaModels | None = None
    """Each role's settings: names for the trace, whether the chat model sees images."""
    memory_key: str | None = None
    """The key memory's queued work names this persona's memory and summary models by."""

    @property
    def chat_sees_images(self) -> bool:
        """Tell whether the chat model itself takes images."""
        return self.models is not None and self.models.chat_sees_images


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
    host_cameras: CameraSource | None = None
    """The cameras the turn may look through (the ``camera`` tool), if the persona can see."""
    on_model_call: CallListener | None = None
    """Told each model call's tokens and timings: the host's trace of the turn."""
