"""The repair issues read the same in every shipped language: same keys, same placeholders."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from custom_components.companion_agent.const import ISSUE_LOCAL_INTENTS, ISSUE_SERVER_UNREACHABLE

PACKAGE = Path(__file__).resolve().parents[2] / "custom_components" / "companion_agent"
FILES = ("strings.json", "translations/en.json", "translations/zh-Hans.json")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def flatten(value: object, prefix: str = "") -> dict[str, str]:
    """Return every text of a translation tree by its dotted key."""
    if isinstance(value, dict):
        return {
            key: text
            for name, child in value.items()
            for key, text in flatten(child, f"{prefix}{name}.").items()
        }
    assert isinstance(value, str)
    return {prefix.rstrip("."): value}


def issues(path: str) -> dict[str, str]:
    """Return the texts of one file's repair issues."""
    data = json.loads((PACKAGE / path).read_text(encoding="utf-8"))
    return flatten(data["issues"])


@pytest.mark.parametrize("path", FILES[1:])
def test_every_language_has_the_same_issue_texts_and_placeholders(path: str) -> None:
    """No text missing or extra, and each one names the same placeholders as the source."""
    source, translated = issues(FILES[0]), issues(path)
    assert sorted(translated) == sorted(source)
    for key, text in source.items():
        assert set(PLACEHOLDER.findall(translated[key])) == set(PLACEHOLDER.findall(text)), key


def test_the_new_issues_use_the_placeholders_the_code_fills() -> None:
    """The server issue names server and title; the pipeline issue, pipeline and agent."""
    source = issues(FILES[0])
    server = source[f"{ISSUE_SERVER_UNREACHABLE}.description"]
    assert set(PLACEHOLDER.findall(server)) == {"server", "title"}
    flow = source[f"{ISSUE_LOCAL_INTENTS}.fix_flow.step.confirm.description"]
    assert set(PLACEHOLDER.findall(flow)) == {"pipeline", "agent"}
    assert f"{ISSUE_LOCAL_INTENTS}.description" not in source  # fixable: the flow explains
    assert source[f"{ISSUE_LOCAL_INTENTS}.fix_flow.abort.pipeline_gone"]
