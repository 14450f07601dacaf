"""Thinking in a real HA: shown in the ChatLog, never spoken, and no planted secret leaves.

The scripted server sends reasoning (both field names) and a ``<think>`` block with keys,
tokens, URLs with logins and connection strings in them, split across chunks, then calls
a user plugin's tool whose argument its contract marks secret. None of it may reach the
ChatLog (content or deltas), the log at any level, or the audit file; the tool still gets
the real value.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from homeassistant.components import conversation
from homeassistant.core import HomeAssistant

from custom_components.companion_agent.const import STORAGE_FOLDER
from custom_components.companion_agent.engine.engine import AUDIT_FILE
from tests.ha.common import SetupPersonas, converse, speech, write_plugin, write_profile
from tests.support.llm_script import ReasoningChunk, Reply, TextChunk, ToolCallChunk
from tests.support.llm_server import LLMServer

PHRASE = "open-sesame-77"
SECRETS = (
    "sk-proj-Zq81VbN3mXk0Lp4R",
    "eyJhbGciOiJIUzI1NiJ9",
    "hunter2x9",
    "s3cr3tpw",
    "gho_16charsOfTokenAbcd",
    PHRASE,
)
THOUGHT = (
    "The key sk-proj-Zq81VbN3mXk0Lp4R unlocks the API. "
    "The graph is bolt://neo4j:hunter2x9@graph:7687 and the store "
    "postgres://app:s3cr3tpw@db/home.\n"
    "Use the phrase open-sesame-77 for the vault."
)
HIDDEN = (
    "<think>Header Bearer gho_16charsOfTokenAbcd and eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2lnbmF0"
)
VAULT_MANIFEST = """
    [plugin]
    id = "vault"
    type = "tool"
    entry = "plugin:VaultPlugin"
"""
VAULT_CODE = '''
    """A user tool plugin whose argument is secret by contract."""

    from custom_components.companion_agent.engine.plugins import ToolPlugin
    from custom_components.companion_agent.engine.tools.contract import ToolSpec
    from custom_components.companion_agent.engine.tools.registry import Tool

    class VaultPlugin(ToolPlugin):
        """Offer ``vault_open``."""

        def tools(self):
            """Return the tool."""
            parameters = {
                "type": "object",
                "properties": {"phrase": {"type": "string", "x-secret": True}},
                "required": ["phrase"],
            }
            spec = ToolSpec(name="vault_open", description="Open.", parameters=parameters)
            return [Tool(spec=spec, handler=self._open)]

        async def _open(self, args, ctx):
            """Open the vault if the phrase is right."""
            return {"opened": args["phrase"] == "open-sesame-77"}
'''


def pieces(text: str, size: int) -> list[str]:
    """Cut text into pieces of ``size`` characters, as a stream would."""
    return [text[at : at + size] for at in range(0, len(text), size)]


async def test_planted_secrets_never_reach_the_chat_log_the_log_or_the_audit(
    hass: HomeAssistant,
    llm_server: LLMServer,
    setup_personas: SetupPersonas,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Thinking shows, scrubbed; speech is only the answer; the tool gets the real phrase."""
    caplog.set_level(logging.DEBUG)
    write_plugin(hass, "vault", VAULT_MANIFEST, VAULT_CODE)
    write_profile(hass, "keeper", '[plugins]\nenabled = ["vault"]\n')
    entry, agents = await setup_personas({"Keeper": "keeper"})
    fields = ("reasoning_content", "reasoning")
    reasoning = [
        ReasoningChunk(piece, field=fields[n % 2]) for n, piece in enumerate(pieces(THOUGHT, 5))
    ]
    call = json.dumps({"phrase": PHRASE})
    llm_server.script(
        Reply(
            chunks=(
                *reasoning,
                *[TextChunk(piece) for piece in pieces(HIDDEN + "</think>", 7)],
                ToolCallChunk(0, call[:9], id="call_v1", name="vault_open"),
                ToolCallChunk(0, call[9:]),
            ),
            finish_reason="tool_calls",
        ),
        Reply.text("The vault is open."),
    )
    deltas: list[dict[str, object]] = []
    result, content = await converse(hass, agents["Keeper"], "Open the vault", deltas)
    assert speech(result) == "The vault is open."
    await entry.runtime_data.engine.flush()

    sent = llm_server.requests[1]["messages"]
    assert isinstance(sent, list)
    tool_messages = [m for m in sent if m["role"] == "tool"]
    assert [json.loads(m["content"]) for m in tool_messages] == [{"opened": True}]
    thinking = "".join(
        c.thinking_content or "" for c in content if isinstance(c, conversation.AssistantContent)
    )
    assert "bolt://***@graph:7687" in thinking
    assert "Header ***" in thinking
    assert "for the vault" in thinking
    [tool_call] = [
        call
        for c in content
        if isinstance(c, conversation.AssistantContent)
        for call in c.tool_calls or ()
    ]
    assert tool_call.tool_args == {"phrase": "***"}
    audit = (Path(hass.config.path(STORAGE_FOLDER)) / AUDIT_FILE).read_text(encoding="utf-8")
    assert '"vault_open"' in audit
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for secret in SECRETS:
        assert secret not in repr(content), secret
        assert secret not in repr(deltas), secret
        assert secret not in audit, secret
        assert secret not in logged, secret
        assert secret not in speech(result), secret


WIFI = "CorrectHorse42"
PASSWORD_FORMS = (
    # A bold label (the old rule took ``**`` for the value), split mid-value.
    ("Checking the router notes.\n**Wi-Fi pass", "word:** Correct", "Horse42 is in the notes.\n"),
    # The value after a line break, in a chunk of its own (name and value scrubbed apart).
    ("The guest network:\n- password:\n", f"{WIFI[:7]}", f"{WIFI[7:]}\n"),
    # A sentence, emphasis around the value, a PIN, Chinese.
    ("So the Wi-Fi password is `", f"{WIFI}`. ", "The alarm PIN is 4711.\n"),
    ("门锁密码是", "51", "50。然后回答。\n"),
)


async def test_passwords_in_common_forms_never_reach_the_chat_log(
    hass: HomeAssistant, llm_server: LLMServer, setup_personas: SetupPersonas
) -> None:
    """Markdown labels, a value on the next line (its own chunk), sentences, PIN, 密码: the
    thinking shown in HA's chat log (content and deltas) has them masked, the rest intact."""
    _entry, agents = await setup_personas({"Keeper": "default"})
    chunks = [ReasoningChunk(piece) for form in PASSWORD_FORMS for piece in form]
    llm_server.script(Reply(chunks=(*chunks, TextChunk("It is on the router."))))
    deltas: list[dict[str, object]] = []
    result, content = await converse(hass, agents["Keeper"], "What is the Wi-Fi password?", deltas)
    assert speech(result) == "It is on the router."
    thinking = "".join(
        c.thinking_content or "" for c in content if isinstance(c, conversation.AssistantContent)
    )
    assert "**Wi-Fi password:** *** is in the notes." in thinking
    assert "- password:\n***\n" in thinking
    assert "So the Wi-Fi password is `***`. The alarm PIN is ***." in thinking
    assert "门锁密码是***。然后回答。" in thinking
    for secret in (WIFI, "Correct", "4711", "5150"):
        assert secret not in repr(content), secret
        assert secret not in repr(deltas), secret
