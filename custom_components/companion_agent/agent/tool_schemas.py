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
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

from ..engine.json_types import JSONObject

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
