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

import voluptuous as vol

from ..errors import PluginConfigError
from .config import TEXT, PluginConfig, config_value, of_type, read_toml, reporting, table, unique
from .plugin import PLUGIN_TYPES, PluginType

MANIFEST_NAME = "plugin.toml"
PLUGIN_ID = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
ENTRY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_IDS = frozenset({"enabled", "confirmations", "home", "input", "unnamed"})
"""``enabled`` is a profile key; the others label the host's own reference lines."""
KINDS = ", ".join(PLUGIN_TYPES)
ID_RULE = (
    "use lower-case letters, digits and underscores; enabled, confirmations, home, input "
    "and unnamed are reserved"
)
TYPE_RULE = f"expected one of {KINDS}, or an array of them"

PLUGIN_TABLE = table(
    {
        vol.Required("id"): vol.All(
            TEXT, vol.Match(PLUGIN_ID, msg=ID_RULE), vol.NotIn(RESERVED_IDS, msg=ID_RULE)
        ),
        vol.Required("type"): vol.All(
            lambda value: [value] if isinstance(value, str) else value,
            vol.All(of_type("array"), vol.Length(min=1), msg=TYPE_RULE),
            [vol.In(PLUGIN_TYPES, msg=f"unknown type; use {KINDS}")],
            unique,
        ),
        vol.Required("entry"): vol.All(
            TEXT, vol.Match(ENTRY, msg="expected 'module:Class', e.g. 'plugin:MyPlugin'")
        ),
        vol.Optional("name"): TEXT,
        vol.Optional("version", default="0"): TEXT,
        vol.Optional("description", default=""): TEXT,
    }
)
MANIFEST = vol.Schema(
    {
        vol.Required("plugin", msg="the [plugin] table is required"): PLUGIN_TABLE,
        vol.Optional("config", default=dict): table({str: config_value}),
    },
    extra=vol.PREVENT_EXTRA,
)


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
    raw = read_toml(path, PluginConfigError)
    with reporting(path, PluginConfigError):
        document = MANIFEST(raw)
    plugin = document["plugin"]
    return PluginManifest(
        id=plugin["id"],
        types=plugin["type"],
        entry=plugin["entry"],
        name=plugin.get("name", plugin["id"]),
        version=plugin["version"],
        description=plugin["description"],
        defaults=PluginConfig(
            plugin_id=plugin["id"],
            values=MappingProxyType(document["config"]),
            defaults_path=path,
        ),
        folder=folder,
    )
