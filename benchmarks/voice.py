"""Voice as heard: from the model's first token to the first audio leaving HA, on every path.

Run: ``.venv/bin/python benchmarks/voice.py [--runs N]`` (needs ``script/peers``: it starts
the real wyoming-piper). ``voice_home.py`` builds the home: a real HA core with ffmpeg on
its PATH, our agent on the scripted model server, our voice and HA core's Wyoming TTS on
the same Piper, HA's own Wyoming satellite, the browser's run, a media player. The model's
first token comes ``--first-token`` ms after its request, then one word every ``--gap``
ms; the first sentence has no comma. Each run goes down every path in turn.

- ``limit``: the physical limit, from the first token: the first sentence's last token,
  plus Piper's own time for that sentence (asked alone, beside each run).
- ``HA sat, HA TTS``, ``HA sat, ours``: HA's Wyoming satellite (it names a sample rate, so
  HA's ffmpeg converts); first audio = the first audio chunk written to the satellite.
  ``converter``: how long ffmpeg held our first audio back (from our voice handing it to
  HA to the satellite receiving it).
- ``our sat, ours``: the companion's own satellite (no conversion), once it exists.
  Targets: p95 ≤ 1.1 × the limit, and ahead of HA's satellite with HA's TTS by at least
  the converter's delay.
- ``browser, ours`` / ``browser, HA TTS``: a run naming no format (MP3), read as HA's HTTP
  view serves it. Target: ours ahead (p50).
- ``player, ours``: ``start_chat`` on a media player reading the stream (our WAV).
- ``cancel``: ``turn.cancel()`` while the reply streams → our stream ended, its Piper
  socket closed. Target p95 ≤ 50 ms.
- Piper requests per sentence, on each path our voice speaks (what its recording proxy was
  asked, over the sentences of the reply). Target 1.00: one synthesis however many read it.
- ``tool``: the model first calls a script that takes 8 s, then answers, on HA's satellite
  and the browser with our voice. ``first speech``: from the tool call to the first audio
  (the holding line), target under 2 s; ``stall``: the longest time no audio left HA once
  some had (a Voice PE stops working after 5 s), target under 2 s; ``silence heard``: the
  longest quiet stretch in the satellite's audio (the keep-alive's silence counts), shown.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import percentile, record
from benchmarks.ha_core import start_home_assistant
from benchmarks.voice_home import PLAYER, TOOL, Home, close, first_bytes, set_up
from benchmarks.voice_peers import launch_piper, piper_alone, said, wait_for_piper
from custom_components.companion_agent.const import DOMAIN
from tests.ha.common.pipelines import start_text_run
from tests.support.asr_server import ScriptedAsrServer
from tests.support.ffmpeg import ffmpeg_on_path
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.realtime_satellite import RealTimeSatellite

TIMEOUT = 30.0
OVER_LIMIT = 1.1
CANCEL_TARGET_MS = 50.0
FIRST = "It is a lovely sunny day outside today."
REST = "The kettle is on and the tea will be ready soon."
LONG = (
    "The garden needs water and the roses want cutting. The hedge by the gate has grown tall. "
    "The apples will be ripe next week, and the pears soon after. The shed door sticks when it "
    "rains. Someone left the hose out by the pond. The bird feeder is empty again."
)
"""Distinct sentences: a reply that repeats itself is stopped by the engine (and ends)."""
QUESTION = "Good morning."
SENTENCES = 2
"""The sentences of a usual reply (``FIRST``, ``REST``)."""
OUR_PATHS = ("HA sat, ours", "our sat, ours", "browser, ours", "player, ours")
AFTER_TOOL = "Everything looks fine outside. The gate is shut."
TOOL_TARGET = 2.0
SILENT_SAMPLE = 8
"""A sample this small (of 32768) is silence."""

type Path_ = Callable[[], Awaitable[float]]


def words(text: str) -> tuple[str, ...]:
    """Split ``text`` into word-sized tokens, each with its leading space."""
    return tuple(f" {word}" for word in text.split())


class Runs:
    """Every path of one home, each timed from the model's first token (seconds)."""

    def __init__(self, home: Home, question: bytes, first_token: float, gap: float) -> None:
        """Time paths of ``home``; satellites hear ``question``."""
        self.home = home
        self.question = question
        self.first_token = first_token
        self.gap = gap
        self.converter: list[float] = []
        self.requests: dict[str, list[float]] = {}
        """Piper requests per sentence, by path our voice speaks."""

    async def counted(self, name: str, path: Path_) -> float:
        """Time ``path``; on a path of our voice, note Piper's requests per sentence."""
        proxy = self.home.proxies["ours"]
        before = len(proxy.texts)
        took = await path()
        await asyncio.wait_for(proxy.wait_idle(), TIMEOUT)
        if name in OUR_PATHS:
            self.requests.setdefault(name, []).append((len(proxy.texts) - before) / SENTENCES)
        return took

    async def tool(self, satellite: bool) -> tuple[float, float, float]:
        """Ask while a slow tool runs; return first speech, longest stall, silence heard (s)."""
        loop = asyncio.get_running_loop()
        called: list[float] = []
        server = self.home.server

        def arrived() -> None:
            """Note when the model was asked (it calls the tool at once)."""
            server.on_chat = None
            called.append(loop.time())

        server.on_chat = arrived
        server.script(Reply.tool_calls(("call_look", TOOL, "{}")), Reply.text(AFTER_TOOL))
        if satellite:
            ours = self.home.satellites["ours"]
            before = len(ours.utterances)
            await ours.ask(self.question)
            async with asyncio.timeout(TIMEOUT):
                while len(ours.utterances) <= before:
                    ours.spoken.clear()
                    await ours.spoken.wait()
                answer = ours.utterances[-1]
                await answer.ended.wait()
                await self.home.turns[-1].result
            arrivals = [at for at, _size in answer.arrivals]
            quiet = longest_silence(bytes(answer.audio), answer.rate)
        else:
            flight = start_text_run(
                self.home.hass, self.home.ours, "Outside?", timeout=TIMEOUT, audio_output=None
            )
            arrivals = [loop.time() async for _chunk in flight.audio()][1:]  # past the header
            await flight.done()
            quiet = float("nan")
        gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
        return arrivals[0] - called[0], max(gaps, default=0.0), quiet

    def script(self, text: str = f"{FIRST} {REST}", until: asyncio.Event | None = None) -> None:
        """Script the next reply (its end held back until ``until``, if given)."""
        self.home.script(words(text), self.first_token, self.gap, until=until)

    async def satellite(self, satellite: RealTimeSatellite) -> float:
        """Ask on ``satellite``; return when its first audio came, from the first token."""
        self.script()
        before = len(satellite.utterances)
        await satellite.ask(self.question)
        async with asyncio.timeout(TIMEOUT):
            while len(satellite.utterances) <= before or satellite.utterances[-1].first_at is None:
                satellite.spoken.clear()
                await satellite.spoken.wait()
            answer = satellite.utterances[-1]
            await answer.ended.wait()
            await self.home.turns[-1].result
        assert answer.first_at is not None
        return answer.first_at - self.home.first_token

    async def ha_satellite_ours(self) -> float:
        """HA's satellite with our voice; note the converter's hold."""
        offset = time.time() - asyncio.get_running_loop().time()
        heard = await self.satellite(self.home.satellites["ours"])
        speech = self.home.runtime.engine.speech.get(self.home.turns[-1].trace_id)
        if speech is not None and speech.timeline.begun_at is not None:
            handed = speech.timeline.begun_at - offset - self.home.first_token
            self.converter.append(heard - handed)
        return heard

    async def browser(self, ours: bool) -> float:
        """Run as the browser's dialog does (no format: MP3); return its first audio."""
        self.script()
        pipeline = self.home.ours if ours else self.home.theirs
        flight = start_text_run(self.home.hass, pipeline, "Hi?", timeout=TIMEOUT, audio_output=None)
        heard = await first_bytes(flight.audio(), header=0)
        await flight.done()
        return heard - self.home.first_token

    async def player(self) -> float:
        """Speak first on the media player (``start_chat``); return its first audio."""
        self.script()
        player = self.home.player
        player.expect(header=44)  # our voice gives media players WAV
        await self.home.hass.services.async_call(
            DOMAIN, "start_chat", {"targets": [PLAYER], "instruction": "Greet."},
            blocking=True, return_response=True,
        )  # fmt: skip
        assert player.first_audio is not None
        return player.first_audio - self.home.first_token

    async def cancel(self) -> float:
        """Cut a long reply after its first audio; return seconds until our stream ends."""
        writing = asyncio.Event()
        self.script(f"{FIRST} {LONG}", until=writing)
        flight = start_text_run(self.home.hass, self.home.ours, "Garden?", timeout=TIMEOUT)
        audio = flight.audio()
        async for chunk in audio:
            if len(chunk) > 44:
                break
        await asyncio.sleep(0.05)  # Piper is busy with the next sentence now
        turn = self.home.turns[-1]
        if turn.finished is not None:  # a cancel would do nothing: this would time its end
            raise RuntimeError("cancel: the reply ended before it was cut")
        cut = time.perf_counter()
        turn.cancel("the person spoke")
        async for _chunk in audio:
            pass
        closed = time.perf_counter() - cut
        writing.set()
        await flight.done()
        await piper_alone(self.home.piper_port, self.home.voice, "Ready.")  # Piper ends it
        return closed


def paths(runs: Runs) -> dict[str, Path_]:
    """Return the paths to time, by name, in the order they are run and printed."""
    home = runs.home
    found: dict[str, Path_] = {
        "HA sat, HA TTS": lambda: runs.satellite(home.satellites["theirs"]),
        "HA sat, ours": runs.ha_satellite_ours,
    }
    if home.our_satellite is not None:
        satellite = home.our_satellite
        found["our sat, ours"] = lambda: runs.satellite(satellite)
    found |= {
        "browser, ours": lambda: runs.browser(ours=True),
        "browser, HA TTS": lambda: runs.browser(ours=False),
        "player, ours": runs.player,
    }
    return found


def longest_silence(pcm: bytes, rate: int) -> float:
    """Return the longest stretch of 16-bit mono ``pcm`` that is silent, in seconds."""
    samples = memoryview(pcm[: len(pcm) // 2 * 2]).cast("h")
    longest = run = 0
    for sample in samples:
        run = run + 1 if -SILENT_SAMPLE <= sample <= SILENT_SAMPLE else 0
        longest = max(longest, run)
    return longest / rate


def report_requests(requests: dict[str, list[float]]) -> bool:
    """Print Piper's requests per sentence on each path of our voice; 1.00 is the target."""
    ok = True
    for name, counts in requests.items():
        worst = max(counts)
        met = worst == 1.0
        print(f"{name}: Piper requests per sentence max {worst:.2f}, target 1.00: "
              f"{'OK' if met else 'MISSED'}")  # fmt: skip
        record(f"Piper requests per sentence, {name}", f"max {worst:.2f}", "1.00", met=met)
        ok &= met
    return ok


def report_tool(figures: dict[str, list[tuple[float, float, float]]]) -> bool:
    """Print first speech, the longest stall and the silence heard while an 8 s tool runs."""
    ok = True
    for name, runs in figures.items():
        first = [run[0] for run in runs]
        stall = [run[1] for run in runs]
        quiet = [run[2] for run in runs if run[2] == run[2]]
        met = percentile(first, 95) < TOOL_TARGET and percentile(stall, 95) < TOOL_TARGET
        heard = f", silence heard p50 {statistics.median(quiet):.1f} s" if quiet else ""
        print(
            f"tool 8 s, {name}: first speech p95 {percentile(first, 95):.2f} s, longest stall "
            f"p95 {percentile(stall, 95):.2f} s{heard}, targets < {TOOL_TARGET:.0f} s: "
            f"{'OK' if met else 'MISSED'}"
        )
        measured = (
            f"first speech p95 {percentile(first, 95):.2f} s, "
            f"stall p95 {percentile(stall, 95):.2f} s"
        )
        record(f"an 8 s tool, {name}", measured, f"both < {TOOL_TARGET:.0f} s", met=met)
        ok &= met
    return ok


def ms(samples: list[float], q: float) -> str:
    """Return the q-th percentile of ``samples`` (seconds) in ms."""
    return f"{percentile(samples, q) * 1000:7.0f}"


def report(figures: dict[str, list[float]], limits: list[float], converter: list[float]) -> bool:
    """Print the table and each target; return whether every target was met."""
    print(f"{'path':<17} {'p50 ms':>7} {'p95 ms':>7}  {'× limit p50':>11} {'p95':>5}")
    for name, samples in (("limit", limits), *figures.items()):
        over = [s / limit for s, limit in zip(samples, limits, strict=True)]
        print(
            f"{name:<17} {ms(samples, 50)} {ms(samples, 95)}  "
            f"{percentile(over, 50):11.2f} {percentile(over, 95):5.2f}"
        )
    if converter:
        print(f"HA's converter held our first audio back by p50 {ms(converter, 50).strip()} ms")
    ok = True
    ours = figures.get("our sat, ours")
    if ours is None:
        print("our sat, ours: not available (the integration has no satellite of its own yet)")
    else:
        over = [s / limit for s, limit in zip(ours, limits, strict=True)]
        met = percentile(over, 95) <= OVER_LIMIT
        ahead = statistics.median(figures["HA sat, HA TTS"]) - statistics.median(ours)
        wanted = statistics.median(converter) if converter else 0.0
        print(f"our sat p95 ≤ {OVER_LIMIT} × limit: {'OK' if met else 'MISSED'}")
        print(
            f"our sat ahead of HA sat with HA TTS by {ahead * 1000:.0f} ms, "
            f"≥ the converter's {wanted * 1000:.0f} ms: {'OK' if ahead >= wanted else 'MISSED'}"
        )
        measured = f"p95 {percentile(over, 95):.2f} × limit"
        record("first audio, our satellite", measured, f"p95 ≤ {OVER_LIMIT} × limit", met=met)
        record(
            "our satellite ahead of HA's satellite with HA's TTS",
            f"{ahead * 1000:.0f} ms",
            f"≥ the converter's {wanted * 1000:.0f} ms",
            met=ahead >= wanted,
        )
        ok &= met and ahead >= wanted
    lead = statistics.median(figures["browser, HA TTS"]) - statistics.median(
        figures["browser, ours"]
    )
    verdict = "OK" if lead > 0 else "MISSED"
    print(f"browser: ours ahead of HA TTS by p50 {lead * 1000:.0f} ms: {verdict}")
    measured = f"p50 {lead * 1000:.0f} ms ahead"
    record("browser (MP3): ours ahead of HA's TTS", measured, "ahead at p50", met=lead > 0)
    return ok and lead > 0


async def bench(home: Home, question: bytes, args: argparse.Namespace) -> bool:
    """Time every path ``args.runs`` times, interleaved; print the figures against targets."""
    runs = Runs(home, question, args.first_token / 1000, args.gap / 1000)
    timed = paths(runs)
    for path in timed.values():  # warm every path and Piper
        await path()
    runs.converter.clear()
    tool: dict[str, list[tuple[float, float, float]]] = {"HA sat, ours": [], "browser, ours": []}
    for _ in range(args.tool_runs):
        tool["HA sat, ours"].append(await runs.tool(satellite=True))
        tool["browser, ours"].append(await runs.tool(satellite=False))
    figures: dict[str, list[float]] = {name: [] for name in timed}
    limits: list[float] = []
    cancels: list[float] = []
    end = len(words(FIRST)) - 1
    for _ in range(args.runs):
        for name, path in timed.items():
            figures[name].append(await runs.counted(name, path))
        piper = await piper_alone(home.piper_port, home.voice, FIRST)
        limits.append(end * runs.gap + piper)
        cancels.append(await runs.cancel() * 1000)
    print(
        f"model: first token {args.first_token:.0f} ms after its request, then one word every "
        f"{args.gap:.0f} ms; the first sentence ({len(FIRST)} characters) ends "
        f"{end * args.gap:.0f} ms after the first token; {args.runs} runs"
    )
    ok = report(figures, limits, runs.converter)
    ok &= report_requests(runs.requests)
    ok &= report_tool(tool)
    p95 = percentile(cancels, 95)
    print(
        f"cancel → our stream ended: p50 {statistics.median(cancels):.1f} ms p95 {p95:.1f} ms, "
        f"target p95 ≤ {CANCEL_TARGET_MS} ms: {'OK' if p95 <= CANCEL_TARGET_MS else 'MISSED'}"
    )
    measured = f"p50 {statistics.median(cancels):.1f} ms, p95 {p95:.1f} ms"
    met = record(
        "cancel → our stream ended",
        measured,
        f"p95 ≤ {CANCEL_TARGET_MS} ms",
        met=p95 <= CANCEL_TARGET_MS,
    )
    return ok and met


async def main() -> None:
    """Start Piper, the model and ASR servers and HA; measure; exit non-zero on a miss."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--first-token", type=float, default=300.0, help="ms")
    parser.add_argument("--gap", type=float, default=20.0, help="ms between tokens")
    parser.add_argument("--tool-runs", type=int, default=3, help="runs of the 8 s tool, per path")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    process, port, voice = launch_piper()
    try:
        await wait_for_piper(process, port, voice)
        question = await said(process, port, voice, QUESTION)
        with ffmpeg_on_path() as ffmpeg, tempfile.TemporaryDirectory(prefix="voice-") as folder:
            if ffmpeg is None:
                raise SystemExit("voice: imageio-ffmpeg is not installed (requirements_test.txt)")
            async with LLMServer() as server, ScriptedAsrServer() as asr:
                hass = await start_home_assistant(folder)
                home = await set_up(hass, server, asr, port, voice)
                try:
                    ok = await bench(home, question, args)
                finally:
                    await close(home)
                    await hass.async_stop()
    finally:
        process.terminate()
        process.wait(5)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    asyncio.run(main())
