"""The user's own plugin and profile files under HA's config folder, written by tests."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from homeassistant.core import HomeAssistant

from custom_components.companion_agent.const import STORAGE_FOLDER


def user_folder(hass: HomeAssistant) -> Path:
    """Return the user's plugin and profile folder under HA's config folder."""
    return Path(hass.config.path(STORAGE_FOLDER))


def write_plugin(hass: HomeAssistant, plugin_id: str, manifest: str, code: str) -> Path:
    """Write ``<config>/companion_agent/plugins/<id>/`` and return its plugin.toml."""
    folder = user_folder(hass) / "plugins" / plugin_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.py").write_text(dedent(code), encoding="utf-8")
    path = folder / "plugin.toml"
    path.write_text(dedent(manifest), encoding="utf-8")
    return path


def write_profile(hass: HomeAssistant, profile_id: str, text: str) -> Path:
    """Write ``<config>/companion_agent/profiles/<id>.toml`` and return it."""
    folder = user_folder(hass) / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{profile_id}.toml"
    path.write_text(dedent(text), encoding="utf-8")
    return path
