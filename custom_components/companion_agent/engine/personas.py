"""``Personas``: the persona snapshots of one engine, each with its profile, plugins and models.

A persona is built from the library loaded last: its profile, its plugins (their problems
kept per persona), and a model per role (``llm/roles.py``). Its memory and summary models
are bound to the key memory's queued work names them by, so that work finds them, also
after a restart (the host names its personas at ``start``).

A profile that cannot be read (a broken file with no snapshot, a deleted one) gives way to
the default profile, never its rules to the default's: the persona applies the last good
marks the host kept of its profile, else holds every action for a yes (``PersonaRules``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from .guard.policy import STRICTNESS
from .llm import LLMSettings
from .llm.adapter import ChatModels
from .llm.roles import BackgroundModels, PersonaModels, RoleChoices, persona_models
from .plugins import HostServices, Library, LoadProblem, PolicyLevel, Profile, ProfileLibrary
from .plugins.profiles import DEFAULT_PROFILE
from .turn.request import Persona, PersonaRules

FALLBACK_PROFILE = Profile(id=DEFAULT_PROFILE, name="Companion", source=Path("<built-in>"))


@dataclass(frozen=True, slots=True, kw_only=True)
class PersonaSetup:
    """A persona as the host configured it: its profile and its choice of model per role."""

    profile_id: str
    roles: RoleChoices = field(default_factory=RoleChoices)
    kept: Mapping[str, PolicyLevel] | None = None
    """The last good ``[policy]`` marks of its profile that the host kept; None: none."""
    voice_approval: bool = True
    """Held calls of rules that ask for an adult's voice wait for one (``PersonaRules``)."""


class Personas:
    """Build persona snapshots; keep each persona's plugin problems and memory models."""

    def __init__(self, models: ChatModels, base: LLMSettings) -> None:
        """Build models with ``models``; ``base`` is the host's own model, every role's default."""
        self._models = models
        self.background = BackgroundModels(base)
        """Every persona's memory and summary models, by the key memory keeps."""
        self._problems: dict[str, tuple[LoadProblem, ...]] = {}

    @property
    def problems(self) -> list[LoadProblem]:
        """Return the plugin problems of every persona built."""
        return [problem for problems in self._problems.values() for problem in problems]

    def bind_all(self, library: Library, setups: Mapping[str, PersonaSetup]) -> None:
        """Bind the memory models of every persona the host names (at start)."""
        for persona_id, setup in setups.items():
            self.bind(library, persona_id, setup)

    def bind(
        self, library: Library, persona_id: str, setup: PersonaSetup
    ) -> tuple[Profile, PersonaRules, PersonaModels, str]:
        """Resolve a persona's profile, rules and models; bind its memory models to its key."""
        profile, rules = persona_profile(library.profiles, setup)
        rules = replace(rules, voice_approval=setup.voice_approval)
        models = persona_models(self.background.base, setup.roles, profile.models)
        return profile, rules, models, self.background.bind(persona_id, models)

    def build(
        self, library: Library, host: HostServices, persona_id: str, setup: PersonaSetup
    ) -> Persona:
        """Build a persona snapshot; its plugins' problems replace its earlier ones."""
        profile, rules, models, key = self.bind(library, persona_id, setup)
        plugins = library.activate(profile, host)
        self._problems[persona_id] = plugins.problems
        return Persona(
            profile=profile,
            plugins=plugins,
            model=self._models.bound(models.chat),
            vision=None if models.vision is None else self._models.bound(models.vision),
            models=models,
            memory_key=key,
            rules=rules,
        )


def persona_profile(profiles: ProfileLibrary, setup: PersonaSetup) -> tuple[Profile, PersonaRules]:
    """Return the profile a persona answers as, and the rules its turns apply.

    Its own profile and its marks when it can be read; else the default profile with the
    kept marks (each at least as strict as the default's), or with every action held.
    """
    found = profiles.find(setup.profile_id)
    if isinstance(found, Profile):
        return found, PersonaRules(marks=found.policy)
    fallback = profiles.default or FALLBACK_PROFILE
    if setup.kept is None:
        return fallback, PersonaRules(marks=fallback.policy, origin="none", unread=found)
    marks = dict(setup.kept)
    for key, level in fallback.policy.items():
        if STRICTNESS[level] > STRICTNESS[marks.get(key, "allow")]:
            marks[key] = level
    return fallback, PersonaRules(marks=MappingProxyType(marks), origin="kept", unread=found)
