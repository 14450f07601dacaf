"""JSON Schema for tool contracts: strict by default, compiled once, short error messages.

A host builds its tools anew for every turn (HA's LLM API does); ``compiled`` keys the
checked, compiled validator by the schema's canonical text, so a contract is checked and
compiled once, not on every turn.
"""

from __future__ import annotations

import json
from functools import lru_cache

import jsonschema
from jsonschema.exceptions import ValidationError, relevance

from ..chars import clean_text
from ..errors import ToolContractError
from ..json_types import JSONObject, JSONValue

MAX_REPORTED_ERRORS = 3
MAX_MESSAGE_CHARS = 160
MAX_COMPILED = 1024

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_ONE = ("items", "additionalItems", "not", "then", "else", "if", "contains")


def strict_schema(schema: JSONObject) -> JSONObject:
    """Return a copy where every object schema without ``additionalProperties`` forbids them.

    Branches of ``allOf`` are left as they are: forbidding extra fields per branch would
    reject every instance that combines them.
    """
    out: JSONObject = {key: _strict_value(key, value) for key, value in schema.items()}
    is_object = out.get("type") == "object" or "properties" in out
    if is_object and "additionalProperties" not in out and "unevaluatedProperties" not in out:
        out["additionalProperties"] = False
    return out


def _strict_value(key: str, value: JSONValue) -> JSONValue:
    """Make the sub-schemas under one keyword strict."""
    if key in _SUBSCHEMA_LISTS and isinstance(value, list):
        return [strict_schema(v) if isinstance(v, dict) else v for v in value]
    if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
        return {k: strict_schema(v) if isinstance(v, dict) else v for k, v in value.items()}
    if key in _SUBSCHEMA_ONE and isinstance(value, dict):
        return strict_schema(value)
    return value


def compiled(schema: JSONObject, *, what: str) -> SchemaValidator:
    """Return the checked, compiled validator of ``schema``; a bad schema is a contract error."""
    try:
        return _compile(json.dumps(schema, sort_keys=True, ensure_ascii=False))
    except jsonschema.SchemaError as err:
        raise ToolContractError(f"{what}: invalid JSON Schema: {err.message}") from err


@lru_cache(maxsize=MAX_COMPILED)
def _compile(canonical: str) -> SchemaValidator:
    """Check and compile one schema, given as canonical JSON text."""
    schema = json.loads(canonical)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return SchemaValidator(cls(schema))


class SchemaValidator:
    """A compiled JSON Schema that reports at most a few short errors."""

    def __init__(self, validator: jsonschema.protocols.Validator) -> None:
        """Wrap a checked, compiled validator (use ``compiled``)."""
        self._validator = validator

    def problems(self, instance: JSONValue) -> list[str]:
        """Return short messages for what is wrong with ``instance``; empty when it fits."""
        errors = sorted(self._validator.iter_errors(instance), key=relevance)
        return [_describe(err) for err in errors[:MAX_REPORTED_ERRORS]]


def _describe(err: ValidationError) -> str:
    """Describe one error: where, what, and for unknown fields what is allowed."""
    where = "/".join(str(part) for part in err.absolute_path) or "arguments"
    message = clean_text(err.message, MAX_MESSAGE_CHARS, marker="…")
    if err.validator == "additionalProperties" and isinstance(err.schema, dict):
        allowed = err.schema.get("properties")
        if isinstance(allowed, dict):
            message += f"; allowed fields: {', '.join(sorted(allowed)) or 'none'}"
    return f"{where}: {message}"
