"""A Home Assistant for ``benchmarks/voice.py``: Assist, our agent and voice, HA's own Wyoming.

A real HA core boots in process (``benchmarks/ha_core.py``); our entry gets a voice on
the Piper from ``.peers/piper`` and HA core's Wyoming integration is set up on the same
Piper; one pipeline uses each voice with our agent. ``Bench`` runs text pipelines (intent →
tts) as HA's websocket API does, scripts the model's timing, and notes when the parts of
our path happen, so Piper's own work can be told from ours.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import subprocess
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from homeassistant.components.assist_pipeline.pipeline import (
    KEY_ASSIST_PIPELINE,
    Pipeline,
)
from homeassistant.components.tts.const import DATA_COMPONENT
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component

from benchmarks.ha_core import configure
from custom_components.companion_agent.const import (
    CONF_TURNS_PER_MINUTE,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_TTS,
)
from custom_components.companion_agent.engine.errors import SpeechError
from custom_components.companion_agent.engine.speech import AudioChunk, WyomingTTS
from custom_components.companion_agent.engine.speech.head_start import SpeechKey, Synthesis
from custom_components.companion_agent.engine.turn.handle import Turn
from custom_components.companion_agent.engine.turn.request import TurnRequest
from custom_components.companion_agent.runtime import CompanionRuntime
from custom_components.companion_agent.tts import CompanionTtsEntity
from tests.ha.pipeline_runs import TextRun, start_text_run
from tests.support.llm_script import Reply, TextChunk
from tests.support.llm_server import LLMServer

PIPER = Path(__file__).resolve().parents[1] / ".peers" / "piper"
TIMEOUT = 30.0


@dataclass
class Bench:
    """The running HA, its two pipelines, the model server and where Piper listens."""

    hass: HomeAssistant
    server: LLMServer
    piper_port: int
    voice: str
    ours: Pipeline
    theirs: Pipeline
    turns: list[Turn] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)

    def script(self, words: tuple[str, ...], t0: float, first_token: float, gap: float) -> None:
        """Script one reply whose word ``i`` leaves the server at ``t0 + first_token + i*gap``."""
        loop = asyncio.get_running_loop()
        chunks = []
        for index, word in enumerate(words):
            hold = asyncio.Event()
            loop.call_at(t0 + first_token + index * gap, hold.set)
            chunks.append(TextChunk(word, hold=hold))
        self.server.script(Reply(chunks=tuple(chunks)))

    def start(self, pipeline: Pipeline, text: str) -> TextRun:
        """Start a text pipeline run (intent → tts), as HA's websocket API does."""
        return start_text_run(self.hass, pipeline, text, timeout=TIMEOUT)

    async def piper_alone(self, text: str) -> float:
        """Return seconds from asking Piper for ``text`` alone to its first audio (median of 3)."""
        client = WyomingTTS("127.0.0.1", self.piper_port, voice=self.voice, streaming=True)

        async def one() -> AsyncIterator[str]:
            yield text

        times = []
        for _ in range(3):
            start = time.perf_counter()
            audio = client.synthesize(one())
            try:
                await anext(audio)
            finally:
                await audio.aclose()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    async def spoken_seconds(self, *texts: str) -> float:
        """Return how long Piper's audio for ``texts``, sentence by sentence, plays."""
        client = WyomingTTS("127.0.0.1", self.piper_port, voice=self.voice, streaming=True)

        async def each() -> AsyncIterator[str]:
            for text in texts:
                yield text

        frames = 0.0
        async for chunk in client.synthesize(each()):
            frames += len(chunk.audio) / (chunk.width * chunk.channels * chunk.rate)
        return frames

    def mark(self, name: str) -> None:
        """Note when something first happened in this run."""
        self.marks.setdefault(name, asyncio.get_running_loop().time())


def launch_piper() -> tuple[subprocess.Popen[bytes], int, str]:
    """Start wyoming-piper from .peers/piper on a free port; return it, its port and voice."""
    python = PIPER / "venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"voice: wyoming-piper is not installed in {PIPER}: run script/peers")
    voice = (PIPER / "voice").read_text().strip()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    process = subprocess.Popen(
        [python, "-m", "wyoming_piper", "--uri", f"tcp://127.0.0.1:{port}", "--voice", voice,
         "--data-dir", str(PIPER / "data"), "--local-files-only"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return process, port, voice


async def wait_for_piper(process: subprocess.Popen[bytes], port: int, voice: str) -> None:
    """Wait until Piper answers, or give up."""
    client = WyomingTTS("127.0.0.1", port, voice=voice)
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            await client.describe()
        except SpeechError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("voice: wyoming-piper did not start") from None
            await asyncio.sleep(0.1)
        else:
            return


async def set_up(hass: HomeAssistant, server: LLMServer, port: int, voice: str) -> Bench:
    """Configure our entry with a voice, HA's Wyoming on the same Piper, and two pipelines."""
    hass.config.skip_pip = True
    assert await async_setup_component(hass, "assist_pipeline", {})
    agent = await configure(hass, server.url, "", "test-model")
    (entry,) = hass.config_entries.async_entries(DOMAIN)
    # Many turns a minute, each one measured: no rate limit (the entry reloads).
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_TURNS_PER_MINUTE: 0}
    )
    await hass.async_block_till_done()
    flows = hass.config_entries.subentries
    step = await flows.async_init((entry.entry_id, SUBENTRY_TTS), context={"source": "user"})
    step = await flows.async_configure(step["flow_id"], {"next_step_id": "server"})  # the menu
    step = await flows.async_configure(step["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: port})
    await flows.async_configure(step["flow_id"], {CONF_VOICE: voice})
    theirs = await hass.config_entries.flow.async_init("wyoming", context={"source": "user"})
    await hass.config_entries.flow.async_configure(
        theirs["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: port}
    )
    await hass.async_block_till_done()
    registry = er.async_get(hass)
    ours_tts = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, entry.entry_id)
        if e.domain == "tts"
    )
    (wyoming_entry,) = hass.config_entries.async_entries("wyoming")
    theirs_tts = next(
        e.entity_id
        for e in er.async_entries_for_config_entry(registry, wyoming_entry.entry_id)
        if e.domain == "tts"
    )
    entity = hass.data[DATA_COMPONENT].get_entity(ours_tts)
    assert isinstance(entity, CompanionTtsEntity)
    store = hass.data[KEY_ASSIST_PIPELINE].pipeline_store
    pipelines = [
        await store.async_create_item(
            {
                "name": name,
                "conversation_engine": agent,
                "conversation_language": "en",
                "language": "en",
                "stt_engine": None,
                "stt_language": None,
                "tts_engine": engine,
                "tts_language": "en_US",
                "tts_voice": None,
                "wake_word_entity": None,
                "wake_word_id": None,
                "prefer_local_intents": False,
            }
        )
        for name, engine in (("ours", ours_tts), ("theirs", theirs_tts))
    ]
    bench = Bench(
        hass=hass, server=server, piper_port=port, voice=voice, ours=pipelines[0],
        theirs=pipelines[1],
    )  # fmt: skip
    runtime: CompanionRuntime = entry.runtime_data
    heads = runtime.engine.speech_starts
    head_start = heads.start

    def timed_start(key: SpeechKey, trace_id: str, synthesis: Synthesis) -> bool:
        """Start a head start, noting when it was asked for and when its audio came."""
        bench.mark("asked")

        async def timed(sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
            """Pass the synthesis on, noting its first audio."""
            async for chunk in synthesis(sentences):
                bench.mark("answered")
                yield chunk

        return head_start(key, trace_id, timed)

    heads.start = timed_start  # type: ignore[method-assign]
    probe = entity._async_wyoming

    async def timed_probe(voice: str, speaker: str | None) -> WyomingTTS:
        """Check the server as the entity does, noting when the check is done."""
        client = await probe(voice, speaker)
        bench.mark("probed")
        return client

    entity._async_wyoming = timed_probe  # type: ignore[method-assign]
    engine = runtime.engine
    start = engine.start_turn

    def start_and_keep(request: TurnRequest) -> Turn:
        """Start a turn and keep its handle, to cancel it as a barge-in would."""
        turn = start(request)
        bench.turns[:] = [turn]
        return turn

    engine.start_turn = start_and_keep  # type: ignore[method-assign]
    return bench
