"""Profiles: one TOML file per persona, read into frozen snapshots.

A running turn keeps the ``Profile`` it started with; ``ProfileLibrary.reload`` builds new
snapshots for new turns. A file that breaks keeps its last good snapshot while the library
lives; ``ProfileLibrary.find`` says which profiles cannot be read (a broken file with no
snapshot, or no file at all), so that a persona on one never takes another's rules unseen.
Blocking (file reads): hosts run loading in an executor.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import voluptuous as vol

from ..errors import ConfigFileError, PluginConfigError, ProfileConfigError
from ..llm.roles import ROLES, ModelChoice
from ..tools.claims import BUILT_IN, ChangeClaims, change_claims, pattern_problem
from ..tools.contract import Policy
from ..tools.holding import (
    ANY,
    DEFAULT_AFTER,
    KINDS,
    HoldingPhrases,
    language_key,
    template_problem,
)
from .config import TEXT, PluginConfig, array, of_type, read_toml, reporting, table, unique
from .loader import PROFILES_DIR, LoadProblem, PluginCatalog

type PolicyLevel = Policy
POLICY_LEVELS: tuple[PolicyLevel, ...] = ("allow", "validate", "confirm")
PROFILE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
ACTION = re.compile(r"[^\s\[\]]{1,32}\Z")
DEFAULT_PROFILE = "default"
DEFAULT_MAX_ROUNDS = 6
"""How many model calls one turn may make, unless the profile says otherwise."""
DEFAULT_HOOK_TIMEOUT = 1.5
DEFAULT_TURN_DEADLINE = 60.0
FACE_TYPES = {
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".webp": "image/webp",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
}
MAX_FACE_BYTES = 64 * 1024
KEPT = "; the previous version of this profile stays in use until this is fixed"
DEFAULT_EMOTIONS = (
    *("joy", "happy", "sad", "angry", "surprise", "surprised", "fear", "shy", "love"),
    *("excited", "calm", "tired", "confused", "think", "neutral", "proud", "worried"),
)
"""The tags a profile takes as emotions unless it names its own (``[output] emotions``)."""
DEFAULT_SPOKEN_SECONDS = 20.0
DEFAULT_SPOKEN_SENTENCES = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputFormat:
    """How answers are written, and the profile's tag vocabulary.

    ``actions`` are the tags the model is offered; ``emotions`` the tags taken as the
    persona's emotion (the standard set unless the profile names its own). Both are
    actions, never words: ``tags`` is the whole vocabulary the output pipeline removes.
    ``follow_ups``: a reply that asks the person something (a question, or a held action
    waiting for their yes) lets a satellite listen for the answer without its wake word.
    ``spoken_seconds`` and ``spoken_sentences`` bound what of a reply is spoken, whichever
    comes first (speech estimated from its text, ``speech/audio_length.py``); the rest is
    shown, not spoken (``turn/reply_check.py``).
    """

    instructions: str = ""
    actions: tuple[str, ...] = ()
    emotions: tuple[str, ...] = DEFAULT_EMOTIONS
    follow_ups: bool = True
    spoken_seconds: float = DEFAULT_SPOKEN_SECONDS
    spoken_sentences: int = DEFAULT_SPOKEN_SENTENCES

    @property
    def tags(self) -> frozenset[str]:
        """Return every tag of the vocabulary, lower-cased (tags match in any case)."""
        return frozenset(tag.lower() for tag in (*self.actions, *self.emotions))

    @property
    def emotion_tags(self) -> frozenset[str]:
        """Return the emotions, lower-cased."""
        return frozenset(emotion.lower() for emotion in self.emotions)

    def is_emotion(self, tag: str) -> bool:
        """Say whether ``tag`` names an emotion of this profile."""
        return tag.lower() in self.emotion_tags


@dataclass(frozen=True, slots=True, kw_only=True)
class FaceImage:
    """An image of the persona's face for one emotion, read from the profile's folder."""

    media_type: str
    data: bytes = field(repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class EnabledPlugin:
    """A plugin the profile enables, with its settings resolved for this profile."""

    id: str
    config: PluginConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """A persona: prompt, output format, language, models, plugins and tool policy."""

    id: str
    name: str
    source: Path
    persona: str = ""
    language: str = "en"
    output: OutputFormat = field(default_factory=OutputFormat)
    models: ModelChoice = field(default_factory=ModelChoice)
    max_rounds: int = DEFAULT_MAX_ROUNDS
    hook_timeout: float = DEFAULT_HOOK_TIMEOUT
    turn_deadline: float = DEFAULT_TURN_DEADLINE
    plugins: tuple[EnabledPlugin, ...] = ()
    policy: Mapping[str, PolicyLevel] = field(default_factory=lambda: MappingProxyType({}))
    faces: Mapping[str, FaceImage] = field(default_factory=lambda: MappingProxyType({}))
    """Face images by emotion tag (``[face]``), for dashboards; none: a drawn face."""
    holding: HoldingPhrases = field(default_factory=HoldingPhrases)
    """What the persona says while a slow tool runs (``[holding]``); none: nothing."""
    claims: ChangeClaims = field(default_factory=ChangeClaims)
    """Claims of a change no call made, and the line said instead (``[claims]``)."""

    @property
    def plugin_ids(self) -> tuple[str, ...]:
        """Return the enabled plugins' ids, in the order the profile lists them."""
        return tuple(plugin.id for plugin in self.plugins)


TEXTS = vol.All(array(TEXT, "strings"), unique)
TAG = vol.All(TEXT, vol.Match(ACTION, msg="not a valid tag (no spaces or brackets)"))


def phrase(*, targeted: bool) -> vol.All:
    """Return the validator of a holding phrase (``targeted``: it may name ``{target}``)."""

    def check(template: str) -> str:
        """Pass a template that is fit to be said; say what is wrong with any other."""
        if (problem := template_problem(template, targeted=targeted)) is not None:
            raise vol.Invalid(problem)
        return template

    return vol.All(TEXT, check)


def holding_phrases(**values: object) -> HoldingPhrases:
    """Build ``[holding]`` (checked by ``HOLDING``): its settings, its phrases by language."""
    enabled = values.pop("enabled", True)
    after = values.pop("after", DEFAULT_AFTER)
    tables = {
        language_key(language): MappingProxyType({str(k): str(v) for k, v in table.items()})
        for language, table in values.items()
        if isinstance(table, dict)
    }
    return HoldingPhrases(
        enabled=enabled is True,
        after=after if isinstance(after, float) else DEFAULT_AFTER,
        languages=MappingProxyType(tables),
    )


PHRASES: dict[Hashable, object] = {
    **{vol.Optional(kind): phrase(targeted=True) for kind in KINDS},
    **{vol.Optional(f"{kind}{ANY}"): phrase(targeted=False) for kind in KINDS},
}
HOLDING = table(
    {
        vol.Optional("enabled"): of_type("boolean"),
        vol.Optional("after"): vol.All(
            of_type("float"),
            vol.Range(
                min=0.2, max=10, msg="expected 0.2 to 10 seconds (enabled = false: no lines)"
            ),
        ),
        vol.All(
            TEXT, vol.Match(LANGUAGE, msg="expected a language tag such as 'en' or 'zh-CN'")
        ): table(PHRASES),
    },
    into=holding_phrases,
)


def claim_phrase(pattern: str) -> str:
    """Pass a claim phrase (a regular expression); say what is wrong with any other."""
    if (problem := pattern_problem(pattern)) is not None:
        raise vol.Invalid(problem)
    return pattern


def claims_of(values: dict[str, object]) -> ChangeClaims:
    """Build ``[claims]``; a language with no built-in phrases must give its correction."""
    for language, phrases in values.items():
        built_in = language_key(language).split("-")[0] in BUILT_IN
        if isinstance(phrases, dict) and not built_in and "correction" not in phrases:
            message = "a language with no built-in phrases needs its correction"
            raise vol.Invalid(message, path=[language, "correction"])
    return change_claims(**values)


CLAIM_PHRASES = vol.All(array(vol.All(TEXT, claim_phrase), "strings"), unique)
CLAIMS = vol.All(
    of_type("table"),
    vol.Schema(
        {
            vol.Optional("enabled"): of_type("boolean"),
            vol.All(
                TEXT, vol.Match(LANGUAGE, msg="expected a language tag such as 'en' or 'zh-CN'")
            ): table(
                {
                    vol.Optional("correction"): phrase(targeted=False),
                    vol.Optional("own"): CLAIM_PHRASES,
                    vol.Optional("state"): CLAIM_PHRASES,
                }
            ),
        },
        extra=vol.PREVENT_EXTRA,
    ),
    claims_of,
)
SCHEMA = vol.Schema(
    {
        vol.Required("id"): vol.All(
            TEXT, vol.Match(PROFILE_ID, msg="use lower-case letters, digits, '-' and '_'")
        ),
        vol.Optional("name"): TEXT,
        vol.Optional("persona"): TEXT,
        vol.Optional("language"): vol.All(
            TEXT, vol.Match(LANGUAGE, msg="expected a language tag such as 'en' or 'zh-CN'")
        ),
        vol.Optional("output"): table(
            {
                vol.Optional("instructions"): TEXT,
                vol.Optional("actions"): vol.All(array(TAG, "strings"), unique),
                vol.Optional("emotions"): vol.All(array(TAG, "strings"), unique),
                vol.Optional("follow_ups"): of_type("boolean"),
                vol.Optional("spoken_seconds"): vol.All(
                    of_type("float"),
                    vol.Range(min=3, max=300, msg="expected 3 to 300 seconds of speech"),
                ),
                vol.Optional("spoken_sentences"): vol.All(
                    of_type("integer"),
                    vol.Range(min=1, max=100, msg="expected 1 to 100 sentences"),
                ),
            },
            into=OutputFormat,
        ),
        vol.Optional("models"): table(
            {
                **{vol.Optional(role): TEXT for role in ROLES},
                vol.Optional("chat_images"): of_type("boolean"),
            },
            into=ModelChoice,
        ),
        vol.Optional("max_rounds"): vol.All(of_type("integer"), vol.Range(min=1)),
        vol.Optional("hook_timeout"): vol.All(of_type("float"), vol.Range(min=0.05)),
        vol.Optional("turn_deadline"): vol.All(of_type("float"), vol.Range(min=1)),
        vol.Optional("plugins"): table({vol.Optional("enabled"): TEXTS, str: of_type("table")}),
        vol.Optional("face"): table({TAG: TEXT}),
        vol.Optional("holding"): HOLDING,
        vol.Optional("claims"): CLAIMS,
        vol.Optional("policy"): vol.All(
            table({str: vol.In(POLICY_LEVELS, msg=f"expected one of {', '.join(POLICY_LEVELS)}")}),
            vol.Coerce(MappingProxyType),
        ),
    },
    extra=vol.PREVENT_EXTRA,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnreadProfile:
    """A profile that cannot be read: the file it is (or would be) in, and what is wrong."""

    profile_id: str
    path: Path
    problem: LoadProblem | None = None
    """The file's problem; None when there is no such file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileLibrary:
    """Every valid profile under the roots, by id; later roots replace earlier ones."""

    roots: tuple[Path, ...] = ()
    profiles: Mapping[str, Profile] = field(default_factory=lambda: MappingProxyType({}))
    problems: tuple[LoadProblem, ...] = ()
    failed: Mapping[str, LoadProblem] = field(default_factory=lambda: MappingProxyType({}))
    """The problem of each file that could not be read, by the id it would give (its name's
    stem, or its last good snapshot's id); a later root's good file of that id clears it."""

    @classmethod
    def load(cls, roots: Sequence[Path], catalog: PluginCatalog) -> ProfileLibrary:
        """Read ``root/profiles/*.toml`` for each root; blocking."""
        return cls(roots=tuple(roots)).reload(catalog)

    def reload(self, catalog: PluginCatalog) -> ProfileLibrary:
        """Read the files again into new snapshots; a now-broken file keeps its last good one."""
        previous = {profile.source: profile for profile in self.profiles.values()}
        problems: list[LoadProblem] = []
        profiles: dict[str, Profile] = {}
        failed: dict[str, LoadProblem] = {}
        for root in self.roots:
            claimed: dict[str, Path] = {}
            for path in sorted((root / PROFILES_DIR).glob("*.toml")):
                kept = previous.get(path)
                profile: Profile | None
                try:
                    profile, notes = read_profile(path, catalog)
                except ConfigFileError as err:
                    message = err.message + (KEPT if kept is not None else "")
                    notes = [LoadProblem(kind="profile", path=path, key=err.key, message=message)]
                    failed[path.stem] = notes[0]
                    if kept is not None:
                        failed[kept.id] = notes[0]
                    profile = kept
                else:
                    failed.pop(profile.id, None)
                if profile is not None and profile.id in claimed:
                    message = f"id also used by {claimed[profile.id]}"
                    notes = [LoadProblem(kind="profile", path=path, key="id", message=message)]
                    profile = None
                problems.extend(notes)
                if profile is not None:
                    claimed[profile.id] = path
                    profiles[profile.id] = profile
        return ProfileLibrary(
            roots=self.roots,
            profiles=MappingProxyType(profiles),
            problems=tuple(problems),
            failed=MappingProxyType(failed),
        )

    def get(self, profile_id: str) -> Profile | None:
        """Return the profile with ``profile_id``, or None."""
        return self.profiles.get(profile_id)

    def find(self, profile_id: str) -> Profile | UnreadProfile:
        """Return the profile with ``profile_id``, or why it cannot be read.

        A profile whose file broke after it was read is its last good snapshot, and found.
        One whose own file broke while another root's file of that id loaded (a user's
        ``default.toml`` over the shipped one) cannot be read: the other is not the one
        meant. With no file at all, the path names where the user's file would be.
        """
        profile = self.profiles.get(profile_id)
        problem = self.failed.get(profile_id)
        if profile is not None and (problem is None or problem.path == profile.source):
            return profile
        if problem is not None:
            return UnreadProfile(profile_id=profile_id, path=problem.path, problem=problem)
        folder = self.roots[-1] / PROFILES_DIR if self.roots else Path(PROFILES_DIR)
        return UnreadProfile(profile_id=profile_id, path=folder / f"{profile_id}.toml")

    @property
    def default(self) -> Profile | None:
        """Return the ``default`` profile, else the first one, else None."""
        return self.profiles.get(DEFAULT_PROFILE) or next(iter(self.profiles.values()), None)

    def __iter__(self) -> Iterator[Profile]:
        """Iterate over the profiles, sorted by id."""
        return iter(sorted(self.profiles.values(), key=lambda profile: profile.id))


def read_profile(path: Path, catalog: PluginCatalog) -> tuple[Profile, list[LoadProblem]]:
    """Parse one profile; raise for errors, return non-fatal problems alongside it."""
    raw = read_toml(path, ProfileConfigError)
    with reporting(path, ProfileConfigError):
        fields = SCHEMA({"id": path.stem, **raw})  # the file name is the default id
    fields.setdefault("name", fields["id"])
    fields["faces"] = read_faces(path, fields.pop("face", {}), fields.get("output"))
    chosen = fields.pop("plugins", {})
    enabled = chosen.pop("enabled", ())
    plugins, problems = _plugins(enabled, chosen, catalog, path)
    return Profile(**fields, source=path, plugins=plugins), problems


def read_faces(
    path: Path, face: Mapping[str, str], output: OutputFormat | None
) -> Mapping[str, FaceImage]:
    """Read ``[face]``: per emotion tag (or ``neutral``), an image beside the profile; blocking.

    An image must be inside the profile's folder, of a kind a browser shows
    (``FACE_TYPES``), and at most ``MAX_FACE_BYTES``; the error names the key.
    """
    tags = {"neutral", *(output.actions if output is not None else ())}
    folder = path.parent.resolve()
    faces: dict[str, FaceImage] = {}
    for tag, name in face.items():
        key = f"face.{tag}"
        if tag not in tags:
            raise ProfileConfigError(path, key, "not one of output.actions, nor neutral")
        image = (folder / name).resolve()
        media_type = FACE_TYPES.get(image.suffix.lower())
        if not image.is_relative_to(folder):
            raise ProfileConfigError(path, key, "the image must be in the profile's folder")
        if media_type is None:
            raise ProfileConfigError(path, key, f"expected one of {', '.join(FACE_TYPES)}")
        try:
            size = image.stat().st_size
            if size > MAX_FACE_BYTES:
                message = f"{name} has {size} bytes; at most {MAX_FACE_BYTES}"
                raise ProfileConfigError(path, key, message)
            data = image.read_bytes()
        except OSError as err:
            raise ProfileConfigError(path, key, f"cannot read {name}: {err.strerror}") from err
        faces[tag] = FaceImage(media_type=media_type, data=data[:MAX_FACE_BYTES])
    return MappingProxyType(faces)


def _plugins(
    enabled: tuple[str, ...],
    overrides: Mapping[str, Mapping[str, object]],
    catalog: PluginCatalog,
    path: Path,
) -> tuple[tuple[EnabledPlugin, ...], list[LoadProblem]]:
    """Resolve ``[plugins]``: enabled ids, each with its overrides checked against its defaults."""
    problems: list[LoadProblem] = []
    resolved: list[EnabledPlugin] = []
    for plugin_id in (*enabled, *(key for key in overrides if key not in enabled)):
        loaded = catalog.plugins.get(plugin_id)
        prefix = f"plugins.{plugin_id}"
        if loaded is None:
            if plugin_id not in catalog.failed:
                key = "plugins.enabled" if plugin_id in enabled else prefix
                problems.append(_unknown_plugin(path, key, plugin_id, catalog))
            continue
        config = loaded.manifest.defaults
        if plugin_id in overrides:
            config = config.with_overrides(overrides[plugin_id], path=path, prefix=prefix)
        if plugin_id in enabled:
            resolved.append(EnabledPlugin(id=plugin_id, config=config))
    return tuple(resolved), problems


def _unknown_plugin(path: Path, key: str, plugin_id: str, catalog: PluginCatalog) -> LoadProblem:
    """Report a profile naming a plugin that no root provides; the profile still loads."""
    known = ", ".join(sorted(catalog.plugins)) or "none"
    err = PluginConfigError(path, key, f"no plugin {plugin_id!r} is installed (installed: {known})")
    return LoadProblem.from_error("profile", err)
