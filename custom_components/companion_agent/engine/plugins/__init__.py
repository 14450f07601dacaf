"""Plugins and profiles: plugin types, plugin.toml loader, profile TOML, hook manager."""

from ..llm.roles import ModelChoice
from .active import Library, PluginSet, load_library
from .config import ConfigValue, PluginConfig
from .hooks import HookManager
from .loader import LoadProblem, PluginCatalog, builtin_roots, load_plugins
from .manifest import PluginManifest
from .plugin import (
    Hook,
    HookPlugin,
    HostServices,
    Plugin,
    PluginContext,
    PluginType,
    ProactiveEmitter,
    ProactiveRequest,
    ToolPlugin,
    TransformerPlugin,
    TriggerPlugin,
    TurnContext,
)
from .profiles import (
    POLICY_LEVELS,
    EnabledPlugin,
    OutputFormat,
    PolicyLevel,
    Profile,
    ProfileLibrary,
    UnreadProfile,
)

__all__ = [
    "POLICY_LEVELS",
    "ConfigValue",
    "EnabledPlugin",
    "Hook",
    "HookManager",
    "HookPlugin",
    "HostServices",
    "Library",
    "LoadProblem",
    "ModelChoice",
    "OutputFormat",
    "Plugin",
    "PluginCatalog",
    "PluginConfig",
    "PluginContext",
    "PluginManifest",
    "PluginSet",
    "PluginType",
    "PolicyLevel",
    "ProactiveEmitter",
    "ProactiveRequest",
    "Profile",
    "ProfileLibrary",
    "ToolPlugin",
    "TransformerPlugin",
    "TriggerPlugin",
    "TurnContext",
    "UnreadProfile",
    "builtin_roots",
    "load_library",
    "load_plugins",
]
