"""Home Assistant releases as data, our requirement sets, and uv resolving them as HA would.

HA installs an integration's requirements with ``uv pip install --constraint
homeassistant/package_constraints.txt``; the on-demand sets (mem0, Neo4j, embedded Piper,
the MP3 encoder)
go the same way when a form asks for them. ``resolve`` runs that resolver without installing
anything: ``uv pip compile`` under one release's constraints file, for the oldest Python the
release runs on and a Linux platform, from binary wheels only (a package that would have to
be compiled on the user's machine counts as not installable). Downloads (index pages and
wheel metadata) are cached in ``~/.cache/companion_agent/uv``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import uv

from custom_components.companion_agent.const import LAMEENC_REQUIREMENT, PIPER_REQUIREMENT
from custom_components.companion_agent.engine.memory.stores.mem0.setup import MEM0_REQUIREMENTS
from custom_components.companion_agent.engine.memory.stores.neo4j.graph import NEO4J_REQUIREMENT

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS_DIR = ROOT / "tests" / "data" / "ha_constraints"
MANIFEST = ROOT / "custom_components" / "companion_agent" / "manifest.json"
HACS = ROOT / "hacs.json"

ON_DEMAND: dict[str, tuple[str, ...]] = {
    "mem0": MEM0_REQUIREMENTS,
    "neo4j": (NEO4J_REQUIREMENT,),
    "piper": (PIPER_REQUIREMENT,),
    "mp3": (LAMEENC_REQUIREMENT,),
}
# manifest.json's requirements before issue 15: exact pins, HA 2026.2.3's.
OLD_MANIFEST = ("jsonschema==4.26.0", "openai==2.15.0", "wyoming>=1.7.2,<2")

# glibc: HA Core in a venv, HA Supervised (Debian). musl: HA OS and the HA container (Alpine);
# those also read HA's own wheel index, so PyPI alone is the stricter test there.
PLATFORMS = {"glibc": "x86_64-manylinux_2_28", "musl": "x86_64-unknown-linux-musl"}
RESOLVE_TIMEOUT = 180.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    """One Home Assistant release: its constraints file and what it runs on."""

    version: str
    python: str
    wyoming: str
    """The version HA's own Wyoming integration pins, installed beside ours."""

    @property
    def constraints(self) -> Path:
        """Return the release's ``package_constraints.txt``, kept as test data."""
        return CONSTRAINTS_DIR / f"{self.version}.txt"


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """What uv decided: the versions it would install, or why it would install nothing."""

    ok: bool
    pins: dict[str, str]
    message: str


def releases() -> list[Release]:
    """Return the checked releases, oldest first, from ``releases.toml``."""
    data = tomllib.loads((CONSTRAINTS_DIR / "releases.toml").read_text(encoding="utf-8"))
    return [
        Release(version=version, python=entry["python"], wyoming=entry["wyoming"])
        for version, entry in data["releases"].items()
    ]


def release(version: str) -> Release:
    """Return the checked release ``version``."""
    return next(r for r in releases() if r.version == version)


def manifest_requirements() -> tuple[str, ...]:
    """Return the requirements ``manifest.json`` declares."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return tuple(manifest["requirements"])


def hacs_minimum() -> str:
    """Return the oldest Home Assistant ``hacs.json`` admits."""
    return str(json.loads(HACS.read_text(encoding="utf-8"))["homeassistant"])


def cache_dir() -> Path:
    """Return the folder uv caches its downloads in, outside the work tree."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "companion_agent" / "uv"


def resolve(requirements: tuple[str, ...], release: Release, platform: str) -> Resolution:
    """Resolve ``requirements`` as ``release``'s installer would on ``platform``."""
    with tempfile.TemporaryDirectory(prefix="ha-resolve-") as tmp:
        wanted = Path(tmp) / "requirements.txt"
        wanted.write_text("\n".join(requirements) + "\n", encoding="utf-8")
        beside = Path(tmp) / "ha_integrations.txt"
        beside.write_text(f"wyoming=={release.wyoming}\n", encoding="utf-8")
        command = [
            uv.find_uv_bin(),
            "pip",
            "compile",
            "--no-config",  # no uv.toml of this machine's
            "--no-python-downloads",
            "--python",
            sys.executable,  # only to run uv's queries: the target is --python-version
            "--python-version",
            release.python,
            "--python-platform",
            PLATFORMS[platform],
            "--only-binary",
            ":all:",
            "--cache-dir",
            str(cache_dir()),
            "--constraint",
            str(release.constraints),
            "--constraint",
            str(beside),
            "--no-header",
            "--no-annotate",
            "--quiet",
            str(wanted),
        ]
        env = {key: value for key, value in os.environ.items() if not key.startswith("UV_")}
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            timeout=RESOLVE_TIMEOUT,
            check=False,
        )
    pins = dict(
        line.split("==", 1)
        for line in result.stdout.splitlines()
        if "==" in line and line[0] != "#"
    )
    return Resolution(ok=result.returncode == 0, pins=pins, message=result.stderr.strip())
