"""Where a memory came from: who wrote it, on which device, in which conversation, how.

Every record and graph fact carries a ``Provenance``. ``via`` says the way it was written:
``turn`` (extracted from an exchange), ``instruction`` (a lasting instruction, written with
no model), ``service`` (the remember action, by a person), ``automation`` (the same action
from an automation or script), ``todo`` (the memory to-do list, by hand), ``tool`` (the
to-do list through an assistant's tool), ``summary`` (a session summary), ``unknown`` (a
record older than provenance). Stores keep it as four plain fields; ``dump``/``load`` are
the one JSON shape (the outbox, mem0's metadata).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from ..chars import valid_text

type WriteVia = Literal[
    "turn", "instruction", "service", "todo", "automation", "tool", "summary", "unknown"
]
VIAS: frozenset[str] = frozenset(
    {"turn", "instruction", "service", "todo", "automation", "tool", "summary", "unknown"}
)
MAX_FIELD_CHARS = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """Who wrote a memory, from which device and conversation, and by which way."""

    via: WriteVia = "unknown"
    person: str | None = None
    """The HA user who spoke or called (not whose memory it is: that is the scope's owner)."""
    device: str | None = None
    conversation: str | None = None

    def cleaned(self) -> Provenance:
        """Return the provenance with valid, bounded fields (an unknown ``via`` is unknown)."""
        return Provenance(
            via=as_via(self.via),
            person=_field(self.person),
            device=_field(self.device),
            conversation=_field(self.conversation),
        )


def as_via(value: object) -> WriteVia:
    """Return ``value`` as a ``WriteVia`` (anything else reads as ``unknown``)."""
    return cast(WriteVia, value) if value in VIAS else "unknown"


def legacy_provenance(source: str) -> Provenance:
    """Return the provenance a record written before provenance most likely has.

    Its ``source`` said it: ``service`` or ``summary``, a conversation id for a turn's
    extraction, nothing for a lasting instruction or an import.
    """
    match source:
        case "service":
            return Provenance(via="service")
        case "summary":
            return Provenance(via="summary")
        case "":
            return Provenance()
        case _:
            return Provenance(via="turn", conversation=source)


def dump_provenance(provenance: Provenance) -> dict[str, str | None]:
    """Return a provenance as JSON."""
    return {
        "via": provenance.via,
        "person": provenance.person,
        "device": provenance.device,
        "conversation": provenance.conversation,
    }


def load_provenance(data: object, source: str = "") -> Provenance:
    """Return a provenance from JSON, or the legacy one of ``source`` when there is none."""
    if not isinstance(data, Mapping) or "via" not in data:
        return legacy_provenance(source)
    return Provenance(
        via=as_via(data.get("via")),
        person=_field(data.get("person")),
        device=_field(data.get("device")),
        conversation=_field(data.get("conversation")),
    ).cleaned()


def _field(value: object) -> str | None:
    """Return a provenance field as valid bounded text, None when empty."""
    if not isinstance(value, str) or not value:
        return None
    return valid_text(value)[:MAX_FIELD_CHARS]
