"""Memory backends' secrets never show: not in diagnostics, a repair issue or the log."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.companion_agent.const import DOMAIN
from custom_components.companion_agent.engine.memory.embeddings import EmbeddingSettings
from custom_components.companion_agent.engine.memory.stores.mem0.setup import Mem0Settings
from custom_components.companion_agent.engine.memory.stores.neo4j.graph import Neo4jSettings
from custom_components.companion_agent.engine.redaction import scrub_text
from tests.ha.common import async_load, companion_entry, persona
from tests.support.llm_server import LLMServer

SECRETS = ("hunter2", "qdrant-key-7f3a", "embed-key-91c2", "neo-pw-5e6d")


def test_scrub_text_masks_the_login_of_a_url_in_free_text() -> None:
    """A URL's ``user:password@`` inside an error message is masked; the host stays."""
    said = "cannot connect to bolt://neo4j:hunter2@graph.lan:7687 (refused)"
    assert scrub_text(said) == "cannot connect to bolt://***@graph.lan:7687 (refused)"
    assert scrub_text("see http://graph.lan:7474/browser") == "see http://graph.lan:7474/browser"


def test_backend_settings_never_show_a_secret_in_their_repr() -> None:
    """A settings object logged or in a traceback shows no password or key."""
    shown = repr(
        [
            Neo4jSettings(uri="bolt://g:7687", user="neo4j", password="neo-pw-5e6d"),
            Mem0Settings(
                folder=Path("/x"), qdrant_api_key="qdrant-key-7f3a", llm_api_key="hunter2"
            ),
            EmbeddingSettings.for_model("http://e/v1", "m", api_key="embed-key-91c2"),
        ]
    )
    assert "bolt://g:7687" in shown
    for secret in SECRETS:
        assert secret not in shown


async def test_memory_options_secrets_stay_out_of_diagnostics_issues_and_log(
    hass: HomeAssistant,
    llm_server: LLMServer,
    hass_client: ClientSessionGenerator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Keys, passwords and URL logins of mem0, Qdrant, Neo4j and embeddings never show.

    (Libraries such as openai log the URLs they were given at DEBUG; HA logs them at
    WARNING unless told otherwise. What is checked here is everything of ours.)
    """
    options = {
        "memory_backend": "mem0",
        "mem0_url": "http://admin:hunter2@127.0.0.1:9",
        "mem0_api_key": "qdrant-key-7f3a",
        "embeddings_url": "http://u:embed-key-91c2@127.0.0.1:9/v1",
        "embeddings_model": "test-embed",
        "embeddings_key": "embed-key-91c2",
        "memory_neo4j": False,
        "neo4j_uri": "bolt://neo4j:neo-pw-5e6d@127.0.0.1:9",
        "neo4j_password": "neo-pw-5e6d",
    }
    entry = companion_entry(llm_server.url, persona("Ada"), options=options)
    with caplog.at_level(logging.DEBUG, logger="custom_components.companion_agent"):
        await async_load(hass, entry)
        diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    issue = ir.async_get(hass).async_get_issue(DOMAIN, f"memory_unreachable_{entry.entry_id}")
    assert issue is not None
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("custom_components")]
    shown = json.dumps([diagnostics, issue.translation_placeholders, ours])
    assert "127.0.0.1:9" in json.dumps(diagnostics["options"])  # the hosts still show
    for secret in SECRETS:
        assert secret not in shown, secret
