"""The audit log: append-only JSON lines, written off the loop, surviving restarts, redacted."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from custom_components.companion_agent.engine import audit as audit_module
from custom_components.companion_agent.engine.audit import (
    AuditLog,
    read_audit,
)
from custom_components.companion_agent.engine.json_types import JSONObject, JSONValue
from custom_components.companion_agent.engine.redaction import is_secret_key, redact
from custom_components.companion_agent.engine.tools.contract import ToolContext, ToolSpec
from custom_components.companion_agent.engine.tools.registry import Tool

from .conftest import CTX, Rig, call, obj, record


async def test_audit_survives_a_restart_and_only_appends(tmp_path: Path) -> None:
    """A second instance on the same file keeps the first one's lines and adds after them."""
    path = tmp_path / "companion_agent" / "audit.jsonl"
    first = AuditLog(path, batch_delay=0)
    first.record(record(1))
    first.record(record(2))
    await first.close()
    before = path.read_bytes()
    second = AuditLog(path, batch_delay=0)
    second.record(record(3))
    await second.close()
    after = path.read_bytes()
    assert after.startswith(before)
    assert [r["trace_id"] for r in read_audit(path)] == ["trace-1", "trace-2", "trace-3"]
    assert all(line.startswith("{") for line in after.decode().splitlines())
    assert oct(path.stat().st_mode & 0o777) == "0o600"


async def test_records_are_written_by_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event loop only queues; the file is written from another thread."""
    threads: list[int] = []
    real_append = audit_module._append

    def spy(path: Path, data: list[bytes], max_bytes: int, keep: int) -> None:
        """Note the writing thread, then write."""
        threads.append(threading.get_ident())
        real_append(path, data, max_bytes, keep)

    monkeypatch.setattr(audit_module, "_append", spy)
    log = AuditLog(tmp_path / "audit.jsonl", batch_delay=0.01)
    for n in range(300):
        log.record(record(n))
    assert not log.path.exists()
    await log.flush()
    assert len(read_audit(log.path)) == 300
    assert threads
    assert threading.get_ident() not in threads
    await log.close()


async def test_secrets_are_redacted_at_any_depth(tmp_path: Path) -> None:
    """Keys that name secrets are masked in arguments, details and states; text is scrubbed."""
    arguments = json.dumps(
        {
            "entity_id": "lock.front_door",
            "code": "1234",
            "options": {"api_key": "sk-live-abcdefghijkl", "headers": {"Authorization": "x"}},
            "list": [{"accessToken": "abc"}, {"password": "hunter2"}],
            "prompt_tokens": 5,
        }
    )
    log = AuditLog(tmp_path / "audit.jsonl", batch_delay=0)
    log.record(
        record(
            1,
            arguments=arguments,
            detail="failed: Bearer abcdefghijklmnopqrstuvwxyz while calling",
            state_before={"lock.front_door": {"state": "locked", "secret": "s3"}},
        )
    )
    await log.close()
    text = log.path.read_text()
    for secret in ("1234", "sk-live", "hunter2", "abcdefghijklmnop", "s3", '"abc"'):
        assert secret not in text
    [line] = read_audit(log.path)
    args = obj(obj(line["call"])["arguments"])
    assert args["entity_id"] == "lock.front_door"
    assert args["code"] == "***"
    assert args["options"] == {"api_key": "***", "headers": {"Authorization": "***"}}
    assert args["prompt_tokens"] == 5


def test_secret_names_are_recognised_in_every_case_and_ordinary_ones_are_not() -> None:
    """Secret names in snake, camel and header case are recognised; ordinary ones are not."""
    for key in ("api_key", "apiKey", "X-Api-Key", "password", "client_secret", "refresh_token"):
        assert is_secret_key(key), key
    for key in ("lock_code", "alarmCode", "code"):
        assert is_secret_key(key), key
    for key in ("entity_id", "prompt_tokens", "brightness", "name", "keyboard", "weather_code"):
        assert not is_secret_key(key), key
    assert redact({"a": [{"token": "t"}]}) == {"a": [{"token": "***"}]}


async def test_unparsable_arguments_are_kept_scrubbed(tmp_path: Path) -> None:
    """Raw arguments that are not JSON are stored as text, cut and scrubbed."""
    log = AuditLog(tmp_path / "audit.jsonl", batch_delay=0)
    log.record(record(1, arguments='{"api_key": "sk-abcdefghijklmnopqr", "x": ' + "y" * 5000))
    await log.close()
    [line] = read_audit(log.path)
    raw = obj(line["call"])["arguments"]
    assert isinstance(raw, str)
    assert len(raw) <= audit_module.MAX_RAW_CHARS
    assert "sk-abcdefghij" not in raw


async def test_guard_audit_survives_restart_with_a_new_guard(rig: Rig) -> None:
    """After a restart (new log on the same file) the guard's earlier records are still there."""
    await rig.guard.execute(call("light_turn_on", '{"entity_id": "light.kitchen"}'), CTX)
    await rig.audit.close()
    reopened = AuditLog(rig.audit.path, batch_delay=0)
    reopened.record(record(9))
    await reopened.close()
    records = read_audit(rig.audit.path)
    assert [r["decision"] for r in records] == ["allow", "allow"]
    assert records[0]["tool"] == "light_turn_on"


async def test_tool_results_are_redacted_in_the_audit(rig: Rig) -> None:
    """A result that carries a secret is stored with the secret masked."""

    async def leaky(args: JSONObject, ctx: ToolContext) -> JSONValue:
        """Return a config with a key in it."""
        return {"url": "http://hub.local", "api_key": "sk-verysecretvalue123"}

    rig.guard.registry.register(Tool(spec=ToolSpec(name="leaky", description="x"), handler=leaky))
    outcome = await rig.guard.execute(call("leaky", "{}"), CTX)
    assert outcome.kind == "success"
    [line] = await rig.records()
    assert obj(line["detail"]) == {"url": "http://hub.local", "api_key": "***"}
    assert "verysecret" not in rig.audit.path.read_text()
