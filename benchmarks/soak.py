"""Soak: many concurrent turns, random cancellations, and what memory they leave behind.

Run: ``.venv/bin/python benchmarks/soak.py [--turns N] [--waves N] [--wave-size N]``.

- ``engine``: N concurrent turns through ``TurnRunner`` and the real openai SDK against the
  local streaming server, 10 % cancelled at a random moment; counts completed, cancelled
  and leaked tasks, and RSS before, at the peak and after collection. "Before" is after a
  first wave of the same size, so the allocator's high-water mark is not counted as a
  leak. Targets: no leaked task; RSS after collection within 5 % of before.
- ``ha``: a real Home Assistant core (headless) with the integration set up through its
  config flow; waves of concurrent turns, each in a new conversation; p50/p95 of a turn and
  RSS growth per wave after collection. HA itself keeps every conversation's ChatLog for
  five idle minutes; the soak shortens that to two seconds and measures twice per wave:
  while HA still holds the wave's conversations ("held"), and once it has let them go
  ("kept": what outlives HA's own expiry). Target: ≤ 0.5 MB kept per wave.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import logging
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from homeassistant.components import conversation  # noqa: E402
from homeassistant.core import Context  # noqa: E402
from homeassistant.helpers import chat_session  # noqa: E402

from benchmarks.figures import record  # noqa: E402
from benchmarks.ha_core import configure, start_home_assistant  # noqa: E402
from custom_components.companion_agent.engine.llm import LLMSettings, OpenAIChatModel  # noqa: E402
from custom_components.companion_agent.engine.retry import NO_RETRY  # noqa: E402
from custom_components.companion_agent.engine.turn.limits import TurnLimits  # noqa: E402
from custom_components.companion_agent.engine.turn.runner import TurnRunner  # noqa: E402
from tests.support.llm_server import LLMServer  # noqa: E402
from tests.support.turns import Conversations, persona, start  # noqa: E402

RSS_TARGET = 0.05
HA_EXPIRY = 2.0
WAVE_TARGET_MB = 0.5


def rss_mb() -> float:
    """Return this process's resident memory in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def collected_mb() -> float:
    """Collect garbage, hand freed heap back to the system, return the resident memory in MB."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_mb()


async def engine_wave(
    server: LLMServer, folder: Path, turns: int, chance: random.Random
) -> dict[str, int]:
    """Run ``turns`` concurrent turns, cancelling about one in ten; return the counts."""
    model = OpenAIChatModel(LLMSettings(base_url=server.url, model="test-model", retry=NO_RETRY))
    runner = TurnRunner(limits=TurnLimits(turns_per_minute=0))
    talk = Conversations(folder)
    who = persona(model)
    started = [
        start(runner, who, talk.request(f"turn {n}", conversation_id=f"c{n}", trace_id=f"t{n}"))
        for n in range(turns)
    ]

    async def take(index: int) -> str:
        """Take a turn's items, cancelling some of them part-way."""
        turn = started[index]
        cancel_after = chance.randint(1, 6) if chance.random() < 0.1 else None
        taken = 0
        async for _item in turn.items():
            taken += 1
            if cancel_after is not None and taken >= cancel_after:
                turn.cancel("soak")
        return (await turn.result).outcome

    outcomes = await asyncio.gather(*(take(n) for n in range(turns)))
    await model.aclose()
    return {
        "completed": outcomes.count("complete"),
        "cancelled": outcomes.count("interrupted"),
        "other": len(outcomes) - outcomes.count("complete") - outcomes.count("interrupted"),
    }


async def engine_soak(turns: int) -> bool:
    """Print the engine figures; return whether they meet their targets."""
    chance = random.Random(11)
    async with LLMServer() as server:
        with tempfile.TemporaryDirectory() as folder:
            await engine_wave(server, Path(folder) / "warm", turns, chance)
            before_tasks = len(asyncio.all_tasks())
            before = collected_mb()
            peak = before
            monitor_done = asyncio.Event()

            async def monitor() -> None:
                """Sample RSS while the wave runs."""
                nonlocal peak
                while not monitor_done.is_set():
                    peak = max(peak, rss_mb())
                    await asyncio.sleep(0.05)

            watcher = asyncio.create_task(monitor())
            started = time.perf_counter()
            counts = await engine_wave(server, Path(folder) / "soak", turns, chance)
            elapsed = time.perf_counter() - started
            monitor_done.set()
            await watcher
            await asyncio.sleep(0.1)
            leaked = len(asyncio.all_tasks()) - before_tasks
            after = collected_mb()
    growth = (after - before) / before
    ok = leaked <= 0 and growth <= RSS_TARGET
    print(
        f"engine: {turns} concurrent turns in {elapsed:.1f} s: completed={counts['completed']} "
        f"cancelled={counts['cancelled']} other={counts['other']} leaked tasks={max(leaked, 0)}"
    )
    print(
        f"engine: RSS before={before:.1f} MB peak={peak:.1f} MB after={after:.1f} MB "
        f"({growth:+.1%}; target ≤ {RSS_TARGET:.0%}, no leaked task): {'OK' if ok else 'MISSED'}"
    )
    measured = f"RSS {growth:+.1%}, {max(leaked, 0)} leaked tasks"
    record(f"engine, {turns} turns", measured, f"RSS <= {RSS_TARGET:.0%}, 0 leaked", met=ok)
    return ok


async def ha_soak(waves: int, size: int) -> bool:
    """Print the HA figures; return whether growth per wave meets its target."""
    logging.getLogger("homeassistant").setLevel(logging.ERROR)
    chat_session.CONVERSATION_TIMEOUT = timedelta(seconds=HA_EXPIRY)  # HA's 5 minutes, shortened
    async with LLMServer() as server:
        with tempfile.TemporaryDirectory(prefix="companion-soak-") as config_dir:
            hass = await start_home_assistant(config_dir)
            try:
                agent_id = await configure(hass, server.url, "", "test-model")

                async def one(text: str) -> float:
                    """Run one turn in a new conversation; return its seconds."""
                    started = time.perf_counter()
                    await conversation.async_converse(
                        hass, text, None, Context(), language="en", agent_id=agent_id
                    )
                    return time.perf_counter() - started

                await asyncio.gather(*(one(f"warm {n}") for n in range(size)))
                await asyncio.sleep(HA_EXPIRY * 2 + 1)
                baseline = collected_mb()
                growth: list[float] = []
                held: list[float] = []
                latencies: list[float] = []
                for wave in range(waves):
                    latencies += await asyncio.gather(
                        *(one(f"wave {wave} turn {n}") for n in range(size))
                    )
                    server.requests.clear()  # the test server's own log is not the product's
                    held.append(collected_mb() - baseline)
                    await asyncio.sleep(HA_EXPIRY * 2 + 1)  # HA's session cleanup has run
                    await hass.async_block_till_done()
                    now = collected_mb()
                    growth.append(now - baseline)
                    baseline = now
            finally:
                await hass.async_stop()
    p50 = statistics.median(latencies) * 1000
    p95 = statistics.quantiles(latencies, n=20)[18] * 1000
    per_wave = statistics.mean(growth[1:] if len(growth) > 1 else growth)
    ok = per_wave <= WAVE_TARGET_MB
    print(f"ha: {waves} waves of {size} concurrent turns: p50={p50:.0f} ms p95={p95:.0f} ms")
    print(
        "ha: RSS held per wave while HA keeps its ChatLogs: " + " ".join(f"{h:+.2f}" for h in held)
    )
    print(
        "ha: RSS kept per wave after collection: "
        + " ".join(f"{g:+.2f}" for g in growth)
        + f" MB; mean after the first {per_wave:+.2f} MB (target ≤ {WAVE_TARGET_MB} MB): "
        + ("OK" if ok else "MISSED")
    )
    kept = f"HA, {waves}×{size} turns, RSS kept"
    return record(kept, f"{per_wave:+.2f} MB a wave", f"<= {WAVE_TARGET_MB} MB", met=ok)


async def main() -> None:
    """Run both soaks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--waves", type=int, default=4)
    parser.add_argument("--wave-size", type=int, default=200)
    args = parser.parse_args()
    ok = await ha_soak(args.waves, args.wave_size)
    ok = await engine_soak(args.turns) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    asyncio.run(main())
