"""Where a memory came from: who wrote it, on which device, in which conversation, how.

Every record and graph fact carries a ``Provenance``. ``via`` says the way it was written:
``turn`` (extracted from an exchange), ``instruction`` (a lasting instruction, written with
no model), ``service`` (the remember action, by a person), ``automation`` (the same action
from an automation or script), ``todo`` (the memory to-do list, by hand), ``tool`` (the
to-do list through an assistant's tool), ``summary`` (a session summary), ``unknown`` (a
record older than provenance). Stores keep it as five plain fields; ``dump``/``load`` are
the one JSON shape (the outbox, mem0's metadata).

``statement`` is the id of the statement a record or fact was derived from: one turn of a
person (its trace id: the lasting instruction written before the answer and everything
extracted from the exchange after it share it) or one remember call. Forgetting a memory
forgets its statement: every record and graph fact with the same one. A session summary is
made of many statements and has none. A record written before statements were kept has
none either; one from a turn gets its *legacy* statement, made of its conversation and when
it was said (``legacy_statement``): what one exchange left shares both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal, cast

from ..chars import valid_text

type WriteVia = Literal[
    "turn", "instruction", "service", "todo", "automation", "tool", "summary", "unknown"
]
VIAS: frozenset[str] = frozenset(
    {"turn", "instruction", "service", "todo", "automation", "tool", "summary", "unknown"}
)
MAX_FIELD_CHARS = 200
LEGACY = "legacy:"
"""How a legacy statement begins: ``legacy:<conversation>@<when said, ISO 8601 in UTC>``."""
_FROM_TURNS: frozenset[str] = frozenset({"turn", "instruction"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """Who wrote a memory, from which device and conversation, and by which way."""

    via: WriteVia = "unknown"
    person: str | None = None
    """The HA user who spoke or called (not whose memory it is: that is the scope's owner)."""
    device: str | None = None
    conversation: str | None = None
    statement: str | None = None
    """The statement it was derived from (a turn's trace id, a remember call's own id)."""

    def cleaned(self) -> Provenance:
        """Return the provenance with valid, bounded fields (an unknown ``via`` is unknown)."""
        return Provenance(
            via=as_via(self.via),
            person=_field(self.person),
            device=_field(self.device),
            conversation=_field(self.conversation),
            statement=_field(self.statement),
        )

    def said_at(self, at: datetime | None) -> Provenance:
        """Return the provenance with its legacy statement when it has none (see the module)."""
        if self.statement is not None or at is None:
            return self
        return replace(self, statement=legacy_statement(self.via, self.conversation, at))


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


def legacy_statement(via: str, conversation: str | None, at: datetime) -> str | None:
    """Return the statement a turn's record without one was derived from (None: not a turn's).

    Everything one exchange left before statements were kept was said in its conversation at
    the moment the person spoke, so the two name it (as the store's migration names them).
    """
    if via not in _FROM_TURNS or not conversation:
        return None
    moment = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return f"{LEGACY}{conversation}@{moment.isoformat(timespec='microseconds')}"


def legacy_parts(statement: str) -> tuple[str, str] | None:
    """Return the conversation and the time (as stored) a legacy statement names, else None."""
    if not statement.startswith(LEGACY) or "@" not in statement:
        return None
    conversation, _, said = statement.removeprefix(LEGACY).rpartition("@")
    return (conversation, said) if conversation and said else None


def dump_provenance(provenance: Provenance) -> dict[str, str | None]:
    """Return a provenance as JSON."""
    return {
        "via": provenance.via,
        "person": provenance.person,
        "device": provenance.device,
        "conversation": provenance.conversation,
        "statement": provenance.statement,
    }


def load_provenance(data: object, source: str = "", at: datetime | None = None) -> Provenance:
    """Return a provenance from JSON, or the legacy one of ``source`` when there is none.

    ``at`` is when the record was said: a turn's record without a statement gets its legacy
    one.
    """
    if not isinstance(data, Mapping) or "via" not in data:
        return legacy_provenance(source).said_at(at)
    return (
        Provenance(
            via=as_via(data.get("via")),
            person=_field(data.get("person")),
            device=_field(data.get("device")),
            conversation=_field(data.get("conversation")),
            statement=_field(data.get("statement")),
        )
        .cleaned()
        .said_at(at)
    )


def _field(value: object) -> str | None:
    """Return a provenance field as valid bounded text, None when empty."""
    if not isinstance(value, str) or not value:
        return None
    return valid_text(value)[:MAX_FIELD_CHARS]
