"""The HTTP package under the openai SDK: httpx for 2.x, httpx2 for 3.x, and lent clients.

These run in both test venvs: ``.venv`` (the pinned openai 2.x) and ``.venv-openai3`` (the
newest 3.x, with httpx beside it as Home Assistant installs it).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import openai
import pytest

from custom_components.companion_agent.engine import sdk_http
from custom_components.companion_agent.engine.errors import LLMError
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel, RoundEnd
from custom_components.companion_agent.engine.messages import UserMessage
from custom_components.companion_agent.engine.retry import NO_RETRY
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer

ROOT = Path(__file__).resolve().parents[2]
SDK_MAJOR = int(openai.__version__.partition(".")[0])


def test_the_package_is_the_one_the_sdk_builds_its_clients_with() -> None:
    """openai 2.x builds httpx clients, 3.x httpx2 ones; ``package`` follows."""
    assert sdk_http.package.__name__ == {2: "httpx", 3: "httpx2"}[SDK_MAJOR]
    assert issubclass(openai.DefaultAsyncHttpxClient, sdk_http.package.AsyncClient)


async def round_end(model: OpenAIChatModel) -> RoundEnd:
    """Stream one answer and return how the round ended."""
    items = [item async for item in model.stream_with_tools([UserMessage(content="Hi")], [])]
    end = items[-1]
    assert isinstance(end, RoundEnd)
    return end


@pytest.mark.parametrize("name", sdk_http.PACKAGE_NAMES)
async def test_a_lent_client_of_either_package_streams_and_sees_done(
    llm_server: LLMServer, name: str
) -> None:
    """A host's client (httpx or httpx2) streams; ``[DONE]`` still tells finished from cut.

    Home Assistant 2026.10 lends an httpx client to openai 3.x; 2026.11 an httpx2 one.
    """
    if SDK_MAJOR < 3 and name != "httpx":
        pytest.skip("openai 2.x takes httpx clients only")
    package = pytest.importorskip(name)
    async with package.AsyncClient() as lent:
        model = OpenAIChatModel(
            LLMSettings(base_url=llm_server.url, model="test-model", retry=NO_RETRY),
            http_client=lent,
        )
        llm_server.script(replace(Reply.text("Done, no reason.", chunk_size=4), finish_reason=None))
        finished = await round_end(model)
        llm_server.script(
            replace(Reply.text("Cut short.", chunk_size=2), finish_reason=None, cut_after=2)
        )
        cut = await round_end(model)
        await model.aclose()
        assert not lent.is_closed
    assert finished.error is None
    assert finished.finish_reason == "stop"
    assert isinstance(cut.error, LLMError)
    assert cut.error.retryable


@pytest.mark.skipif(SDK_MAJOR < 3, reason="openai 2.x is built on httpx")
def test_openai3_needs_no_httpx() -> None:
    """With openai 3.x the adapter and the embedder load and build clients without httpx."""
    probe = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "httpx" or name.startswith("httpx."):
            raise ImportError(f"imported {name}")
sys.meta_path.insert(0, Block())
import types
pkg = types.ModuleType("custom_components.companion_agent")
pkg.__path__ = [sys.argv[1]]
sys.modules["custom_components.companion_agent"] = pkg
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel
from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings, OpenAIEmbedder,
)
OpenAIChatModel(LLMSettings(base_url="http://127.0.0.1:9/v1", model="m"))
OpenAIEmbedder(EmbeddingSettings(base_url="http://127.0.0.1:9/v1", model="m"))
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", probe, str(ROOT / "custom_components" / "companion_agent")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
