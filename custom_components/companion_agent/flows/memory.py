"""The memory step of the options flow: every server the memory options name, checked.

The form is ``memory.options``. Embedded (the default) needs nothing; mem0 needs an
embeddings endpoint (and a Qdrant server, or none: files); "Neo4j graph on top of either"
needs a ``bolt://`` / ``neo4j://`` URI, a user and a password; an embeddings endpoint (URL,
model, key) is optional for embedded and mem0. Every server named is checked before the
options are saved (the embeddings one through the embedder memory uses): errors show in
the form.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from homeassistant.core import HomeAssistant
from homeassistant.requirements import RequirementsNotFound, async_process_requirements

from ..const import (
    CONF_EMBEDDINGS_MODEL,
    CONF_EMBEDDINGS_URL,
    CONF_MEM0_URL,
    CONF_MEMORY_BACKEND,
    CONF_MEMORY_GRAPH,
    CONF_NEO4J_PASSWORD,
    CONF_NEO4J_URI,
    CONF_NEO4J_USER,
    DOMAIN,
    LOGGER,
    MEMORY_MEM0,
    STORAGE_FOLDER,
)
from ..engine.memory.backends import (
    MEM0_REQUIREMENTS,
    NEO4J_REQUIREMENT,
    check_embeddings,
    check_graph,
    check_mem0,
)
from ..engine.redaction import scrub_text
from ..memory.options import embedding_settings, memory_config, neo4j_settings

NEO4J_SCHEMES = {"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"}


async def validate_memory(hass: HomeAssistant, options: Mapping[str, Any]) -> dict[str, str]:
    """Check every server the memory options name; return form errors (empty when fine)."""
    errors: dict[str, str] = {}
    if options.get(CONF_MEMORY_BACKEND) == MEMORY_MEM0:
        if not options.get(CONF_EMBEDDINGS_URL):
            errors[CONF_EMBEDDINGS_URL] = "embeddings_required"
        elif problem := await _mem0_problem(hass, options):
            errors[CONF_MEM0_URL] = problem
    if options.get(CONF_MEMORY_GRAPH):
        uri = urlsplit(str(options.get(CONF_NEO4J_URI) or ""))
        if uri.scheme not in NEO4J_SCHEMES or not uri.hostname:
            errors[CONF_NEO4J_URI] = "neo4j_uri_invalid"
        elif options.get(CONF_NEO4J_USER) and not options.get(CONF_NEO4J_PASSWORD):
            errors[CONF_NEO4J_PASSWORD] = "neo4j_credentials_required"
        elif problem := await _neo4j_problem(hass, options):
            errors[CONF_NEO4J_URI] = problem
    if options.get(CONF_EMBEDDINGS_URL):
        if not options.get(CONF_EMBEDDINGS_MODEL):
            errors[CONF_EMBEDDINGS_MODEL] = "embeddings_model_required"
        elif not await _embeds(options):
            errors[CONF_EMBEDDINGS_URL] = "embeddings_unreachable"
    return errors


async def _mem0_problem(hass: HomeAssistant, options: Mapping[str, Any]) -> str | None:
    """Install mem0 if needed and check it (and a Qdrant server); return the form error."""
    try:
        await async_process_requirements(hass, DOMAIN, list(MEM0_REQUIREMENTS))
    except RequirementsNotFound:
        return "requirements_failed"
    config = memory_config(options)
    if config.embeddings is None:
        return None
    check = await check_mem0(config, Path(hass.config.path(STORAGE_FOLDER)))
    if not check.ok:
        LOGGER.debug("mem0 check failed: %s", scrub_text(check.detail))
        return "mem0_unreachable"
    return None


async def _neo4j_problem(hass: HomeAssistant, options: Mapping[str, Any]) -> str | None:
    """Install the driver if needed, log in once; return the form error, or None."""
    try:
        await async_process_requirements(hass, DOMAIN, [NEO4J_REQUIREMENT])
    except RequirementsNotFound:
        return "requirements_failed"
    check = await check_graph(neo4j_settings(options))
    if not check.ok:
        LOGGER.debug("Neo4j check failed: %s", scrub_text(check.detail))
        return "neo4j_auth" if check.problem == "auth" else "neo4j_unreachable"
    return None


async def _embeds(options: Mapping[str, Any]) -> bool:
    """Say whether the embeddings endpoint gives a vector for one short text, as memory asks."""
    settings = embedding_settings(options)
    if settings is None:
        return False
    check = await check_embeddings(settings)
    if not check.ok:
        LOGGER.debug("Embeddings check failed: %s", scrub_text(check.detail))
    return check.ok
