"""PluginConfig: overrides must match the default's type; plugins read settings typed."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from custom_components.companion_agent.engine.errors import PluginConfigError
from custom_components.companion_agent.engine.plugins import PluginConfig

DEFAULTS = PluginConfig(
    plugin_id="p",
    values=MappingProxyType(
        {"name": "x", "count": 3, "ratio": 0.5, "on": True, "tags": ("a",), "any": ()}
    ),
    defaults_path=Path("plugins/p/plugin.toml"),
)
PROFILE = Path("profiles/me.toml")


def test_overrides_apply_and_widen_integers_to_floats() -> None:
    """An integer may stand for a float; arrays keep their element type; reads are typed."""
    raw: dict[str, object] = {"ratio": 2, "tags": ["b", "c"], "any": [1, 2], "on": False}
    config = DEFAULTS.with_overrides(raw, path=PROFILE, prefix="plugins.p")
    assert config.number("ratio") == 2.0
    assert config.texts("tags") == ("b", "c")
    assert config.values["any"] == (1, 2)
    assert config.flag("on") is False
    assert (config.text("name"), config.integer("count")) == ("x", 3)
    assert DEFAULTS.number("ratio") == 0.5


@pytest.mark.parametrize(
    ("raw", "key", "words"),
    [
        ({"count": True}, "plugins.p.count", "expected an integer, got a boolean"),
        ({"on": 1}, "plugins.p.on", "expected a boolean, got an integer"),
        ({"tags": "a"}, "plugins.p.tags", "expected an array of strings, got a string"),
        ({"tags": ["a", 1]}, "plugins.p.tags", "expected a string, got an integer"),
        ({"any": "a"}, "plugins.p.any", "expected an array, got a string"),
        ({"any": [1, "a"]}, "plugins.p.any", "of one type"),
        ({"nope": 1}, "plugins.p.nope", "unknown setting for plugin 'p' (known: any, count,"),
    ],
)
def test_bad_overrides_name_the_profile_and_key(
    raw: dict[str, object], key: str, words: str
) -> None:
    """Each mismatch names the profile file and the dotted key."""
    with pytest.raises(PluginConfigError) as caught:
        DEFAULTS.with_overrides(raw, path=PROFILE, prefix="plugins.p")
    assert (caught.value.path, caught.value.key) == (PROFILE, key)
    assert words in caught.value.message


def test_reading_an_undeclared_or_mistyped_setting_names_the_file() -> None:
    """A plugin bug (asking for a key its plugin.toml lacks) points at plugin.toml."""
    with pytest.raises(PluginConfigError) as caught:
        DEFAULTS.text("missing")
    assert (caught.value.path, caught.value.key) == (DEFAULTS.defaults_path, "config.missing")
    with pytest.raises(PluginConfigError, match="expects a string"):
        DEFAULTS.text("count")
