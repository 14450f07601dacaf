"""Holding lines: which phrase a slow call gets, in which language, with what target."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.messages import ToolCallRequest
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.holding import (
    HoldingHint,
    HoldingLines,
    HoldingPhrases,
    clean_target,
    from_arguments,
    language_chain,
    template_problem,
)
from custom_components.companion_agent.engine.tools.registry import Tool, ToolRegistry

PHRASES = HoldingPhrases(
    languages=MappingProxyType(
        {
            "en": MappingProxyType(
                {
                    "camera": "One moment, I'm looking at the {target}.",
                    "camera_any": "One moment, I'm looking at the camera.",
                    "search": "One moment, I'm looking that up.",
                    "default": "One moment, please.",
                }
            ),
            "zh": MappingProxyType(
                {
                    "camera": "稍等，我看一下{target}。",
                    "camera_any": "稍等，我看一下摄像头。",
                    "default": "请稍等。",
                }
            ),
        }
    )
)
CAMERA = HoldingHint(kind="camera", target=from_arguments("name", "camera"))


def lines(*languages: str, hints: dict[str, HoldingHint] | None = None) -> HoldingLines:
    """Return one turn's lines in ``languages`` (the turn's, then the profile's)."""
    return HoldingLines(
        phrases=PHRASES,
        languages=language_chain(*languages),
        hints=MappingProxyType(hints if hints is not None else {"camera": CAMERA}),
    )


def call(name: str, arguments: str = "{}") -> ToolCallRequest:
    """Return a call of ``name``."""
    return ToolCallRequest(call_id=f"call_{name}", name=name, arguments=arguments)


def test_the_kind_and_target_of_the_call_choose_the_phrase() -> None:
    line = lines("en").line([call("camera", '{"name": "front-door camera"}')], ())
    assert line == "One moment, I'm looking at the front-door camera."


def test_an_unknown_target_takes_the_kinds_phrase_without_one() -> None:
    assert lines("en").line([call("camera")], ()) == "One moment, I'm looking at the camera."
    assert lines("en").line([call("camera", "not json")], ()) == (
        "One moment, I'm looking at the camera."
    )


def test_the_first_running_call_decides() -> None:
    hints = {"camera": CAMERA, "web_search": HoldingHint(kind="search")}
    running = [call("web_search"), call("camera", '{"name": "garden"}')]
    assert lines("en", hints=hints).line(running, ()) == "One moment, I'm looking that up."


def test_a_kind_the_language_lacks_and_a_tool_without_a_hint_take_the_default() -> None:
    hints = {"diary_read": HoldingHint(kind="memory")}
    assert lines("en", hints=hints).line([call("diary_read")], ()) == "One moment, please."
    assert lines("en").line([call("get_time")], ()) == "One moment, please."


def test_the_turns_language_falls_back_by_subtag_then_to_the_profiles() -> None:
    running = [call("camera", '{"name": "门口的摄像头"}')]
    assert lines("zh-Hans-CN", "en").line(running, ()) == "稍等，我看一下门口的摄像头。"
    assert lines("zh_CN", "en").line(running, ()) == "稍等，我看一下门口的摄像头。"
    assert lines("fr-FR", "en-GB").line([call("camera")], ()) == (
        "One moment, I'm looking at the camera."
    )
    assert lines("fr", "de").line([call("camera")], ()) is None


def test_a_line_already_said_in_the_turn_gives_way_to_the_plain_default_once() -> None:
    turn = lines("en")
    said = {"One moment, I'm looking at the camera."}
    assert turn.line([call("camera")], said) == "One moment, please."
    said.add("One moment, please.")
    assert turn.line([call("camera")], said) is None


def test_a_target_is_cleaned_before_it_is_spoken() -> None:
    assert clean_target("  Front\x00 door\n[joy] *camera*\u202e  ") == "Front door joy camera"
    assert clean_target("front_door") == "front door"
    assert clean_target("\x07 []") is None
    long = clean_target("a" * 100)
    assert long == "a" * 40
    named = lines("en").line([call("camera", '{"name": "<b>Hall</b>{target}"}')], ())
    assert named == "One moment, I'm looking at the Hall target."


def test_a_reader_that_raises_costs_only_the_target() -> None:
    def broken(args: JSONObject) -> str | None:
        """Fail as a host's bug would."""
        raise KeyError("camera")

    hints = {"camera": HoldingHint(kind="camera", target=broken)}
    line = lines("en", hints=hints).line([call("camera", '{"name": "x"}')], ())
    assert line == "One moment, I'm looking at the camera."


@pytest.mark.parametrize(
    ("template", "targeted", "problem"),
    [
        ("Looking at the {target}.", True, None),
        ("Braces {{like}} these.", False, None),
        ("Looking at the {target}.", False, "no {target}"),
        ("Looking at {place}.", True, "not {place}"),
        ("Looking at {target!r}.", True, "not {target}"),
        ("Looking at {target:>9}.", True, "not {target}"),
        ("Looking at {0}.", True, "not {0}"),
        ("Looking at {", True, "not a valid template"),
        ("  ", True, "must say something"),
        ("One.\nTwo.", True, "one line"),
        ("x" * 121, True, "at most 120"),
    ],
)
def test_templates_are_checked(template: str, targeted: bool, problem: str | None) -> None:
    found = template_problem(template, targeted=targeted)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


def test_the_registry_hands_out_each_tools_hint() -> None:
    async def handler(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Answer nothing."""
        return None

    registry = ToolRegistry(
        [
            Tool(spec=ToolSpec(name="camera", description="c"), handler=handler, holding=CAMERA),
            Tool(spec=ToolSpec(name="get_time", description="t"), handler=handler),
        ]
    )
    assert registry.holding_hints() == {"camera": CAMERA}
