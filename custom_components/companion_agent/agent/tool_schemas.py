"""HA's tool and task schemas as JSON Schema, with the converter the running HA ships.

Home Assistant describes a tool's parameters and an AI task's structure as a validation
schema with selectors, and converts it for the model with a custom serializer
(``APIInstance.custom_serializer``). Which library does that changed in 2026.9:

- up to 2026.8, schemas are ``voluptuous`` and HA converts them with
  ``voluptuous_openapi.convert`` (the serializer defers with its ``UNSUPPORTED``);
- from 2026.9, HA validates with ``probatio`` (``voluptuous`` is an alias of probatio's
  shim and ``voluptuous-openapi`` is no longer installed) and converts with
  ``probatio.to_openapi`` (the serializer defers with ``probatio.UNSUPPORTED``).

This module imports neither at import time, and no Home Assistant module: the running
HA's own ``voluptuous`` tells which converter fits its schemas.

An AI task's structure is converted the same way, and its objects are closed as the
structure itself is (``structure_schema``): probatio's converter says so, voluptuous-openapi
does not.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

from ..engine.json_types import JSONObject, JSONValue

type Serializer = Callable[[Any], Any]

OPEN_OBJECT: JSONObject = {"type": "object", "additionalProperties": True}
"""The schema of a tool whose parameters could not be converted: HA still validates them."""


class SchemaConversionError(Exception):
    """HA's schema could not be converted by the converter the running HA ships."""


def uses_probatio(schema: object) -> bool:
    """Tell whether ``schema`` is probatio's: HA 2026.9+ (``voluptuous`` is its alias)."""
    if type(schema).__module__.split(".")[0] == "probatio":
        return True
    vol = sys.modules.get("voluptuous")
    return vol is not None and vol.__name__.split(".")[0] == "probatio"


def json_schema(schema: object, serializer: Serializer | None) -> JSONObject:
    """Return ``schema`` as the JSON Schema HA's own LLM integrations would send.

    Raises ``SchemaConversionError`` when the converter is missing or fails on it.
    """
    if uses_probatio(schema):
        module, function = "probatio", "to_openapi"
    else:
        module, function = "voluptuous_openapi", "convert"
    try:
        convert = getattr(importlib.import_module(module), function)
        converted = convert(schema, custom_serializer=serializer)
        copied = json.loads(json.dumps(converted))
    except ImportError as err:
        raise SchemaConversionError(f"{module} is not installed") from err
    except Exception as err:  # a converter's own error, or a value JSON cannot hold
        raise SchemaConversionError(f"{module}.{function} failed: {err}") from err
    if not isinstance(copied, dict):
        raise SchemaConversionError(f"{module}.{function} returned {type(copied).__name__}")
    return copied


def structure_schema(structure: object, serializer: Serializer | None) -> JSONObject:
    """Return an AI task's structure as the JSON Schema its answer must fit.

    Converted as ``json_schema`` does; when the structure refuses keys of its own choosing
    (``PREVENT_EXTRA``, the default of voluptuous and probatio and what HA gives a task),
    every object that lists its properties admits no others (``additionalProperties:
    false``), unless the converter said otherwise. Raises ``SchemaConversionError``.
    """
    converted = json_schema(structure, serializer)
    vol = sys.modules.get("voluptuous")
    prevent = getattr(vol, "PREVENT_EXTRA", 0)
    return _closed(converted) if getattr(structure, "extra", prevent) == prevent else converted


def _closed(schema: JSONObject) -> JSONObject:
    """Return ``schema`` with every object that lists properties closed, at any depth."""
    out: JSONObject = {}
    for key, value in schema.items():
        match key, value:
            case "properties", dict():
                out[key] = {name: _closed_value(sub) for name, sub in value.items()}
            case "items" | "additionalProperties", dict():
                out[key] = _closed(value)
            case "anyOf" | "oneOf" | "allOf", list():
                out[key] = [_closed_value(sub) for sub in value]
            case _:
                out[key] = value
    if isinstance(out.get("properties"), dict):
        out.setdefault("additionalProperties", False)
    return out


def _closed_value(value: JSONValue) -> JSONValue:
    """Return a sub-schema closed (``_closed``); anything else as it is."""
    return _closed(value) if isinstance(value, dict) else value
