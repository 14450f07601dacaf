"""What the two graph stores share: entity names cleaned and keyed, and their calls' bounds.

Both keep, for each entity and relation, the statements that said it (at most
``MAX_STATEMENTS``), so forgetting one statement takes only what no other statement said.

An entity is known by its key (``name_key``: NFKC, case-folded, spaces collapsed, so "Ann",
"ann " and "ＡＮＮ" are one) and shown by the spelling first said (``clean_name``). The
embedded graph and the Neo4j graph both derive from ``BoundedGraph``, which checks and
bounds a merge or a walk once, then hands the backend cleaned scopes and keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...chars import clean_text
from ...errors import MemoryInputError
from ..models import MAX_LIMIT, GraphFacts, MemoryScope, Relation, bounded
from ..retrieval.keywords import fold
from .inputs import clean_scope

MAX_NAME_CHARS = 200
MAX_FACTS = 200
MAX_HOPS = 3
MAX_STATEMENTS = 100
"""The most statements one entity or relation lists; past it ``UNKNOWN_STATEMENT`` stands
for the rest (so forgetting statements never takes it)."""
UNKNOWN_STATEMENT = ""
"""The statement of a fact said by what is not known (no statement, or past the bound)."""
_SPACES = re.compile(r"\s+")


def clean_name(name: str) -> str:
    """Return a name made valid, spaces collapsed, at most ``MAX_NAME_CHARS``."""
    return clean_text(name, MAX_NAME_CHARS, one_line=True)


def name_key(name: str) -> str:
    """Return the key two spellings of one name share."""
    return _SPACES.sub(" ", fold(name)).strip()


def name_keys(names: Sequence[str]) -> list[str]:
    """Return the distinct keys of the first ``MAX_LIMIT`` names, sorted, empty ones dropped."""
    return sorted({name_key(clean_name(name)) for name in list(names)[:MAX_LIMIT]} - {""})


class BoundedGraph:
    """A ``GraphStore``'s merge and walk, bounded here; the backend does the rest."""

    async def merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge ``facts`` into ``scope``'s graph in one transaction (idempotent)."""
        cleaned = clean_scope(scope)
        if len(facts.entities) + len(facts.relations) > MAX_FACTS:
            raise MemoryInputError(f"more than {MAX_FACTS} graph facts at once")
        await self._merge(cleaned, facts)

    async def neighbourhood(
        self, scopes: Sequence[MemoryScope], names: Sequence[str], *, hops: int = 2, limit: int = 20
    ) -> list[Relation]:
        """Return relations within ``hops`` of the named entities, at most ``limit``."""
        keys = name_keys(names)
        cleaned = [clean_scope(scope) for scope in scopes]
        if not keys or not cleaned:
            return []
        return await self._walk(cleaned, keys, max(1, min(hops, MAX_HOPS)), bounded(limit))

    async def _merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge bounded ``facts`` into the cleaned ``scope`` (the backend's part)."""
        raise NotImplementedError

    async def _walk(
        self, scopes: list[MemoryScope], keys: list[str], hops: int, limit: int
    ) -> list[Relation]:
        """Return relations within ``hops`` of ``keys``, nearest and newest first (backend)."""
        raise NotImplementedError
