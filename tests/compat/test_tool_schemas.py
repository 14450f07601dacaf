"""HA-style schemas to JSON Schema with the converter the running ``voluptuous`` calls for.

Runs where HA's ``voluptuous`` is the real one (``.venv``: ``voluptuous_openapi`` converts)
and in the Python 3.14 tier, where probatio is registered as ``voluptuous`` as HA 2026.9+
does (``probatio.to_openapi`` converts, ``voluptuous_openapi`` is not installed). No
Home Assistant is imported: the schema is built as HA builds a tool's, with a selector-like
validator that only HA's custom serializer knows.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import voluptuous as vol

from custom_components.companion_agent.agent.tool_schemas import (
    SchemaConversionError,
    json_schema,
    structure_schema,
    uses_probatio,
)


class AreaSelector:
    """A validator like HA's ``selector.AreaSelector``: opaque to both converters."""

    def __call__(self, value: Any) -> str:
        """Accept an area's name."""
        return str(value)


def unsupported() -> Any:
    """Return the running converter's "defer to the default" sentinel."""
    module = "probatio" if uses_probatio(vol.Schema({})) else "voluptuous_openapi"
    return importlib.import_module(module).UNSUPPORTED


def selector_serializer(schema: Any) -> Any:
    """Serialize what HA's ``llm.selector_serializer`` would: areas as strings; defer else."""
    if isinstance(schema, AreaSelector):
        return {"type": "string", "description": "an area"}
    return unsupported()


def test_a_tool_schema_with_a_selector_converts_as_ha_does() -> None:
    """Required and optional keys, lists, ranges and the selector all reach the model."""
    schema = vol.Schema(
        {
            vol.Required("name"): str,
            vol.Optional("domain"): [str],
            vol.Optional("brightness"): vol.All(vol.Coerce(int), vol.Range(min=0, max=100)),
            vol.Optional("area"): AreaSelector(),
        }
    )
    converted = json_schema(schema, selector_serializer)
    assert converted["type"] == "object"
    assert converted["required"] == ["name"]
    properties = converted["properties"]
    assert isinstance(properties, dict)
    assert properties["name"] == {"type": "string"}
    assert properties["domain"] == {"type": "array", "items": {"type": "string"}}
    assert properties["area"] == {"type": "string", "description": "an area"}
    brightness = properties["brightness"]
    assert isinstance(brightness, dict)
    assert (brightness["type"], brightness["minimum"], brightness["maximum"]) == ("integer", 0, 100)


def test_the_converter_follows_the_running_voluptuous() -> None:
    """Probatio's shim as ``voluptuous`` (HA 2026.9+) means probatio; else voluptuous_openapi."""
    on_probatio = vol.__name__.split(".")[0] == "probatio"
    assert uses_probatio(vol.Schema({})) is on_probatio
    if on_probatio:
        with pytest.raises(ImportError):
            importlib.import_module("voluptuous_openapi")


def test_a_serializer_that_fails_is_a_conversion_error_not_a_crash() -> None:
    """A converter's own failure is one error the glue can log and go on from."""

    def broken(schema: Any) -> Any:
        raise ValueError("no serializer today")

    with pytest.raises(SchemaConversionError, match="no serializer today"):
        json_schema(vol.Schema({vol.Required("area"): AreaSelector()}), broken)


def test_a_task_structure_closes_its_objects_as_the_structure_does() -> None:
    """A structure refuses keys it does not list (voluptuous's default, HA's for a task):
    its JSON Schema says so at every depth, whichever converter runs; the schema itself
    refuses the same answer. A structure that allows extra keys stays open."""
    structure = vol.Schema(
        {
            vol.Required("day"): str,
            vol.Optional("where"): {vol.Required("room"): str},
            vol.Optional("areas"): [{vol.Required("name"): AreaSelector()}],
        }
    )
    converted: Any = structure_schema(structure, selector_serializer)
    assert converted["additionalProperties"] is False
    assert converted["properties"]["where"]["additionalProperties"] is False
    assert converted["properties"]["areas"]["items"]["additionalProperties"] is False
    assert converted["properties"]["areas"]["items"]["properties"]["name"]["type"] == "string"
    with pytest.raises(vol.Invalid):
        structure({"day": "Tuesday", "where": {"room": "hall", "also_unlock": True}})
    open_structure = vol.Schema({vol.Required("day"): str}, extra=vol.ALLOW_EXTRA)
    assert structure_schema(open_structure, selector_serializer).get("additionalProperties") in (
        None,
        True,
    )
