"""A Bolt server for the graph: its settings, one driver made and probed once, its errors.

The ``neo4j`` package is imported on first use, off the event loop: a host installs it on
demand (``NEO4J_REQUIREMENT``); without it every call raises ``missing_dependency``. The
first connection logs in, learns the server's dialect (FalkorDB's string parameters need
escaping, and its statements must stay small: ``cypher``) and creates the indexes. Every
driver error becomes a ``MemoryBackendError`` that says how it failed, with no secret.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ....chars import valid_text
from ....errors import MemoryBackendError, MemoryInputError
from ...models import BackendCheck
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


class BoltConnection:
    """One driver (a connection pool) to a Bolt server, made on first use."""

    def __init__(self, settings: Neo4jSettings) -> None:
        """Keep the settings; the driver is made on first use."""
        self.settings = settings
        self._driver: AsyncDriver | None = None
        self._text_bytes: int | None = None
        """FalkorDB's bound on a statement's text (None on Neo4j, whose values are safe)."""
        self._lock = asyncio.Lock()

    @property
    def text_bytes(self) -> int | None:
        """Return the server's bound on a statement's text (None: no bound, Neo4j)."""
        return self._text_bytes

    async def check(self) -> BackendCheck:
        """Connect and log in once; say what failed, if anything."""
        try:
            await self.driver()
        except MemoryBackendError as err:
            return BackendCheck.failed(err)
        return BackendCheck(backend=BACKEND)

    async def run[T](self, work: Work[T], *, write: bool) -> T:
        """Run one transaction function (connecting first if need be)."""
        return await self._call(await self.driver(), work, write=write)

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

    async def driver(self) -> AsyncDriver:
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
        for dialects in cypher.INDEXES:
            for statement in dialects:
                try:
                    await (await session.run(statement)).consume()
                except neo4j_errors.Neo4jError as err:
                    LOGGER.debug("Graph index not created (%s): %s", statement[:40], err)
                else:
                    break

    def outgoing(self, params: Params) -> Params:
        """Return ``params`` as the server needs them (escaped for FalkorDB)."""
        if self._text_bytes is None:
            return params
        return {key: cypher.escaped(value) for key, value in params.items()}

    def incoming(self, value: object) -> str:
        """Return a string the server sent back as valid text."""
        return valid_text(str(value)) if value is not None else ""


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
