"""``plugin.toml``: a plugin's identity, its types, its entry point and its default config.

```toml
[plugin]
id = "diary"                      # lower case, digits, underscores
type = ["hook", "tool"]           # or one string: tool | hook | trigger | transformer
entry = "plugin:DiaryPlugin"      # module inside the plugin folder : class
name = "Diary"                    # optional
version = "1.0.0"                 # optional
description = "Keeps a diary"     # optional

[config]                          # defaults; a profile may override these keys only
max_summary_chars = 600
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import cast

from ..errors import PluginConfigError
from .config import PluginConfig, TableReader, config_value, read_toml
from .types import PLUGIN_TYPES, PluginType

MANIFEST_NAME = "plugin.toml"
PLUGIN_ID = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
ENTRY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_IDS = frozenset({"enabled"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginManifest:
    """A parsed plugin.toml."""

    id: str
    types: tuple[PluginType, ...]
    entry: str
    name: str
    version: str
    description: str
    defaults: PluginConfig
    folder: Path

    @property
    def path(self) -> Path:
        """Return the plugin.toml file."""
        return self.folder / MANIFEST_NAME

    @property
    def module(self) -> str:
        """Return the entry's module, dotted, relative to the plugin folder."""
        return self.entry.partition(":")[0]

    @property
    def class_name(self) -> str:
        """Return the entry's class name."""
        return self.entry.partition(":")[2]


def read_manifest(folder: Path) -> PluginManifest:
    """Parse ``folder/plugin.toml``; raise ``PluginConfigError`` naming file and key."""
    path = folder / MANIFEST_NAME
    document = TableReader(read_toml(path, PluginConfigError), path=path, error=PluginConfigError)
    if not document.has("plugin"):
        raise document.fail("plugin", "the [plugin] table is required")
    plugin = document.table("plugin")
    plugin_id = plugin.text("id")
    if not PLUGIN_ID.match(plugin_id) or plugin_id in RESERVED_IDS:
        raise plugin.fail("id", "use lower-case letters, digits and underscores, not 'enabled'")
    types = _types(plugin)
    entry = plugin.text("entry")
    if not ENTRY.match(entry):
        raise plugin.fail("entry", "expected 'module:Class', e.g. 'plugin:MyPlugin'")
    manifest = PluginManifest(
        id=plugin_id,
        types=types,
        entry=entry,
        name=plugin.text("name", plugin_id),
        version=plugin.text("version", "0"),
        description=plugin.text("description", ""),
        defaults=_defaults(document.table("config"), plugin_id, path),
        folder=folder,
    )
    plugin.finish()
    document.finish()
    return manifest


def _types(plugin: TableReader) -> tuple[PluginType, ...]:
    """Read ``type``: one type name or an array of them."""
    raw = plugin.take("type")
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise plugin.fail("type", f"expected one of {', '.join(PLUGIN_TYPES)} or an array of them")
    unknown = [name for name in names if name not in PLUGIN_TYPES]
    if unknown:
        raise plugin.fail("type", f"unknown type {unknown[0]!r}; use {', '.join(PLUGIN_TYPES)}")
    return tuple(dict.fromkeys(cast(list[PluginType], names)))


def _defaults(table: TableReader, plugin_id: str, path: Path) -> PluginConfig:
    """Read ``[config]``: every value a string, number, boolean or array of one of those."""
    values = {
        key: config_value(raw, path=path, key=table.key(key))
        for key, raw in table.remaining().items()
    }
    return PluginConfig(plugin_id=plugin_id, values=MappingProxyType(values), defaults_path=path)
