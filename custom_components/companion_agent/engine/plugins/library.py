"""``Library``: plugins and profiles loaded together, the one call a host makes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .active import PluginSet
from .loader import LoadProblem, PluginCatalog, load_plugins
from .plugin import HostServices
from .profiles import Profile, ProfileLibrary


@dataclass(frozen=True, slots=True, kw_only=True)
class Library:
    """The plugin catalog and the profile snapshots loaded from the same roots."""

    catalog: PluginCatalog = field(default_factory=PluginCatalog)
    profiles: ProfileLibrary = field(default_factory=ProfileLibrary)

    @property
    def problems(self) -> tuple[LoadProblem, ...]:
        """Return every plugin and profile problem, for the host's repair issues."""
        return (*self.catalog.problems, *self.profiles.problems)

    def activate(self, profile: Profile, host: HostServices) -> PluginSet:
        """Build the plugins ``profile`` enables; check ``problems`` on the result too."""
        return PluginSet.build(self.catalog, profile, host)


def load_library(roots: Sequence[Path], previous: Library | None = None) -> Library:
    """Load plugins, then profiles, from ``roots``; blocking; ``previous`` keeps last good ones."""
    catalog = load_plugins(roots)
    base = ProfileLibrary(roots=tuple(roots))
    if previous is not None:
        base = ProfileLibrary(roots=tuple(roots), profiles=previous.profiles.profiles)
    return Library(catalog=catalog, profiles=base.reload(catalog))
