"""Repair issues: plugins and profiles that could not be loaded, history files set aside.

The server check (``health.py``) raises its own issue, marked with the entry's id, so it goes
when the entry is disabled or removed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN
from .engine.plugins import LoadProblem

PROBLEM_PREFIXES = ("plugin_", "profile_")


@callback
def async_sync_load_problems(hass: HomeAssistant, problems: Iterable[LoadProblem]) -> None:
    """Raise one repair issue per problem and remove the issues that are fixed."""
    wanted = {problem.issue_id: problem for problem in problems}
    registry = ir.async_get(hass)
    for domain, issue_id in list(registry.issues):
        if domain == DOMAIN and issue_id.startswith(PROBLEM_PREFIXES) and issue_id not in wanted:
            ir.async_delete_issue(hass, DOMAIN, issue_id)
    for issue_id, problem in wanted.items():
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key=f"{problem.kind}_problem",
            translation_placeholders={
                "path": str(problem.path),
                "key": problem.key,
                "message": problem.message,
            },
        )


@callback
def async_report_bad_history(hass: HomeAssistant, path: Path, moved: Path) -> None:
    """Say that a conversation file was not a history and was set aside (or skipped)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    ir.async_create_issue(
        hass,
        DOMAIN,
        f"history_{digest}",
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING,
        translation_key="bad_history" if moved != path else "unreadable_history",
        translation_placeholders={"path": str(path), "moved": str(moved)},
    )


@callback
def async_clear_entry_issues(hass: HomeAssistant, entry_id: str) -> None:
    """Remove the issues raised for one entry (its server)."""
    for (domain, issue_id), issue in list(ir.async_get(hass).issues.items()):
        if domain == DOMAIN and (issue.data or {}).get("entry_id") == entry_id:
            ir.async_delete_issue(hass, DOMAIN, issue_id)
