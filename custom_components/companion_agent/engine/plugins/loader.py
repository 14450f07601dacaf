"""The plugin loader: plugin folders under the content roots, their plugin.toml, their code.

Everything here blocks (file reads, imports): hosts run it in an executor. A broken plugin
becomes a ``LoadProblem`` and is skipped; the others still load.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Literal

from ..errors import ConfigFileError, PluginConfigError
from .manifest import MANIFEST_NAME, PluginManifest, read_manifest
from .plugin import PLUGIN_BASES, Plugin

PLUGINS_DIR = "plugins"
PROFILES_DIR = "profiles"
PACKAGE = "companion_agent_plugins"
INTEGRATION_DIR = Path(__file__).resolve().parents[2]
REPO_MARKER = "hacs.json"


def builtin_roots(integration_dir: Path = INTEGRATION_DIR) -> tuple[Path, ...]:
    """Return where the shipped plugins/ and profiles/ live: the install, else the repo."""
    if _has_content(integration_dir):
        return (integration_dir,)
    repo = integration_dir.parents[1]
    if (repo / REPO_MARKER).is_file() and _has_content(repo):
        return (repo,)
    return ()


def _has_content(root: Path) -> bool:
    """Return whether ``root`` holds a plugins/ or profiles/ folder."""
    return (root / PLUGINS_DIR).is_dir() or (root / PROFILES_DIR).is_dir()


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadProblem:
    """A plugin or profile that could not be loaded: the host shows it as a repair issue."""

    kind: Literal["plugin", "profile"]
    path: Path
    key: str
    message: str

    @classmethod
    def from_error(cls, kind: Literal["plugin", "profile"], err: ConfigFileError) -> LoadProblem:
        """Turn a config error into a problem."""
        return cls(kind=kind, path=err.path, key=err.key, message=err.message)

    @property
    def issue_id(self) -> str:
        """Return an id that stays the same while the same file has the same problem key."""
        digest = hashlib.sha256(f"{self.path}\0{self.key}".encode()).hexdigest()[:16]
        return f"{self.kind}_{digest}"

    def __str__(self) -> str:
        """Say file, key and problem in one line."""
        return f"{self.path}: {self.key}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedPlugin:
    """A plugin whose manifest parsed and whose entry class imported."""

    manifest: PluginManifest
    factory: type[Plugin]


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginCatalog:
    """Every plugin found under the roots; later roots replace earlier ones with the same id."""

    plugins: Mapping[str, LoadedPlugin] = field(default_factory=lambda: MappingProxyType({}))
    failed: frozenset[str] = frozenset()
    problems: tuple[LoadProblem, ...] = ()


def load_plugins(roots: Sequence[Path]) -> PluginCatalog:
    """Parse and import every plugin under ``root/plugins`` for each root; blocking."""
    problems: list[LoadProblem] = []
    failed: set[str] = set()
    manifests: dict[str, PluginManifest] = {}
    for root in roots:
        claimed: dict[str, Path] = {}
        for folder in _plugin_folders(root / PLUGINS_DIR):
            try:
                manifest = read_manifest(folder)
            except PluginConfigError as err:
                problems.append(LoadProblem.from_error("plugin", err))
                failed.add(folder.name)
                continue
            if manifest.id in claimed:
                message = f"id also used by {claimed[manifest.id]}"
                problems.append(
                    LoadProblem(kind="plugin", path=manifest.path, key="plugin.id", message=message)
                )
                continue
            claimed[manifest.id] = manifest.path
            manifests[manifest.id] = manifest
    loaded: dict[str, LoadedPlugin] = {}
    for plugin_id, manifest in manifests.items():
        try:
            loaded[plugin_id] = LoadedPlugin(manifest=manifest, factory=import_plugin(manifest))
        except PluginConfigError as err:
            problems.append(LoadProblem.from_error("plugin", err))
            failed.add(plugin_id)
    return PluginCatalog(
        plugins=MappingProxyType(loaded), failed=frozenset(failed), problems=tuple(problems)
    )


def _plugin_folders(base: Path) -> list[Path]:
    """Return the plugin folders in ``base``, skipping hidden and private ones."""
    if not base.is_dir():
        return []
    return sorted(
        folder
        for folder in base.iterdir()
        if folder.is_dir() and not folder.name.startswith((".", "_"))
    )


def import_plugin(manifest: PluginManifest) -> type[Plugin]:
    """Import the entry class afresh from the plugin folder; blocking, run it in an executor."""
    package = f"{PACKAGE}.{manifest.id}"
    _forget(package)
    importlib.invalidate_caches()
    _install_package(package, manifest.folder)
    try:
        module = importlib.import_module(f"{package}.{manifest.module}")
    except Exception as err:
        _forget(package)
        raise PluginConfigError(
            manifest.path,
            "plugin.entry",
            f"importing {manifest.module!r} failed: {type(err).__name__}: {err}",
        ) from err
    return _entry_class(manifest, getattr(module, manifest.class_name, None))


def _entry_class(manifest: PluginManifest, factory: object) -> type[Plugin]:
    """Check the entry is a concrete Plugin class of every declared type, and return it."""
    where = f"{manifest.module}:{manifest.class_name}"
    if not isinstance(factory, type) or not issubclass(factory, Plugin):
        raise PluginConfigError(manifest.path, "plugin.entry", f"{where} is not a Plugin class")
    for kind in manifest.types:
        base = PLUGIN_BASES[kind]
        if not issubclass(factory, base):
            raise PluginConfigError(
                manifest.path,
                "plugin.type",
                f"{where} is declared {kind!r} but is no {base.__name__}",
            )
    if inspect.isabstract(factory):
        missing = ", ".join(sorted(getattr(factory, "__abstractmethods__", ())))
        raise PluginConfigError(
            manifest.path, "plugin.entry", f"{where} does not implement {missing}"
        )
    return factory


def _install_package(name: str, folder: Path) -> None:
    """Register the plugin folder as package ``name`` so its modules import relatively."""
    if PACKAGE not in sys.modules:
        root = importlib.util.module_from_spec(ModuleSpec(PACKAGE, None, is_package=True))
        sys.modules[PACKAGE] = root
    init = folder / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[str(folder)]
        )
    else:
        spec = ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
    if spec is None:
        raise PluginConfigError(folder / MANIFEST_NAME, "plugin.entry", "cannot load the folder")
    package: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    if spec.loader is not None:
        try:
            spec.loader.exec_module(package)
        except Exception as err:
            _forget(name)
            raise PluginConfigError(
                init, "plugin.entry", f"__init__.py failed: {type(err).__name__}: {err}"
            ) from err


def _forget(package: str) -> None:
    """Drop a plugin package and its modules from ``sys.modules`` so the next import is fresh."""
    # list() copies the names at once: other threads (HA's executor) import while this runs.
    for name in [n for n in list(sys.modules) if n == package or n.startswith(f"{package}.")]:
        sys.modules.pop(name, None)
