"""The repair issues a user must fix, and their fix flows.

The issues: plugins or profiles not loaded, a persona without its profile's rules, history
set aside, a TTS voice gone.

The server check (``health.py``) and the pipeline check (``pipelines.py``) raise their own
issues; both mark them with the entry's id, so they go when the entry is disabled or removed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import voluptuous as vol
from homeassistant.components.repairs import ConfirmRepairFlow, RepairsFlow
from homeassistant.core import HomeAssistant, callback
from homeassistant.data_entry_flow import FlowResult
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN, ISSUE_MEMORY_FILE
from .engine.plugins import LoadProblem
from .engine.turn.request import PersonaRules
from .voice.pipelines import ISSUE_PREFIX as LOCAL_INTENTS_PREFIX
from .voice.pipelines import async_turn_off_local_intents

PROBLEM_PREFIXES = ("plugin_", "profile_")
VOICE_PREFIX = "tts_voice_"
PERSONA_RULES_PREFIX = "persona_rules_"


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
def async_sync_persona_rules(
    hass: HomeAssistant, entry_id: str, persona_id: str, persona: str, rules: PersonaRules
) -> None:
    """Say that a persona's profile cannot be read and which rules hold; remove it once read.

    One issue per persona, naming the file and its problem (or that there is no such
    file): its last good rules apply (a warning), or every action waits for a yes (an error).
    """
    issue_id = f"{PERSONA_RULES_PREFIX}{persona_id}"
    unread = rules.unread
    if rules.origin == "profile" or unread is None:
        ir.async_delete_issue(hass, DOMAIN, issue_id)
        return
    placeholders = {"persona": persona, "profile": unread.profile_id, "path": str(unread.path)}
    cause = "missing"
    if (problem := unread.problem) is not None:
        cause = "broken"
        placeholders |= {"key": problem.key, "message": problem.message}
    ir.async_create_issue(
        hass,
        DOMAIN,
        issue_id,
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING if rules.origin == "kept" else ir.IssueSeverity.ERROR,
        translation_key=f"persona_profile_{cause}_{rules.origin}",
        translation_placeholders=placeholders,
        data={"entry_id": entry_id},
    )


@callback
def async_clear_persona_rules(hass: HomeAssistant, persona_ids: Iterable[str]) -> None:
    """Remove the rules issues of personas that were removed."""
    for persona_id in persona_ids:
        ir.async_delete_issue(hass, DOMAIN, f"{PERSONA_RULES_PREFIX}{persona_id}")


@callback
def async_report_bad_history(hass: HomeAssistant, path: Path, moved: Path) -> None:
    """Say that a conversation file was not a history and was set aside (or skipped)."""
    key = "bad_history" if moved != path else "unreadable_history"
    _async_report_moved_file(hass, "history", key, path, moved)


@callback
def async_report_bad_memory_file(hass: HomeAssistant, path: Path, moved: Path) -> None:
    """Say that a memory file (the store or the outbox) was unusable and was moved aside."""
    _async_report_moved_file(hass, ISSUE_MEMORY_FILE, ISSUE_MEMORY_FILE, path, moved)


@callback
def async_report_bad_voiceprints(hass: HomeAssistant, path: Path, moved: Path) -> None:
    """Say that the voiceprint file was unreadable and was moved aside: voices enrol again."""
    _async_report_moved_file(hass, "voiceprints", "voiceprints_moved", path, moved)


@callback
def async_report_unreadable_voiceprints(
    hass: HomeAssistant, entry_id: str, path: Path, error: str
) -> None:
    """Say that the voiceprint file cannot be read (its permissions): no voice is recognised."""
    ir.async_create_issue(
        hass,
        DOMAIN,
        f"voiceprints_unreadable_{entry_id}",
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING,
        translation_key="voiceprints_unreadable",
        translation_placeholders={"path": str(path), "error": error},
        data={"entry_id": entry_id},
    )


@callback
def _async_report_moved_file(
    hass: HomeAssistant, prefix: str, key: str, path: Path, moved: Path
) -> None:
    """Raise the warning that ``path`` was moved to ``moved`` (one issue per path)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    ir.async_create_issue(
        hass,
        DOMAIN,
        f"{prefix}_{digest}",
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING,
        translation_key=key,
        translation_placeholders={"path": str(path), "moved": str(moved)},
    )


@callback
def async_report_missing_voice(
    hass: HomeAssistant, entry_id: str, subentry_id: str, voice: str, server: str
) -> None:
    """Say that the TTS server at ``server`` has no voice ``voice``, which a TTS entity uses."""
    placeholders = {"voice": voice, "server": server}
    _async_report_voice(hass, entry_id, subentry_id, "tts_voice_missing", placeholders)


@callback
def async_report_bad_voice_file(
    hass: HomeAssistant, entry_id: str, subentry_id: str, voice: str, path: str
) -> None:
    """Say that the embedded voice ``voice`` (model file ``path``) is missing or unusable."""
    placeholders = {"voice": voice, "path": path}
    _async_report_voice(hass, entry_id, subentry_id, "tts_voice_file", placeholders)


@callback
def _async_report_voice(
    hass: HomeAssistant, entry_id: str, subentry_id: str, key: str, placeholders: dict[str, str]
) -> None:
    """Raise a TTS entity's voice issue (one per entity, whichever problem it has now)."""
    ir.async_create_issue(
        hass,
        DOMAIN,
        f"{VOICE_PREFIX}{subentry_id}",
        is_fixable=False,
        severity=ir.IssueSeverity.ERROR,
        translation_key=key,
        translation_placeholders=placeholders,
        data={"entry_id": entry_id},
    )


@callback
def async_clear_missing_voice(hass: HomeAssistant, subentry_id: str) -> None:
    """Remove the missing-voice (or voice-file) issue of a TTS entity that has spoken again."""
    ir.async_delete_issue(hass, DOMAIN, f"{VOICE_PREFIX}{subentry_id}")


@callback
def async_clear_entry_issues(hass: HomeAssistant, entry_id: str) -> None:
    """Remove the issues raised for one entry (its server, its pipelines)."""
    for (domain, issue_id), issue in list(ir.async_get(hass).issues.items()):
        if domain == DOMAIN and (issue.data or {}).get("entry_id") == entry_id:
            ir.async_delete_issue(hass, DOMAIN, issue_id)


async def async_create_fix_flow(
    hass: HomeAssistant, issue_id: str, data: dict[str, str | int | float | None] | None
) -> RepairsFlow:
    """Return the flow that fixes an issue: local intents are turned off on request."""
    if issue_id.startswith(LOCAL_INTENTS_PREFIX) and data is not None:
        return LocalIntentsRepairFlow(str(data["pipeline_id"]))
    return ConfirmRepairFlow()


class LocalIntentsRepairFlow(RepairsFlow):
    """Turn "prefer handling commands locally" off for the pipeline the issue names."""

    def __init__(self, pipeline_id: str) -> None:
        """Remember the pipeline."""
        self._pipeline_id = pipeline_id

    async def async_step_init(self, user_input: dict[str, str] | None = None) -> FlowResult:
        """Show what will change."""
        return await self.async_step_confirm()

    async def async_step_confirm(self, user_input: dict[str, str] | None = None) -> FlowResult:
        """Turn the setting off once the person confirms."""
        if user_input is not None:
            if not await async_turn_off_local_intents(self.hass, self._pipeline_id):
                return self.async_abort(reason="pipeline_gone")
            return self.async_create_entry(data={})
        issue = ir.async_get(self.hass).async_get_issue(DOMAIN, self.issue_id)
        return self.async_show_form(
            step_id="confirm",
            data_schema=vol.Schema({}),
            description_placeholders=issue.translation_placeholders if issue else None,
        )
