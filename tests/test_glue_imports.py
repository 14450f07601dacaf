"""The HA glue uses the engine through its public faces only, never a runner internal.

Every glue module (everything in ``custom_components/companion_agent`` outside ``engine/``)
is parsed; each import of an engine module must name one of ``ALLOWED``, and a name taken
from a module that declares ``__all__`` must be in it.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

PACKAGE = "custom_components.companion_agent"
ROOT = Path(__file__).resolve().parents[1] / "custom_components" / "companion_agent"

ALLOWED = {
    # The engine's own face: what a host builds, starts, holds and reads.
    "engine.engine": "Engine, EngineSettings and what its methods take and return",
    "engine.turn.handle": "the Turn a host holds",
    "engine.turn.request": "TurnRequest, its Persona, the spoken lines",
    "engine.turn.follow_ups": "whether a finished turn waits for the person's answer",
    "engine.turn.disown": "whether words take the last turn back (who spoke it is the host's)",
    "engine.events": "the typed items a turn streams",
    "engine.errors": "CompanionError and its kinds, mapped to HA errors",
    "engine.json_types": "JSON values crossing into HA",
    # Package faces (their __all__): parts a host uses directly.
    "engine.llm": "the model adapter (checking a server, listing its models)",
    "engine.plugins": "plugin and profile types, the host's services for plugins",
    "engine.proactive": "presence and state types a host supplies",
    "engine.speech": "the Wyoming and embedded voices behind the TTS/STT entities",
    "engine.speech.satellite": "a Wyoming satellite's protocol, behind the Assist satellite",
    "engine.pipeline": "the output pipeline a TTS entity runs on HA's text",
    "engine.memory": "memory and its records, for the memory services and list",
    "engine.vision": "the cameras a host supplies, and the bounds and checks of images",
    "engine.voices": "who speaks a turn: the speaker encoder and voiceprints behind STT, enrolment",
    # What only the host supplies.
    "engine.tools.contract": "the contract of the host's tools (HA's LLM API)",
    "engine.tools.registry": "the host's tools",
    "engine.tools.holding": "what the host's tools are about, for the line said while they run",
    "engine.guard.policy": "the host's guard rules (HA's locks, alarms, covers), its targets",
    "engine.memory.backends": "the memory a host configures, and checking it",
    "engine.redaction": "secrets out of titles and log lines",
    "engine.chars": "the one text cleaner, for outside text put in HA's errors and issues",
}
"""Engine modules the glue may import, and why."""

RUNNER_INTERNALS = (
    "engine.turn.runner",
    "engine.turn.sink",
    "engine.turn.job",
    "engine.turn.loop",
    "engine.turn.history",
    "engine.guard.executor",
    "engine.guard.confirmations",
    "engine.audit",
)


def glue_modules() -> list[Path]:
    """Return every glue source file."""
    return sorted(p for p in ROOT.rglob("*.py") if ROOT / "engine" not in p.parents)


def engine_imports(path: Path, source: str | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """Return each engine module ``path`` imports (relative to the package) and its names."""
    package = (*PACKAGE.split(".")[:1], *path.relative_to(ROOT.parent).parts[:-1])
    text = path.read_text(encoding="utf-8") if source is None else source
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join((*base, *(node.module.split(".") if node.module else ())))
            else:
                module = node.module or ""
            names = tuple(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.extend(_engine(alias.name, ()))
            continue
        else:
            continue
        found.extend(_engine(module, names))
    return found


def _engine(module: str, names: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """Return ``module`` relative to the package when it is an engine module."""
    prefix = f"{PACKAGE}."
    if module.startswith(prefix) and module[len(prefix) :].split(".", maxsplit=1)[0] == "engine":
        return [(module[len(prefix) :], names)]
    return []


def test_the_glue_imports_only_the_engines_public_faces() -> None:
    """No glue module imports an engine module outside ``ALLOWED``."""
    offenders = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in glue_modules()
        for module, _names in engine_imports(path)
        if module not in ALLOWED
    ]
    assert offenders == []


def test_the_glue_takes_only_what_a_face_exports() -> None:
    """A name imported from a module with ``__all__`` is one it exports."""
    offenders = []
    for path in glue_modules():
        for module, names in engine_imports(path):
            exported = getattr(importlib.import_module(f"{PACKAGE}.{module}"), "__all__", None)
            offenders += [
                f"{path.relative_to(ROOT)}: {module}.{name}"
                for name in names
                if exported is not None and name not in exported
            ]
    assert offenders == []


def test_the_check_sees_the_glues_imports_and_keeps_runner_internals_out() -> None:
    """The parser finds the glue's engine imports; no runner internal is ever allowed."""
    seen = {module for path in glue_modules() for module, _names in engine_imports(path)}
    assert {"engine.engine", "engine.turn.handle", "engine.events"} <= seen
    assert not set(RUNNER_INTERNALS) & set(ALLOWED)
    sneaky = (
        "from ..engine.turn.runner import TurnRunner\n"
        "import custom_components.companion_agent.engine.guard.executor\n"
        "from ..const import DOMAIN\n"
    )
    assert engine_imports(ROOT / "voice" / "probe.py", sneaky) == [
        ("engine.turn.runner", ("TurnRunner",)),
        ("engine.guard.executor", ()),
    ]
