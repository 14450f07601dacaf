"""Cost of the output pipeline per token, release lag, and linear growth without punctuation.

Run: ``.venv/bin/python benchmarks/pipeline.py [--passes N]``. Three measurements, all
through the composed pipeline (divider → actions → display → tts) in an asyncio loop:

- ``token``: time from a token leaving the source until the pipeline asks for the next
  one, outputs handed to the consumer included (µs, p50/p99), over zh/ja/en/mixed replies
  split into model-like tokens;
- ``display``: how many tokens after a token its text is decided on display (shown, or
  dropped as a tag): 0 means before the next token is pulled; trailing whitespace and an
  open tag wait for the next token(s); "end": decided when the stream ended;
- ``lag``: time from the token that decides a sentence's end to that sentence reaching
  the consumer (µs, p50/p99/max; the target applies to p99, the max shows scheduler and
  GC noise), and how many tokens after the one holding the sentence's last
  character that was (0: released by the closing token itself; 1: ASCII ``.!?`` waited
  for the next character; "end": released when the stream ended);
- ``scale``: CPU time (best of 5) for 25k / 50k / 100k characters without any punctuation (words
  with spaces, and CJK with no spaces at all), in 4-character tokens.

The warm-up pass checks each reply's display deltas: their text joins to the sentences'
display text and their model text to the reply. The engine is loaded without the Home
Assistant integration around it.

Targets: ≤ 5 µs/token p50, ≤ 50 µs p99, release lag ≤ 1 ms, scale linear (µs/char flat).
The exit status is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import time
import types
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The engine is pure asyncio: load it without the Home Assistant integration around it.
_INTEGRATION = types.ModuleType("custom_components.companion_agent")
_INTEGRATION.__path__ = [str(ROOT / "custom_components" / "companion_agent")]
sys.modules.setdefault(_INTEGRATION.__name__, _INTEGRATION)

from benchmarks.figures import record  # noqa: E402
from custom_components.companion_agent.engine.events import (  # noqa: E402
    OutputItem,
    SentenceOutput,
    TextDelta,
)
from custom_components.companion_agent.engine.pipeline import (  # noqa: E402
    OutputPipeline,
    PipelineConfig,
    build_pipeline,
)

TARGET_P50_US = 5.0
TARGET_P99_US = 50.0
TARGET_LAG_US = 1000.0
REPLIES = [
    "Turned on the kitchen light.",
    "Done! The living room is now at 21.5 °C. Anything else?",
    "Sure. I set a timer for 10 minutes, e.g. until 10.30 a.m. Then I'll remind you.",
    "Here are the lights that are on:\n\n1. **Kitchen** – 80%\n2. **Hallway** – 40%\n\n"
    "Want me to turn them off?",
    "[joy] Sure thing! I turned on the porch light 💡. [wave] See you later.",
    "You can read more at https://www.home-assistant.io/integrations/light. Shall I open it?",
    "好的，已经打开客厅的灯。需要我调暗一点吗？",
    "现在客厅温度是22.5度，湿度45%。要不要打开空调？我可以帮你设成26度。",
    "他说：“今天会下雨。”所以记得带伞。嗯……还有别的事吗？",
    "はい、リビングの電気をつけました。ほかに何かありますか？",
    "現在の室温は23.5度です！エアコンをつけますか？",
    "已经打开 Kitchen Light 了。Anything else？",
    "OK！我已经把 living room 的温度设为 24°C。Have a nice day!",
]
TOKEN = re.compile(r"\s*[A-Za-z]+|\s*\d|\s*[\u3000-\u9fff\uff00-\uffef]{1,2}|\s*\S|\s+")
CONFIG = PipelineConfig(action_tags=frozenset({"joy", "wave"}))


def tokens_of(text: str) -> list[str]:
    """Split ``text`` roughly the way a model's tokenizer streams it."""
    tokens = TOKEN.findall(text)
    assert "".join(tokens) == text
    return tokens


def percentile(samples: Sequence[float], share: float) -> float:
    """Return the ``share`` quantile of ``samples``."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Probe:
    """A token source that times each token and each sentence released by it."""

    def __init__(self, tokens: list[str], *, record: bool = False) -> None:
        """Hold the tokens and empty measurements; ``record`` keeps the display deltas."""
        self.tokens = tokens
        self.record = record
        self.index = -1
        self.sent_at = 0
        self.token_ns: list[int] = []
        self.lags: list[tuple[int, int | None]] = []
        self.decided: list[tuple[int, int]] = []
        self.shown: list[str] = []

    async def source(self) -> AsyncIterator[OutputItem]:
        """Yield each token, timing how long the pipeline keeps it."""
        for index, token in enumerate(self.tokens):
            self.index = index
            self.sent_at = time.perf_counter_ns()
            yield TextDelta(text=token, model_text=token)
            self.token_ns.append(time.perf_counter_ns() - self.sent_at)
        self.index = len(self.tokens)

    async def consume(self, pipeline: OutputPipeline) -> list[SentenceOutput]:
        """Run the pipeline over the tokens; time each sentence's release."""
        out: list[SentenceOutput] = []
        consumed = 0
        async for item in pipeline(self.source()):
            if isinstance(item, TextDelta):
                if self.record:
                    consumed += len(item.model_text)
                    self.decided.append((self.index, consumed))
                    self.shown.append(item.text)
            elif isinstance(item, SentenceOutput):
                lag = time.perf_counter_ns() - self.sent_at
                ended = self.index >= len(self.tokens)
                self.lags.append((lag, None if ended else self.index))
                out.append(item)
        return out

    def display_waits(self) -> list[str]:
        """Return, per token with visible text, how many tokens later it was decided."""
        waits: list[str] = []
        end = 0
        marks = iter(self.decided)
        index, consumed = next(marks, (len(self.tokens), 0))
        for position, token in enumerate(self.tokens):
            end += len(token)
            while consumed < end:
                index, consumed = next(marks, (len(self.tokens), end))
            if token.strip():
                waits.append("end" if index >= len(self.tokens) else str(index - position))
        return waits


def closing_tokens(text: str, tokens: list[str], out: list[SentenceOutput]) -> list[int | None]:
    """Return, per sentence, the index of the token holding its last character."""
    owner = [index for index, token in enumerate(tokens) for _ in token]
    result: list[int | None] = []
    pos = 0
    for sentence in out:
        end = text.index(sentence.display_text, pos) + len(sentence.display_text)
        result.append(owner[end - 1])
        pos = end
    return result


async def bench_tokens(passes: int) -> bool:
    """Measure per-token cost and release lag over the replies."""
    pipeline = build_pipeline(CONFIG)
    token_ns: list[int] = []
    lag_ns: list[int] = []
    waits: Counter[str] = Counter()
    display: Counter[str] = Counter()
    for n in range(passes + 1):
        for reply in REPLIES:
            tokens = tokens_of(reply)
            probe = Probe(tokens, record=n == 0)
            out = await probe.consume(pipeline)
            if n == 0:
                assert "".join(probe.shown) == "".join(s.display_text for s in out), reply
                assert probe.decided[-1][1] == len(reply), reply
                display.update(probe.display_waits())
                continue
            token_ns.extend(probe.token_ns)
            plain = "[" not in reply
            owners = closing_tokens(reply, tokens, out) if plain else [None] * len(out)
            for (lag, index), owner in zip(probe.lags, owners, strict=True):
                if index is None:
                    waits["end"] += 1
                    continue
                lag_ns.append(lag)
                if owner is not None:
                    waits[str(index - owner)] += 1
    p50, p99 = percentile(token_ns, 0.5) / 1000, percentile(token_ns, 0.99) / 1000
    ok_token = p50 <= TARGET_P50_US and p99 <= TARGET_P99_US
    print(
        f"token: n={len(token_ns)} p50={p50:.2f} µs p99={p99:.2f} µs "
        f"mean={statistics.fmean(token_ns) / 1000:.2f} µs max={max(token_ns) / 1000:.1f} µs  "
        f"targets p50 <= {TARGET_P50_US} µs, p99 <= {TARGET_P99_US} µs: "
        f"{'OK' if ok_token else 'MISSED'}"
    )
    record(
        "µs per token",
        f"p50 {p50:.2f}, p99 {p99:.2f}",
        f"p50 <= {TARGET_P50_US}, p99 <= {TARGET_P99_US}",
        met=ok_token,
    )
    l50, l99, lmax = (
        percentile(lag_ns, 0.5) / 1000,
        percentile(lag_ns, 0.99) / 1000,
        max(lag_ns) / 1000,
    )
    ok_lag = l99 <= TARGET_LAG_US
    print(
        f"  lag: n={len(lag_ns)} p50={l50:.2f} µs p99={l99:.2f} µs max={lmax:.1f} µs  "
        f"target p99 <= {TARGET_LAG_US:.0f} µs: {'OK' if ok_lag else 'MISSED'}"
    )
    measured = f"p50 {l50:.2f} µs, p99 {l99:.2f} µs"
    record("release lag", measured, f"p99 <= {TARGET_LAG_US:.0f} µs", met=ok_lag)
    total = sum(waits.values())
    shares = ", ".join(f"{key}: {count / total:.0%}" for key, count in sorted(waits.items()))
    print(f"  released by closing token +N tokens (plain replies): {shares}")
    total = sum(display.values())
    shares = ", ".join(f"{key}: {count / total:.1%}" for key, count in sorted(display.items()))
    print(f"  display: token text decided +N tokens after it (all replies): {shares}")
    return ok_token and ok_lag


async def run_through(pipeline: OutputPipeline, tokens: list[str]) -> int:
    """Run ``tokens`` through ``pipeline``; return how many sentences came out."""

    async def source() -> AsyncIterator[OutputItem]:
        """Yield the tokens."""
        for token in tokens:
            yield TextDelta(text=token, model_text=token)

    return sum([1 async for item in pipeline(source()) if isinstance(item, SentenceOutput)])


async def bench_scale() -> bool:
    """Time 25k/50k/100k characters without punctuation; check µs/char stays flat."""
    rng = random.Random(7)
    words = [
        "lorem",
        "ipsum",
        "dolor",
        "sit",
        "amet",
        "light",
        "kitchen",
        "hallway",
        "bedroom",
        "warm",
    ]
    han = "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生"
    sources = {
        "words": " ".join(rng.choice(words) for _ in range(30_000)),
        "cjk": "".join(rng.choice(han) for _ in range(110_000)),
    }
    pipeline = build_pipeline(CONFIG)
    ok = True
    for name, text in sources.items():
        await run_through(pipeline, [text[i : i + 4] for i in range(0, 25_000, 4)])
        sizes = (25_000, 50_000, 100_000)
        best = dict.fromkeys(sizes, float("inf"))
        cuts = dict.fromkeys(sizes, 0)
        for _ in range(5):
            for size in sizes:
                tokens = [text[i : i + 4] for i in range(0, size, 4)]
                started = time.process_time()
                cuts[size] = await run_through(pipeline, tokens)
                best[size] = min(best[size], time.process_time() - started)
        per_char = [best[size] / size * 1e6 for size in sizes]
        cells = [
            f"{size // 1000}k: {best[size] * 1000:.1f} ms ({cuts[size]} cuts)" for size in sizes
        ]
        growth = per_char[-1] / per_char[0]
        linear = growth < 1.5
        ok = ok and linear
        print(
            f"scale/{name}: " + ", ".join(cells) + f"; µs/char {per_char[0]:.3f} → "
            f"{per_char[-1]:.3f} (×{growth:.2f}) linear: {'OK' if linear else 'MISSED'}"
        )
        record(f"scale/{name}, µs/char growth", f"×{growth:.2f}", "< ×1.5 (linear)", met=linear)
    return ok


async def bench(passes: int) -> bool:
    """Run every measurement and print the figures."""
    print(f"output pipeline, {len(REPLIES)} replies × {passes} passes, python {sys.version[:6]}")
    ok = await bench_tokens(passes)
    return await bench_scale() and ok


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--passes", type=int, default=300)
    args = parser.parse_args()
    ok = asyncio.run(bench(args.passes))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
