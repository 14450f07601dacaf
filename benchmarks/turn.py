"""How fast a cancelled turn stops: cancel → last item out, and cancel → model stream closed.

Run: ``.venv/bin/python benchmarks/turn.py [--turns N]``. Each turn streams tokens from an
in-process model (one every millisecond, endlessly) through the whole runner: guard,
output pipeline, history in a real temporary folder. The host takes items and cancels
after a random number of them, as a person speaking over the answer would. Two figures:

- ``items``: from ``turn.cancel()`` until the host's ``async for`` over ``turn.items()`` ends;
- ``model``: from ``turn.cancel()`` until the model's stream has been closed.

Target: p95 ≤ 50 ms for both.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import report_p95
from custom_components.companion_agent.engine.llm import LLMItem
from custom_components.companion_agent.engine.messages import ChatMessage
from custom_components.companion_agent.engine.tools.contract import ToolSpec
from custom_components.companion_agent.engine.turn.limits import TurnLimits
from custom_components.companion_agent.engine.turn.runner import TurnRunner
from tests.support.turns import Conversations, persona, start

TARGET_P95_MS = 50.0
WORDS = [
    "kitchen",
    "light",
    "heating",
    "twenty",
    "degrees",
    "door",
    "locked",
    "window",
    "garden",
    "hallway",
    "lamp",
    "bedroom",
    "fan",
    "kettle",
    "oven",
    "music",
    "blinds",
    "garage",
    "porch",
    "camera",
    "alarm",
    "sensor",
    "battery",
    "evening",
    "morning",
]
SENTENCE_WORDS = 12


class EndlessModel:
    """A model that streams words until its stream is closed, and says when that was."""

    def __init__(self) -> None:
        """Nothing closed yet."""
        self.closed_at: float | None = None

    async def stream_with_tools(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> AsyncIterator[LLMItem]:
        """Yield a word every millisecond; note the moment the consumer closes the stream."""
        chance = random.Random(11)
        try:
            while True:  # sentences of words drawn at random: nothing a loop check would stop
                for word in [*chance.sample(WORDS, SENTENCE_WORDS - 1), f"{chance.choice(WORDS)}."]:
                    await asyncio.sleep(0.001)
                    yield f"{word} "
        finally:
            self.closed_at = time.perf_counter()


def report(name: str, samples: list[float], figure: str) -> bool:
    """Print p50/p95/max in ms; return whether p95 meets the target."""
    return report_p95(name, samples, TARGET_P95_MS, unit="turns", figure=figure)


async def bench(turns: int, folder: Path) -> bool:
    """Run and cancel ``turns`` turns; print both figures."""
    runner = TurnRunner(limits=TurnLimits(turns_per_minute=0))
    talk = Conversations(folder)
    chance = random.Random(7)
    items_ms: list[float] = []
    model_ms: list[float] = []
    for n in range(turns):
        model = EndlessModel()
        turn = start(runner, persona(model), talk.request("Status?", conversation_id=f"c{n}"))
        stop_after = chance.randint(1, 40)
        stream = turn.items()
        cancelled = 0.0
        async for taken, _item in aenumerate(stream):
            if taken + 1 == stop_after:
                cancelled = time.perf_counter()
                turn.cancel("the person spoke")
        items_ms.append((time.perf_counter() - cancelled) * 1000)
        result = await turn.result
        if not cancelled or result.outcome == "complete":  # it ended itself: nothing measured
            raise SystemExit(f"turn {n} ended by itself ({result.speech_cut}), not by the cancel")
        assert model.closed_at is not None
        model_ms.append((model.closed_at - cancelled) * 1000)
    print(f"{turns} turns cancelled after 1-40 items (endless in-process model, real files)")
    ok = report("items", items_ms, "cancel → last item out")
    return report("model", model_ms, "cancel → model stream closed") and ok


async def aenumerate[T](items: AsyncIterator[T]) -> AsyncIterator[tuple[int, T]]:
    """Number the items of an async iterator."""
    count = 0
    async for item in items:
        yield count, item
        count += 1


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        ok = asyncio.run(bench(args.turns, Path(folder)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
