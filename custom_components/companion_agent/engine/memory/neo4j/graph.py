"""The knowledge graph on Neo4j (or another Bolt server) through the official async driver.

**Model.** An entity is a ``:CompanionEntity`` node per persona and environment, keyed by
its normalised name (``graph_names.name_key``: "Ann", "ann " and "ＡＮＮ" are one). A
relation is a ``:RELATES`` edge that belongs to one scope: it carries ``agent_id``,
``owner`` and ``environment``, the predicate, and the spellings first said. A walk follows
only edges of the scopes a turn may read, so a person's and the household's graphs join
at a shared name (as in the embedded graph) while nobody else's edge is ever crossed. Nodes
carry no spelling, only the key, so forgetting a person leaves no name of theirs behind.

**Cypher.** Every value is a parameter; the query texts are constants (the hop bound of a
variable-length path cannot be a parameter, so there is one text per bound). One turn's
facts are one statement in one write transaction. The same texts run on Neo4j 5 and on
FalkorDB's Bolt listener (see ``docs/memory-backends.md`` for FalkorDB's differences; its
string parameters need escaping, detected once per driver by a probe).

The ``neo4j`` package is imported on first use, off the event loop: a host installs it on
demand (``NEO4J_REQUIREMENT``); without it every call raises ``missing_dependency``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ...chars import valid_text
from ...errors import MemoryBackendError, MemoryInputError
from ..backend_check import BackendCheck
from ..graph_names import MAX_NAME_CHARS, BoundedGraph
from ..inputs import clean_scope
from ..sqlite.graph import forget_where
from ..types import Forget, GraphFacts, MemoryScope, Relation
from . import cypher
from .cypher import Params

if TYPE_CHECKING:
    from neo4j import AsyncDriver, AsyncManagedTransaction, AsyncSession

LOGGER = logging.getLogger(__name__)

NEO4J_REQUIREMENT = "neo4j>=6.4.1,<7"  # a range: HA installs it under its own pins
BACKEND = "neo4j"
BOLT_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})

type Work[T] = Callable[[AsyncManagedTransaction], Awaitable[T]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Neo4jSettings:
    """Where the Bolt server is and how to log in; ``user`` None means no authentication."""

    uri: str
    """``bolt://``, ``bolt+s://``, ``neo4j://`` or ``neo4j+s://`` and a host (and port)."""
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    database: str | None = None
    """None for the server's home database (FalkorDB ignores it inside transactions)."""
    timeout: float = 5.0
    """Seconds for connecting and for each call, retries included."""


class Neo4jGraph(BoundedGraph):
    """``GraphStore`` on a Bolt server; one driver (a connection pool) per instance."""

    def __init__(self, settings: Neo4jSettings) -> None:
        """Keep the settings; the driver is made on first use."""
        self.settings = settings
        self._driver: AsyncDriver | None = None
        self._text_bytes: int | None = None
        """FalkorDB's bound on a statement's text (None on Neo4j, whose values are safe)."""
        self._lock = asyncio.Lock()

    async def check(self) -> BackendCheck:
        """Connect and log in once; say what failed, if anything."""
        try:
            await self._session_driver()
        except MemoryBackendError as err:
            return BackendCheck.failed(err)
        return BackendCheck(backend=BACKEND)

    async def _merge(self, scope: MemoryScope, facts: GraphFacts) -> None:
        """Merge in one write transaction (FalkorDB: statements within its size bound)."""
        driver = await self._session_driver()  # first: it learns the server's dialect
        statements = cypher.merge_statements(scope, facts, text_bytes=self._text_bytes)
        if not statements:
            return

        async def work(tx: AsyncManagedTransaction) -> None:
            """Run the merge statement (FalkorDB: statements)."""
            for params in statements:
                await (await tx.run(cypher.MERGE, self._outgoing(params))).consume()

        await self._call(driver, work, write=True)

    async def _walk(
        self, scopes: list[MemoryScope], keys: list[str], hops: int, limit: int
    ) -> list[Relation]:
        """Walk each persona's and environment's graph; merge the walks, nearest first."""
        groups = _owners_by_space(scopes)
        query = cypher.WALKS[hops]
        driver = await self._session_driver()  # first: it learns the server's dialect
        if self._text_bytes is None:
            key_runs = [keys]
        else:
            budget = self._text_bytes - len(query.encode()) - 2 * MAX_NAME_CHARS * len(scopes)
            key_runs = cypher.chunks(keys, budget)

        async def work(tx: AsyncManagedTransaction) -> list[tuple[int, str, Relation]]:
            """Walk each persona's and environment's graph."""
            rows: list[tuple[int, str, Relation]] = []
            for ((agent_id, environment), owners), run in product(groups.items(), key_runs):
                params: Params = {"agent_id": agent_id, "environment": environment,
                                  "owners": owners, "keys": run, "max_paths": cypher.MAX_PATHS,
                                  "limit": limit}  # fmt: skip
                result = await tx.run(query, self._outgoing(params))
                async for record in result:
                    relation = Relation(
                        subject=self._incoming(record["subject"]),
                        predicate=self._incoming(record["predicate"]),
                        object=self._incoming(record["object"]),
                    )
                    rows.append((int(record["distance"]), str(record["updated"]), relation))
            return rows

        rows = await self._call(driver, work, write=False)
        rows.sort(key=lambda row: row[1], reverse=True)
        rows.sort(key=lambda row: row[0])
        return list(dict.fromkeys(relation for _, _, relation in rows))[:limit]

    async def forget(self, what: Forget) -> int:
        """Delete the graph of a person or persona; return how many relations went."""
        forget_where(what)
        if what.record_id is not None:
            return 0
        if what.owner is not None:
            statements = cypher.FORGET_OWNER
            params: Params = {"owner": what.owner, "environment": what.environment}
        else:
            statements = cypher.FORGET_PERSONA
            params = {"agent_id": what.agent_id, "environment": what.environment}

        async def work(tx: AsyncManagedTransaction) -> int:
            """Delete the relations, count them, then the entities left alone."""
            record = await (await tx.run(statements[0], self._outgoing(params))).single()
            await (await tx.run(statements[1], self._outgoing(params))).consume()
            return 0 if record is None else int(record["gone"])

        return await self._call(await self._session_driver(), work, write=True)

    async def close(self) -> None:
        """Close the driver's connections."""
        async with self._lock:
            driver, self._driver = self._driver, None
        if driver is not None:
            await driver.close()

    async def _call[T](self, driver: AsyncDriver, work: Work[T], *, write: bool) -> T:
        """Run one transaction function; map every driver error to ``MemoryBackendError``."""
        try:
            async with asyncio.timeout(self.settings.timeout):
                async with driver.session(database=self.settings.database) as session:
                    if write:
                        result: T = await session.execute_write(work)
                    else:
                        result = await session.execute_read(work)
                    return result
        except MemoryInputError:
            raise
        except Exception as err:
            raise _backend_error(err) from err

    async def _session_driver(self) -> AsyncDriver:
        """Return the driver, making it (and probing the server) on first use."""
        async with self._lock:
            if self._driver is not None:
                return self._driver
            driver = await self._connect()
            self._driver = driver
            return driver

    async def _connect(self) -> AsyncDriver:
        """Import the driver off the loop, connect, log in, learn the server's dialect."""
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, importlib.import_module, "neo4j")
        except ImportError as err:
            raise MemoryBackendError(
                f"the neo4j package is not installed ({NEO4J_REQUIREMENT})",
                backend=BACKEND,
                problem="missing_dependency",
            ) from err
        import neo4j  # noqa: PLC0415 - loaded above, off the event loop

        settings = self.settings
        if urlsplit(settings.uri).scheme not in BOLT_SCHEMES:
            raise MemoryBackendError(
                f"the address must start with one of {', '.join(sorted(BOLT_SCHEMES))}://",
                backend=BACKEND,
                problem="invalid_config",
            )
        auth = None if settings.user is None else (settings.user, settings.password or "")
        try:
            driver = neo4j.AsyncGraphDatabase.driver(
                settings.uri,
                auth=auth,
                connection_timeout=settings.timeout,
                connection_acquisition_timeout=settings.timeout,
                max_transaction_retry_time=settings.timeout,
                user_agent="companion_agent",
            )
        except Exception as err:
            raise _backend_error(err) from err
        try:
            async with asyncio.timeout(settings.timeout):
                await driver.verify_connectivity()
                async with driver.session(database=settings.database) as session:
                    answer = await session.run("RETURN $probe AS probe", probe=cypher.PROBE)
                    probe = await answer.single()
                    if probe is None or probe["probe"] != cypher.PROBE:
                        self._text_bytes = cypher.FALKORDB_TEXT_BYTES
                    await self._create_indexes(session)
        except Exception as err:
            await driver.close()
            raise _backend_error(err) from err
        return driver

    async def _create_indexes(self, session: AsyncSession) -> None:
        """Create the entity index in whichever dialect the server takes (best effort)."""
        neo4j_errors = importlib.import_module("neo4j.exceptions")
        for statement in cypher.INDEXES:
            try:
                await (await session.run(statement)).consume()
            except neo4j_errors.Neo4jError as err:
                LOGGER.debug("Graph index not created (%s): %s", statement[:40], err)
            else:
                return

    def _outgoing(self, params: Params) -> Params:
        """Return ``params`` as the server needs them (escaped for FalkorDB)."""
        if self._text_bytes is None:
            return params
        return {key: cypher.escaped(value) for key, value in params.items()}

    def _incoming(self, value: object) -> str:
        """Return a string the server sent back as valid text."""
        return valid_text(str(value)) if value is not None else ""


def _owners_by_space(scopes: Sequence[MemoryScope]) -> dict[tuple[str, str], list[str]]:
    """Group the scopes' owners by persona and environment (one walk per group)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for scope in scopes:
        cleaned = clean_scope(scope)
        owners = groups.setdefault((cleaned.agent_id, cleaned.environment), [])
        if cleaned.owner not in owners:
            owners.append(cleaned.owner)
    return groups


def _backend_error(err: BaseException) -> MemoryBackendError:
    """Return the ``MemoryBackendError`` a driver error means (nothing secret in it)."""
    if isinstance(err, MemoryBackendError):
        return err
    errors = importlib.import_module("neo4j.exceptions")
    name = type(err).__name__
    if isinstance(err, errors.AuthError):
        return MemoryBackendError("the server refused the credentials", backend=BACKEND,
                                  problem="auth")  # fmt: skip
    if isinstance(err, errors.ConfigurationError | ValueError):
        return MemoryBackendError(f"the address or settings are not valid ({err})",
                                  backend=BACKEND, problem="invalid_config")  # fmt: skip
    if isinstance(err, errors.ServiceUnavailable | errors.SessionExpired | errors.DriverError
                  | errors.TransientError | OSError | TimeoutError):  # fmt: skip
        return MemoryBackendError(f"the server could not be reached in time ({name})",
                                  backend=BACKEND, problem="cannot_connect")  # fmt: skip
    if isinstance(err, errors.Neo4jError):
        code = getattr(err, "code", None) or name
        return MemoryBackendError(f"the server refused the operation ({code})",
                                  backend=BACKEND, problem="failed")  # fmt: skip
    return MemoryBackendError(f"the driver failed ({name})", backend=BACKEND, problem="failed")
