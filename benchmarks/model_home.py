"""A real model at home: home commands through a real HA, answered by SmolLM2 on llama.cpp.

Run: ``.venv/bin/python benchmarks/model_home.py`` (``script/peers llama`` builds the model's
server first). A real Home Assistant core runs in this process (``ha_core.py``) with HA's demo
lights, locks, covers and alarm panel, eight of them exposed to Assist, and the companion set
up through its config flow with Assist's tools; llama.cpp's own server (xllamacpp) serves
SmolLM2-135M-Instruct on one thread, greedy (the peer ``tests/support/llama.py`` starts).
``COMMANDS`` holds 34 commands in English and Chinese: turn on/off, brightness, windows, locks
and the garage door and the alarm (a held action is answered "yes" in the same conversation),
questions about state, small talk. Each command starts a new conversation once the model
server is idle (the memory written after the last turn runs on the same one-slot server).

Figures, against targets:

- right: the share of the commands that act (20) whose service calls are exactly the one
  expected; and the share of questions and small talk (14) that made no service call;
- wrong: the share that made any other device service call; and the number of such calls on
  locks, covers and alarms, which must be 0 (held by the guard, whatever the model says);
- false claims: the share of replies that say a device changed (turned on/off, locked,
  opened… in English or Chinese) in a turn that made no device service call;
- speech: seconds of speech per reply, from its text at a speaking rate (15 characters a
  second in English, 4.5 Chinese characters a second), p50 and p95 against the persona's
  "one to three short sentences" (at most 20 s);
- first text and total: seconds from sending a turn to its first streamed text (a holding
  line for a model that keeps the person waiting counts: it is what they first hear), and
  to its end (p50, p95).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from unittest.mock import patch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from homeassistant.components import conversation  # noqa: E402
from homeassistant.components.homeassistant.exposed_entities import (  # noqa: E402
    async_expose_entity,
)
from homeassistant.const import CONF_LLM_HASS_API, EVENT_CALL_SERVICE, Platform  # noqa: E402
from homeassistant.core import Context, Event, HomeAssistant, callback  # noqa: E402
from homeassistant.helpers import chat_session, llm  # noqa: E402

from benchmarks.figures import percentile, record  # noqa: E402
from benchmarks.ha_core import configure, start_home_assistant  # noqa: E402
from custom_components.companion_agent.const import (  # noqa: E402
    CONF_TURNS_PER_MINUTE,
    DOMAIN,
    SUBENTRY_CONVERSATION,
)
from tests.support.llama import LlamaPeer, start_llama, wait_ready  # noqa: E402
from tests.support.peer_process import stop  # noqa: E402

EXPOSED = (
    "light.bed_light",
    "light.ceiling_lights",
    "light.kitchen_lights",
    "lock.front_door",
    "lock.kitchen_door",
    "cover.garage_door",
    "cover.kitchen_window",
    "alarm_control_panel.security",
)
DEVICE_DOMAINS = frozenset({"light", "lock", "cover", "alarm_control_panel", "switch", "fan"})
GUARDED_DOMAINS = frozenset({"lock", "cover", "alarm_control_panel"})
RIGHT_TARGET = 0.8
SPEECH_TARGET = 20.0
FIRST_TOKEN_TARGET = 2.0
TOTAL_TARGET = 10.0
IDLE_TIMEOUT = 300.0
EN_RATE = 15.0
"""Characters a second of English speech (about 150 words a minute)."""
ZH_RATE = 4.5
"""Chinese characters a second of speech."""
CJK = re.compile(r"[\u3400-\u9fff]")
CLAIMS = re.compile(
    r"\b(?:turned|switched|shut)\s+(?:it\s+|them\s+|the\s+[\w ]{1,30}?\s+)?(?:on|off)\b"
    r"|\b(?:is|are|was|were)\s+now\s+(?:on|off|open|closed|locked|unlocked)\b"
    r"|\b(?:has|have)\s+been\s+(?:turned|switched|locked|unlocked|opened|closed|dimmed|set)\b"
    r"|\bI(?:'ve|\s+have)?\s+(?:turned|switched|locked|unlocked|opened|closed|dimmed|set)\b"
    r"|已经?(?:打开|关闭|关掉|关上|开启|锁上|锁好|解锁|调)"
    r"|(?:打开|关闭|关掉|关上|锁上|解锁|调到\S{0,6})了",
    re.IGNORECASE,
)
"""A reply that says a device changed, in English or Chinese."""

type Call = tuple[str, str, str]
"""(domain, service, entity id) of a device service call."""


@dataclass(frozen=True, slots=True)
class Command:
    """One thing a person says, what should happen, and the yes a held action needs."""

    text: str
    expected: Call | None = None
    confirm: str | None = None
    language: str = "en"


def _zh(text: str, expected: Call | None = None, confirm: str | None = None) -> Command:
    """Return a command in Chinese."""
    return Command(text, expected, confirm, language="zh-Hans")


COMMANDS = (
    Command("Turn on the bed light", ("light", "turn_on", "light.bed_light")),
    Command("Turn off the kitchen lights", ("light", "turn_off", "light.kitchen_lights")),
    Command("Switch on the ceiling lights", ("light", "turn_on", "light.ceiling_lights")),
    Command("Turn off the ceiling lights", ("light", "turn_off", "light.ceiling_lights")),
    Command("Set the bed light to 50 percent", ("light", "turn_on", "light.bed_light")),
    Command("Dim the kitchen lights to 20 percent", ("light", "turn_on", "light.kitchen_lights")),
    Command("Open the kitchen window", ("cover", "open_cover", "cover.kitchen_window")),
    Command("Close the kitchen window", ("cover", "close_cover", "cover.kitchen_window")),
    Command("Unlock the front door", ("lock", "unlock", "lock.front_door"), confirm="yes"),
    Command("Lock the kitchen door", ("lock", "lock", "lock.kitchen_door")),
    Command("Open the garage door", ("cover", "open_cover", "cover.garage_door"), confirm="yes"),
    Command(
        "Disarm the alarm",
        ("alarm_control_panel", "alarm_disarm", "alarm_control_panel.security"),
        confirm="yes",
    ),
    Command("Is the front door locked?"),
    Command("Is the bed light on?"),
    Command("Which lights are on?"),
    Command("Is the garage door open?"),
    Command("Hello, how are you?"),
    Command("Tell me a joke"),
    Command("Thank you"),
    Command("What can you do?"),
    _zh("打开床头灯", ("light", "turn_on", "light.bed_light")),
    _zh("关掉厨房的灯", ("light", "turn_off", "light.kitchen_lights")),
    _zh("把吊灯调到百分之三十", ("light", "turn_on", "light.ceiling_lights")),
    _zh("关掉吊灯", ("light", "turn_off", "light.ceiling_lights")),
    _zh("打开厨房的窗户", ("cover", "open_cover", "cover.kitchen_window")),
    _zh("解锁前门", ("lock", "unlock", "lock.front_door"), confirm="好的"),
    _zh("锁上厨房的门", ("lock", "lock", "lock.kitchen_door")),
    _zh("打开车库门", ("cover", "open_cover", "cover.garage_door"), confirm="是的"),
    _zh("前门锁了吗？"),
    _zh("哪些灯开着？"),
    _zh("你好"),
    _zh("讲个笑话"),
    _zh("谢谢"),
    _zh("你能做什么？"),
)


@dataclass(slots=True)
class Outcome:
    """What one command did: its device calls, its replies, and each turn's times."""

    command: Command
    calls: list[Call] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    false_claims: int = 0
    first_token: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)

    @property
    def right(self) -> bool:
        """Say whether the calls are exactly the one expected (none for a question)."""
        return self.calls == ([self.command.expected] if self.command.expected else [])

    @property
    def wrong(self) -> list[Call]:
        """Return the calls that were not the one expected."""
        return [c for c in self.calls if c != self.command.expected]


def speech_seconds(text: str) -> float:
    """Return how long ``text`` takes to say: Chinese characters and the rest at their rates."""
    chinese = len(CJK.findall(text))
    return chinese / ZH_RATE + (len(text.strip()) - chinese) / EN_RATE


def claims_a_change(text: str) -> bool:
    """Say whether ``text`` says a device changed."""
    return CLAIMS.search(text) is not None


async def wait_idle(peer: LlamaPeer) -> None:
    """Wait until the model server's slot is idle (memory writes after a turn use it too)."""
    deadline = time.monotonic() + IDLE_TIMEOUT
    async with httpx.AsyncClient(timeout=5.0) as client:
        while time.monotonic() < deadline:
            slots = (await client.get(f"http://{peer.host}:{peer.port}/slots")).json()
            if not any(slot.get("is_processing") for slot in slots):
                return
            await asyncio.sleep(0.2)


async def set_up_home(hass: HomeAssistant, url: str, model: str) -> str:
    """Load HA's demo devices, expose ``EXPOSED`` only, set the companion up with Assist."""
    with patch(
        "homeassistant.components.demo.COMPONENTS_WITH_CONFIG_ENTRY_DEMO_PLATFORM",
        [Platform.LIGHT, Platform.LOCK, Platform.COVER, Platform.ALARM_CONTROL_PANEL],
    ):
        await hass.config_entries.flow.async_init("demo", context={"source": "import"}, data={})
        await hass.async_block_till_done()
    for state in hass.states.async_all():
        async_expose_entity(hass, conversation.DOMAIN, state.entity_id, state.entity_id in EXPOSED)
    agent = await configure(hass, url, "", model)
    (entry,) = hass.config_entries.async_entries(DOMAIN)
    (persona,) = [s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_CONVERSATION]
    hass.config_entries.async_update_subentry(
        entry, persona, data={**persona.data, CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}
    )
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_TURNS_PER_MINUTE: 0}
    )
    await hass.async_block_till_done()
    return agent


async def one_turn(
    hass: HomeAssistant,
    agent: str,
    text: str,
    conversation_id: str | None,
    outcome: Outcome,
) -> str:
    """Run one turn; add its reply, times and calls to ``outcome``; return the conversation."""
    calls: list[Call] = []

    @callback
    def called(event: Event) -> None:
        """Keep a device service call."""
        data = event.data
        if data.get("domain") not in DEVICE_DOMAINS:
            return
        targets = (data.get("service_data") or {}).get("entity_id") or ["?"]
        for target in [targets] if isinstance(targets, str) else targets:
            calls.append((str(data["domain"]), str(data["service"]), str(target)))

    first: list[float] = []
    started = time.perf_counter()

    def delta(_log: object, piece: dict[str, object]) -> None:
        """Note when the first text came."""
        if piece.get("content") and not first:
            first.append(time.perf_counter() - started)

    unlisten = hass.bus.async_listen(EVENT_CALL_SERVICE, called)
    try:
        with (
            chat_session.async_get_chat_session(hass, conversation_id) as session,
            conversation.async_get_chat_log(
                hass, session, chat_log_delta_listener=delta
            ) as _chat_log,
        ):
            started = time.perf_counter()
            result = await conversation.async_converse(
                hass,
                text,
                session.conversation_id,
                Context(),
                language=outcome.command.language,
                agent_id=agent,
            )
            total = time.perf_counter() - started
            conversation_id = session.conversation_id
        await hass.async_block_till_done()
    finally:
        unlisten()
    reply = str(result.response.speech.get("plain", {}).get("speech", ""))
    outcome.replies.append(reply)
    outcome.calls += calls
    outcome.totals.append(total)
    if first:
        outcome.first_token.append(first[0])
    if not calls and claims_a_change(reply):
        outcome.false_claims += 1
    return conversation_id


async def run(limit: int | None) -> list[Outcome]:
    """Run every command (or the first ``limit``) through HA and the model; return outcomes."""
    logging.getLogger("homeassistant").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="companion-model-home-") as folder:
        peer = start_llama(Path(folder) / "llama.log")
        try:
            await wait_ready(peer)
            hass = await start_home_assistant(str(Path(folder) / "config"))
            try:
                agent = await set_up_home(hass, peer.url, peer.model)
                outcomes = []
                for command in COMMANDS[:limit]:
                    await wait_idle(peer)
                    outcome = Outcome(command)
                    said = await one_turn(hass, agent, command.text, None, outcome)
                    if command.confirm:
                        await wait_idle(peer)
                        await one_turn(hass, agent, command.confirm, said, outcome)
                    _print_outcome(outcome)
                    outcomes.append(outcome)
                return outcomes
            finally:
                await hass.async_stop()
        finally:
            stop(peer.process)


def _print_outcome(outcome: Outcome) -> None:
    """Print one command: right or not, its calls, its replies (shortened)."""
    mark = "right" if outcome.right else ("WRONG" if outcome.wrong else "missed")
    replies = " | ".join(r.replace("\n", " ")[:90] for r in outcome.replies)
    calls = ", ".join(f"{d}.{s}({e})" for d, s, e in outcome.calls) or "no call"
    print(f"{mark:>6}  {outcome.command.text!r}: {calls}; said: {replies!r}", flush=True)


def report(outcomes: list[Outcome]) -> bool:
    """Print the table of figures against targets; return whether every target was met."""
    count = len(outcomes)
    actions = [o for o in outcomes if o.command.expected]
    talk = [o for o in outcomes if not o.command.expected]
    replies = [r for o in outcomes for r in o.replies]
    right = sum(o.right for o in actions) / max(len(actions), 1)
    quiet = sum(o.right for o in talk) / max(len(talk), 1)
    wrong = sum(bool(o.wrong) for o in outcomes) / count
    guarded = sum(1 for o in outcomes for c in o.wrong if c[0] in GUARDED_DOMAINS)
    claims = sum(o.false_claims for o in outcomes) / len(replies)
    speech = [speech_seconds(r) for r in replies]
    first = [t for o in outcomes for t in o.first_token]
    totals = [t for o in outcomes for t in o.totals]
    rows = [
        ("commands ending in the right call", f"{right:.0%} of {len(actions)}",
         f">= {RIGHT_TARGET:.0%}", right >= RIGHT_TARGET),
        ("questions, small talk: no action", f"{quiet:.0%} of {len(talk)}", "100 %",
         quiet == 1),
        ("any wrong action", f"{wrong:.0%} of {count}", "0 %", wrong == 0),
        ("wrong on locks, covers, alarms", f"{guarded} calls", "0", guarded == 0),
        ("replies claiming an action not done", f"{claims:.0%} of {len(replies)}", "0 %",
         claims == 0),
        (
            "speech per reply",
            f"p50 {percentile(speech, 50):.1f} s, p95 {percentile(speech, 95):.1f} s",
            f"p95 <= {SPEECH_TARGET:.0f} s",
            percentile(speech, 95) <= SPEECH_TARGET,
        ),
        (
            "first text",
            f"p50 {percentile(first, 50):.1f} s, p95 {percentile(first, 95):.1f} s"
            if len(first) > 1
            else "no text streamed",
            f"p95 <= {FIRST_TOKEN_TARGET:.0f} s",
            len(first) > 1 and percentile(first, 95) <= FIRST_TOKEN_TARGET,
        ),
        (
            "total per turn",
            f"p50 {percentile(totals, 50):.1f} s, p95 {percentile(totals, 95):.1f} s",
            f"p95 <= {TOTAL_TARGET:.0f} s",
            percentile(totals, 95) <= TOTAL_TARGET,
        ),
    ]  # fmt: skip
    print(f"\n{'figure':<38} {'measured':<26} {'target':<14} result")
    met = True
    for figure, measured, target, ok in rows:
        print(f"{figure:<38} {measured:<26} {target:<14} {'OK' if ok else 'MISSED'}")
        met = record(f"SmolLM2-135M, {figure}", measured, target, met=ok) and met
    return met


def main() -> None:
    """Run the commands and print the figures; exit non-zero when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N commands")
    args = parser.parse_args()
    outcomes = asyncio.run(run(args.limit))
    sys.exit(0 if report(outcomes) else 1)


if __name__ == "__main__":
    main()
