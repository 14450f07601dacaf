"""A pytest plugin for the Python 3.14 tier (script/py314): probatio answers as ``voluptuous``.

Home Assistant 2026.9 and later call ``probatio.compat.install_as_voluptuous()`` at startup,
so every ``import voluptuous`` (ours in the profile and plugin.toml schemas included) gets
probatio's shim. Loaded with ``-p`` before any conftest imports the engine, this does the
same, and stops the session at once when it is not on Python 3.14 or when ``voluptuous`` is
anything but the shim: a tier that silently ran on 3.13 or on voluptuous would prove nothing.
"""

from __future__ import annotations

import sys

import probatio.compat

probatio.compat.install_as_voluptuous()

import voluptuous  # noqa: E402  (after the install, as in HA)
import voluptuous.error  # noqa: E402

if (sys.version_info.major, sys.version_info.minor) != (3, 14):
    raise RuntimeError(f"the 3.14 tier runs on Python {sys.version.split()[0]}")
if voluptuous.__name__ != "probatio._vol_shim" or not voluptuous.error.__name__.startswith(
    "probatio."
):
    raise RuntimeError(f"voluptuous is {voluptuous.__name__}, not probatio's shim")
