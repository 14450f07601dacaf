"""Typed reading of TOML files: unknown keys and wrong types are errors naming file and key."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ..errors import ConfigFileError, PluginConfigError

type ConfigScalar = str | int | float | bool
type ConfigValue = ConfigScalar | tuple[ConfigScalar, ...]

SYNTAX_KEY = "(toml)"


def read_toml(path: Path, error: type[ConfigFileError]) -> dict[str, object]:
    """Read a TOML file; unreadable files and syntax errors raise ``error``."""
    try:
        with path.open("rb") as file:
            return dict(tomllib.load(file))
    except tomllib.TOMLDecodeError as err:
        raise error(path, SYNTAX_KEY, f"not valid TOML: {err}") from err
    except (OSError, UnicodeDecodeError) as err:
        raise error(path, SYNTAX_KEY, f"cannot be read: {err}") from err


def toml_type(value: object) -> str:
    """Name a TOML value's type the way the TOML spec does."""
    match value:
        case bool():
            return "boolean"
        case int():
            return "integer"
        case float():
            return "float"
        case str():
            return "string"
        case list():
            return "array"
        case dict():
            return "table"
        case _:
            return "date/time"


def _scalar(value: object) -> ConfigScalar | None:
    """Return ``value`` when it is a config scalar, else None."""
    return value if isinstance(value, str | int | float | bool) else None


def config_value(raw: object, *, path: Path, key: str) -> ConfigValue:
    """Check a default: a string, number, boolean, or an array of one such type."""
    scalar = _scalar(raw)
    if scalar is not None:
        return scalar
    if isinstance(raw, list):
        items = [_scalar(item) for item in raw]
        kinds = {toml_type(item) for item in raw}
        if all(item is not None for item in items) and len(kinds) <= 1:
            return tuple(item for item in items if item is not None)
        raise PluginConfigError(
            path, key, "an array must hold strings, numbers or booleans of one type"
        )
    raise PluginConfigError(path, key, f"{article(toml_type(raw))} is not supported here")


def coerce(default: ConfigValue, raw: object, *, path: Path, key: str) -> ConfigValue:
    """Check an override against its default's type; an integer may stand for a float."""
    match default:
        case tuple():
            if not isinstance(raw, list):
                raise PluginConfigError(
                    path, key, f"expected an array, got {article(toml_type(raw))}"
                )
            if not default:
                return config_value(raw, path=path, key=key)
            return tuple(_coerce_scalar(default[0], item, path=path, key=key) for item in raw)
        case _:
            return _coerce_scalar(default, raw, path=path, key=key)


def _coerce_scalar(default: ConfigScalar, raw: object, *, path: Path, key: str) -> ConfigScalar:
    """Check one scalar against the default's type."""
    expected = toml_type(default)
    got = toml_type(raw)
    if expected == "float" and got == "integer" and isinstance(raw, int):
        return float(raw)
    value = _scalar(raw)
    if value is None or got != expected:
        raise PluginConfigError(path, key, f"expected {article(expected)}, got {article(got)}")
    return value


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
        values = dict(self.values)
        for key, value in raw.items():
            dotted = f"{prefix}.{key}"
            if key not in values:
                known = ", ".join(sorted(values)) or "none"
                raise PluginConfigError(
                    path, dotted, f"unknown setting for plugin {self.plugin_id!r} (known: {known})"
                )
            values[key] = coerce(values[key], value, path=path, key=dotted)
        return PluginConfig(
            plugin_id=self.plugin_id,
            values=MappingProxyType(values),
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


class TableReader:
    """Read one TOML table key by key; keys nobody read are reported as unknown."""

    def __init__(
        self,
        table: Mapping[str, object],
        *,
        path: Path,
        error: type[ConfigFileError],
        prefix: str = "",
    ) -> None:
        """Wrap ``table`` found at ``prefix`` in the file at ``path``."""
        self._table = table
        self._path = path
        self._error = error
        self._prefix = prefix
        self._seen: set[str] = set()

    @property
    def prefix(self) -> str:
        """Return the dotted name of this table in the file ("" for the top level)."""
        return self._prefix

    def key(self, key: str) -> str:
        """Return the dotted name of ``key`` in the file."""
        return f"{self._prefix}.{key}" if self._prefix else key

    def fail(self, key: str, message: str) -> ConfigFileError:
        """Build the error for ``key``."""
        return self._error(self._path, self.key(key), message)

    def has(self, key: str) -> bool:
        """Return whether the table sets ``key``."""
        return key in self._table

    def take(self, key: str) -> object:
        """Return the raw value of ``key`` (None when absent) and mark it read."""
        self._seen.add(key)
        return self._table.get(key)

    def text(self, key: str, default: str | None = None) -> str:
        """Return a string; without a default the key is required."""
        value = self.take(key)
        if value is None and default is not None:
            return default
        if not isinstance(value, str):
            raise self.fail(key, "is required" if value is None else _expected("string", value))
        return value

    def optional_text(self, key: str) -> str | None:
        """Return a string, or None when the key is absent."""
        if not self.has(key):
            return None
        return self.text(key)

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        """Return an integer of at least ``minimum``."""
        value = self.take(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, _expected("integer", value))
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}")
        return value

    def number(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        """Return a number of at least ``minimum``; integers are accepted."""
        value = self.take(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, _expected("float", value))
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}")
        return float(value)

    def texts(self, key: str) -> tuple[str, ...]:
        """Return an array of strings (empty when absent)."""
        value = self.take(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(key, "expected an array of strings")
        return tuple(str(item) for item in value)

    def table(self, key: str) -> TableReader:
        """Return a reader for a sub-table (empty when absent)."""
        value = self.take(key)
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise self.fail(key, _expected("table", value))
        return TableReader(value, path=self._path, error=self._error, prefix=self.key(key))

    def remaining(self) -> dict[str, object]:
        """Return every key not read yet, and mark them read."""
        rest = {key: value for key, value in self._table.items() if key not in self._seen}
        self._seen.update(rest)
        return rest

    def finish(self) -> None:
        """Raise for the first key nobody read: it is unknown."""
        for key in self._table:
            if key not in self._seen:
                raise self.fail(key, "unknown key")


def _expected(kind: str, value: object) -> str:
    """Say which type was expected and which was found."""
    return f"expected {article(kind)}, got {article(toml_type(value))}"


def article(noun: str) -> str:
    """Put "a" or "an" before a type name."""
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"
