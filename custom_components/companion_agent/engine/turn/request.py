"""What a host asks for when it starts a turn: ``TurnRequest``, its ``Persona``, its lines.

A persona carries the rules its turns apply (``PersonaRules``): its profile's ``[policy]``
marks, or, when its profile cannot be read, the last good marks the host kept, or none
kept and every action held for a yes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..guard.policy import PolicyRule, StateProbe, TargetResolver, profile_rules
from ..llm import ChatModel
from ..llm.adapter import CallListener
from ..llm.roles import PersonaModels
from ..messages import ContextSnippet
from ..plugins import Hook, PluginSet, Profile, UnreadProfile
from ..tools.contract import Policy, ToolContext
from ..tools.registry import Tool
from ..vision import CameraSource
from ..voices import Speaker
from .loop import SpokenLines
from .stored import Initiator

__all__ = ["Initiator", "Persona", "PersonaRules", "RulesOrigin", "SpokenLines", "TurnRequest"]

type RulesOrigin = Literal["profile", "kept", "none"]
RULES_SOURCE = "profile"
"""The source of the reference text that tells the model its profile could not be read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PersonaRules:
    """The ``[policy]`` marks a persona's turns apply, and where they come from.

    ``profile``: its profile's own. When its profile cannot be read (``unread``: a broken
    or missing file; the persona answers as the default profile): ``kept``, the last good
    marks the host kept of it, each at least as strict as the default profile's; ``none``,
    nothing was kept, so every call of a tool that does not only read waits for the
    person's yes, which is the most any mark can ask.
    """

    marks: Mapping[str, Policy] = field(default_factory=lambda: MappingProxyType({}))
    origin: RulesOrigin = "profile"
    unread: UnreadProfile | None = None
    voice_approval: bool = True
    """A call held under a rule that asks for an adult's voice (locks, alarms, garage doors)
    waits for one; False (the persona's setting): such a call is confirmed as any other."""

    def guard_rules(self) -> list[PolicyRule]:
        """Return the rules the guard adds to the host's for this persona's turns."""
        rules = profile_rules(self.marks)
        if self.origin == "none":
            rules.append(PolicyRule.for_every_action(f"{self._what} could not be read"))
        return rules

    def notices(self) -> tuple[ContextSnippet, ...]:
        """Tell the model that its profile could not be read, and what holds meanwhile."""
        if self.origin == "profile":
            return ()
        problem = self.unread.problem if self.unread is not None else None
        why = f"{problem.key}: {problem.message}" if problem is not None else "no such file"
        held = (
            "its last good rules still decide which actions wait for the person's yes"
            if self.origin == "kept"
            else "no earlier copy of its rules is kept, so every action waits for the "
            "person's yes; say so when you ask"
        )
        text = (
            f"Your {self._what} could not be read ({why}). You answer as the default "
            f"persona meanwhile, and {held}. If asked, say the profile needs fixing."
        )
        return (ContextSnippet(source=RULES_SOURCE, text=text),)

    @property
    def _what(self) -> str:
        """Name the profile that could not be read."""
        if self.unread is None:
            return "profile"
        return f"profile {self.unread.profile_id!r} ({self.unread.path.name})"


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
    rules: PersonaRules | None = None
    """The rules its turns apply; None: its profile's own marks."""

    @property
    def applied_rules(self) -> PersonaRules:
        """Return the rules its turns apply."""
        return self.rules if self.rules is not None else PersonaRules(marks=self.profile.policy)

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
    speaker: Speaker | None = None
    """Who the host says speaks (a recognised voice, a signed-in person, the household);
    None: it says nothing (a proactive turn, a host without voices). Only a speaker the
    host says may approve runs a held call that waits for an adult's voice."""
