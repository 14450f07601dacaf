"""A model per role: what a host chose for each, and the settings each role ends up with.

Four roles: ``chat`` (the turn), ``vision`` (describes images for a chat model that cannot
see them), ``memory`` (extraction) and ``summary`` (session summaries). A host's choice for
a role may name its own server (with its own key), a model, sampling and a first-token
wait; whatever it leaves out comes from the profile's ``[models]`` name, then from the
host's own model. A role on the host's server uses the host's key unless it has one.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Literal

from ..redaction import REDACTED, redact_url
from .adapter import LLMSettings

type Role = Literal["chat", "vision", "memory", "summary"]
ROLES: tuple[Role, ...] = ("chat", "vision", "memory", "summary")
BACKGROUND_FIRST_TOKEN = 30.0
"""The first-token wait of memory and summaries unless chosen: nobody is listening."""
VISION_FIRST_TOKEN = 20.0
"""The vision model's first-token wait unless chosen: reading an image takes a while."""
MAX_PERSONAS = 256
PERSONA_KEY = "persona:"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """A profile's model names per role (``[models]``); None keeps the host's model.

    ``chat_images``: the chat model understands images (camera snapshots go to it).
    """

    chat: str | None = None
    vision: str | None = None
    memory: str | None = None
    summary: str | None = None
    chat_images: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleChoice:
    """What a host chose for one role; None keeps what the profile, then the host, has."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    first_token_timeout: float | None = None
    busy_timeout: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleChoices:
    """A persona's (or an AI task's) choice per role, and whether its chat model sees images.

    ``chat_sees_images`` None leaves it to the profile (``[models] chat_images``).
    """

    chat: RoleChoice = field(default_factory=RoleChoice)
    vision: RoleChoice = field(default_factory=RoleChoice)
    memory: RoleChoice = field(default_factory=RoleChoice)
    summary: RoleChoice = field(default_factory=RoleChoice)
    chat_sees_images: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PersonaModels:
    """The settings of each role of one persona; ``vision`` None: no vision model."""

    chat: LLMSettings
    vision: LLMSettings | None
    memory: LLMSettings
    summary: LLMSettings
    chat_sees_images: bool = False

    @property
    def sees_images(self) -> bool:
        """Tell whether images can reach this persona: its chat model or a vision model."""
        return self.chat_sees_images or self.vision is not None


def role_settings(
    base: LLMSettings, choice: RoleChoice, name: str | None, *, first_token: float | None = None
) -> LLMSettings:
    """Return one role's settings: the choice, then the profile's ``name``, then ``base``.

    ``first_token`` is the role's own default wait (else ``base``'s).
    """
    own_server = bool(choice.base_url) and not _same(choice.base_url, base.base_url)
    return replace(
        base,
        base_url=choice.base_url or base.base_url,
        api_key=choice.api_key if own_server else (choice.api_key or base.api_key),
        model=choice.model or name or base.model,
        temperature=_first(choice.temperature, base.temperature),
        max_tokens=_first(choice.max_tokens, base.max_tokens),
        first_token_timeout=_first(choice.first_token_timeout, first_token)
        or base.first_token_timeout,
        busy_timeout=base.busy_timeout if choice.busy_timeout is None else choice.busy_timeout,
    )


def persona_models(base: LLMSettings, choices: RoleChoices, profile: ModelChoice) -> PersonaModels:
    """Resolve every role of a persona from its choices, its profile and the host's model.

    Summaries default to the memory role's model; vision exists only when a model is named.
    """
    memory = role_settings(base, choices.memory, profile.memory, first_token=BACKGROUND_FIRST_TOKEN)
    vision_name = choices.vision.model or profile.vision
    vision = (
        role_settings(base, choices.vision, vision_name, first_token=VISION_FIRST_TOKEN)
        if vision_name
        else None
    )
    sees = choices.chat_sees_images
    return PersonaModels(
        chat=role_settings(base, choices.chat, profile.chat),
        vision=vision,
        memory=memory,
        summary=role_settings(memory, choices.summary, profile.summary),
        chat_sees_images=profile.chat_images if sees is None else sees,
    )


class BackgroundModels:
    """Every persona's memory and summary settings, by the key memory keeps with its work.

    Memory's queued work outlives a turn (and a restart), so it names its model by a key
    without secrets: ``persona:<id>``. A key nobody bound (a persona since removed) gets
    the host's model; any other text is a model name on the host's server (older entries).
    """

    def __init__(self, base: LLMSettings) -> None:
        """Start with the host's model only."""
        self.base = base
        self._bound: OrderedDict[str, PersonaModels] = OrderedDict()

    def bind(self, persona_id: str, models: PersonaModels) -> str:
        """Keep a persona's settings (replacing its earlier ones); return its key."""
        key = f"{PERSONA_KEY}{persona_id}"
        self._bound.pop(key, None)
        self._bound[key] = models
        while len(self._bound) > MAX_PERSONAS:
            self._bound.popitem(last=False)
        return key

    def settings(self, key: str | None, role: Literal["memory", "summary"]) -> LLMSettings:
        """Return the settings of ``role`` for ``key`` (None: the host's model)."""
        if key is not None and (models := self._bound.get(key)) is not None:
            return models.memory if role == "memory" else models.summary
        name = None if key is None or key.startswith(PERSONA_KEY) else key
        return role_settings(self.base, RoleChoice(), name, first_token=BACKGROUND_FIRST_TOKEN)

    def redacted_settings(self) -> dict[str, object]:
        """Return each persona's roles as support may see them: servers, names, never keys."""
        return {
            key.removeprefix(PERSONA_KEY): {
                "chat": shown(models.chat),
                "vision": None if models.vision is None else shown(models.vision),
                "memory": shown(models.memory),
                "summary": shown(models.summary),
                "chat_sees_images": models.chat_sees_images,
            }
            for key, models in self._bound.items()
        }


def shown(settings: LLMSettings) -> dict[str, object]:
    """Return one role's settings without secrets (the URL's login masked, no key)."""
    return {
        "base_url": redact_url(settings.base_url),
        "model": settings.model,
        "api_key": REDACTED if settings.api_key else None,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "first_token_timeout": settings.first_token_timeout,
        "busy_timeout": settings.busy_timeout,
    }


def _first[T](*values: T | None) -> T | None:
    """Return the first value that is not None."""
    return next((value for value in values if value is not None), None)


def _same(url: str | None, other: str) -> bool:
    """Tell whether two server URLs name the same server (a trailing slash aside)."""
    return (url or "").rstrip("/") == other.rstrip("/")
