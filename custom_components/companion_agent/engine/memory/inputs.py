"""Memory input made valid at a store's boundary: scopes and texts, checked and bounded.

Every backend passes what it is given through here before storing or searching, so text
from anywhere (a model, a person, an import) reaches a store as valid Unicode of bounded
length, and a scope without a persona or owner is refused with a clear error.
"""

from __future__ import annotations

from ..chars import clean_text
from ..errors import MemoryInputError
from .types import MAX_TEXT_CHARS, MemoryScope

MAX_FIELD_CHARS = 200


def clean_scope(scope: MemoryScope) -> MemoryScope:
    """Return ``scope`` with valid, bounded fields; raise when one of them is empty."""
    agent = clean_text(scope.agent_id, MAX_FIELD_CHARS)
    owner = clean_text(scope.owner, MAX_FIELD_CHARS)
    environment = clean_text(scope.environment, MAX_FIELD_CHARS)
    if not agent.strip() or not owner.strip() or not environment.strip():
        raise MemoryInputError("a memory scope needs an agent_id, an owner and an environment")
    return MemoryScope(agent_id=agent, owner=owner, environment=environment)


def memory_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Return a memory's ``text`` (or a query's) valid, stripped, at most ``limit`` long."""
    return clean_text(text, limit, trim=True)
