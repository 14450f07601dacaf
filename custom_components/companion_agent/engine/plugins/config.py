"""TOML config files checked by voluptuous schemas; a mistake names the file and the dotted key.

The validators here speak TOML types (an integer is not a boolean and may stand for a float)
and plain words; ``reporting`` turns the first ``vol.Invalid`` into the engine's error type.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import voluptuous as vol

from ..errors import ConfigFileError, PluginConfigError

type ConfigScalar = str | int | float | bool
type ConfigValue = ConfigScalar | tuple[ConfigScalar, ...]
type Validator = Callable[[object], object]

SYNTAX_KEY = "(toml)"
SCALAR_TYPES = frozenset({"string", "integer", "float", "boolean"})
TOML_TYPES: dict[type, str] = {
    bool: "boolean",
    int: "integer",
    float: "float",
    str: "string",
    list: "array",
    dict: "table",
}
EXTRA, MISSING = "extra keys not allowed", "required key not provided"  # voluptuous' words
EXTRA_CODE = "extra_keys_not_allowed"
"""probatio's code for an unknown key (HA's ``voluptuous`` since 2026.9; its words differ)."""


def read_toml(path: Path, error: type[ConfigFileError]) -> dict[str, object]:
    """Read a TOML file; unreadable files and syntax errors raise ``error``."""
    try:
        with path.open("rb") as file:
            return dict(tomllib.load(file))
    except tomllib.TOMLDecodeError as err:
        raise error(path, SYNTAX_KEY, f"not valid TOML: {err}") from err
    except (OSError, UnicodeDecodeError) as err:
        raise error(path, SYNTAX_KEY, f"cannot be read: {err}") from err


@contextmanager
def reporting(
    path: Path, error: type[ConfigFileError], prefix: str = "", unknown: str = "unknown key"
) -> Iterator[None]:
    """Turn a ``vol.Invalid`` raised inside the block into ``error`` naming file and key."""
    try:
        yield
    except vol.Invalid as err:
        problems = sorted(_flatten(err), key=_order)
        first = problems[0]
        keys = [str(key) for key in first.path if not isinstance(key, int)]
        message = _words(first, unknown)
        if more := len(problems) - 1:
            message += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise error(path, ".".join(filter(None, [prefix, *keys])), message) from err


def _flatten(err: vol.Invalid) -> Iterator[vol.Invalid]:
    """Yield every single problem inside ``err``."""
    if isinstance(err, vol.MultipleInvalid):
        for inner in err.errors:
            yield from _flatten(inner)
    else:
        yield err


def _words(problem: vol.Invalid, unknown: str) -> str:
    """Say what is wrong in our words, the same on voluptuous and on probatio."""
    if problem.msg == EXTRA or getattr(problem, "code", None) == EXTRA_CODE:
        return unknown
    return "is required" if problem.msg == MISSING else problem.msg


def _order(problem: vol.Invalid) -> tuple[bool, str]:
    """Sort key: problems in file order first, then missing keys by name (voluptuous uses a set)."""
    missing = isinstance(problem, vol.RequiredFieldInvalid)
    return missing, (".".join(map(str, problem.path)) if missing else "")


def toml_type(value: object) -> str:
    """Name a TOML value's type the way the TOML spec does."""
    return TOML_TYPES.get(type(value), "date/time")


def article(noun: str) -> str:
    """Put "a" or "an" before a type name."""
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def of_type(kind: str, name: str | None = None) -> Validator:
    """Return a validator for one TOML type (``name`` in messages); an int may stand for a float."""

    def check(value: object) -> object:
        """Pass ``value`` when it has the type, else say which type it has."""
        if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if (got := toml_type(value)) != kind:
            raise vol.Invalid(f"expected {article(name or kind)}, got {article(got)}")
        return value

    return check


TEXT = of_type("string")


def array(item: Validator, name: str) -> Validator:
    """Return a validator for a TOML array whose items pass ``item``, read as a tuple."""
    return vol.All(of_type("array", f"array of {name}"), [item], vol.Coerce(tuple))


def table(fields: Mapping[Hashable, object], into: Callable[..., object] = dict) -> Validator:
    """Return a validator for a TOML table holding only ``fields``, built as ``into(**values)``."""
    schema = vol.Schema(dict(fields), extra=vol.PREVENT_EXTRA)
    return vol.All(of_type("table"), schema, lambda values: into(**values))


def unique[T](values: Iterable[T]) -> tuple[T, ...]:
    """Drop repeated values, keeping the first of each."""
    return tuple(dict.fromkeys(values))


def config_value(value: object) -> ConfigValue:
    """Accept a plugin.toml default: a string, number, boolean, or an array of one such type."""
    if isinstance(value, list):
        kinds = {toml_type(item) for item in value}
        if len(kinds) > 1 or not kinds <= SCALAR_TYPES:
            raise vol.Invalid("an array must hold strings, numbers or booleans of one type")
        return tuple(value)
    if isinstance(value, str | int | float | bool):
        return value
    raise vol.Invalid(f"{article(toml_type(value))} is not supported here")


def _override(default: ConfigValue) -> Validator:
    """Return the validator for a profile's override of ``default``: the same TOML type."""
    match default:
        case ():
            return vol.All(of_type("array"), config_value)
        case (first, *_):
            kind = toml_type(first)
            return array(of_type(kind), f"{kind}s")
        case _:
            return of_type(toml_type(default))


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginConfig:
    """A plugin's resolved settings: plugin.toml defaults with a profile's overrides applied."""

    plugin_id: str
    values: Mapping[str, ConfigValue] = field(default_factory=lambda: MappingProxyType({}))
    defaults_path: Path
    override_path: Path | None = None
    overridden: frozenset[str] = frozenset()

    def with_overrides(self, raw: Mapping[str, object], *, path: Path, prefix: str) -> PluginConfig:
        """Apply a profile's overrides; unknown keys and type mismatches raise."""
        schema = vol.Schema(
            {key: _override(default) for key, default in self.values.items()},
            extra=vol.PREVENT_EXTRA,
        )
        known = ", ".join(sorted(self.values)) or "none"
        unknown = f"unknown setting for plugin {self.plugin_id!r} (known: {known})"
        with reporting(path, PluginConfigError, prefix, unknown):
            overrides = schema(dict(raw))
        return PluginConfig(
            plugin_id=self.plugin_id,
            values=MappingProxyType({**self.values, **overrides}),
            defaults_path=self.defaults_path,
            override_path=path,
            overridden=frozenset(raw),
        )

    def error(self, key: str, message: str) -> PluginConfigError:
        """Build an error about ``key``, naming the file that set it: profile or plugin.toml."""
        if key in self.overridden and self.override_path is not None:
            return PluginConfigError(self.override_path, f"plugins.{self.plugin_id}.{key}", message)
        return PluginConfigError(self.defaults_path, f"config.{key}", message)

    def _get(self, key: str, kind: str) -> ConfigValue:
        """Return a setting, or raise when the plugin asks for one its plugin.toml lacks."""
        if key not in self.values:
            raise self.error(key, f"the plugin reads {article(kind)} that is not declared here")
        return self.values[key]

    def _mismatch(self, key: str, kind: str) -> PluginConfigError:
        """Build the error for a setting the plugin reads as another type."""
        return self.error(key, f"the plugin expects {article(kind)}")

    def text(self, key: str) -> str:
        """Return a string setting."""
        value = self._get(key, "string")
        if not isinstance(value, str):
            raise self._mismatch(key, "string")
        return value

    def integer(self, key: str) -> int:
        """Return an integer setting."""
        value = self._get(key, "integer")
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._mismatch(key, "integer")
        return value

    def number(self, key: str) -> float:
        """Return a float setting; an integer default reads as a float."""
        value = self._get(key, "float")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._mismatch(key, "float")
        return float(value)

    def flag(self, key: str) -> bool:
        """Return a boolean setting."""
        value = self._get(key, "boolean")
        if not isinstance(value, bool):
            raise self._mismatch(key, "boolean")
        return value

    def texts(self, key: str) -> tuple[str, ...]:
        """Return an array-of-strings setting."""
        value = self._get(key, "array of strings")
        if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
            raise self._mismatch(key, "array of strings")
        return tuple(str(item) for item in value)
