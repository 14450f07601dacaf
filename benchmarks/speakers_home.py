"""Who is speaking, end to end: the share of satellite turns that reach the right person's memories.

Run: ``.venv/bin/python benchmarks/speakers_home.py`` (after ``script/peers`` and
``script/peers voices``). A real Home Assistant core boots in process (``ha_core.py``) with
Assist and the companion configured through its flows: a persona with the embedded memory,
speech to text on the real wyoming-faster-whisper (base, from ``.peers/whisper``), and the
preferred Assist pipeline on our speech to text and our agent, ``prefer_local_intents`` off.
The tests' scripted model server answers every request with the same short reply.

The people are the synthetic voices of ``.peers/voices`` (16 household sentences each):
``PEOPLE`` (the English voices: Piper's joe, festival's slt, kal and ked) each get an HA
user and ``person``, enrol through ``enroll_voice`` from their first ``ENROL`` recordings, and
have one distinct fact remembered for them (``remember`` with ``person``). Then every person
says their other recordings through HA's pipeline (``async_pipeline_from_audio_stream`` with a
satellite id, to the intent stage), alternating between two satellites; ``GUESTS`` (festival
voices of other languages reading English, never enrolled) say ``--guest-turns`` each.
Before anyone enrols, the first ``--baseline`` heard recordings of each person go through
the same pipeline once: the same audio with no voice to match, for the timings.

Whose turn a model request was: the persons whose fact it carries, and the person the
briefing names ("The person speaking is <name>."). Figures, against targets:

- own: the share of enrolled people's turns whose request carries their own fact (≥ 90 %);
- someone else's: the share carrying another person's fact or name (0 %);
- guests: the share of never-enrolled voices' turns carrying anyone's fact or name (0 %);
- wait: from the end of the audio (the last piece the pipeline took) to the transcript
  (``stt-end``), to the agent's start (``intent-start``) and to the model's request, with
  voices enrolled and, for the same recordings, with none (before enrolment, and again after
  ``forget_voice``); the identification runs while Whisper transcribes, so the median
  difference per recording, its median and its p95, must stay within ``ADDED_TARGET_MS``
  (a shared machine's noise).
  The voice match alone (embedding and identifying, timed around the entry's
  ``HouseholdVoices.async_hear``) and the machine's load average are printed beside it.

Whisper's hearing of each voice is printed too (sentences heard word for word), as a guide
to which other voices are intelligible enough to enrol.

Synthetic voices are far easier than people: the same text in a voice that never tires, no
room, no microphone, no cold. These figures are an upper bound on what a household gets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from homeassistant.components.assist_pipeline import (
    PipelineEvent,
    PipelineEventType,
    async_pipeline_from_audio_stream,
)
from homeassistant.components.assist_pipeline.pipeline import (
    PipelineStage,
    async_get_pipeline,
    async_update_pipeline,
)
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component

from benchmarks.figures import percentile, record
from benchmarks.ha_core import configure, start_home_assistant
from benchmarks.stt import wait_for
from custom_components.companion_agent.const import (
    CONF_LANGUAGES,
    CONF_MODEL,
    CONF_TURNS_PER_MINUTE,
    DOMAIN,
    SUBENTRY_STT,
)
from custom_components.companion_agent.engine.speech import WyomingSTT
from custom_components.companion_agent.runtime import CompanionRuntime
from custom_components.companion_agent.voice.voiceprints import HeardVoice
from tests.ha.common import add_person, call
from tests.ha.common.audio import metadata
from tests.support.chat_requests import messages
from tests.support.ffmpeg import ffmpeg_on_path
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.peer_process import free_port
from tests.support.voices import VOICES, pcm_of, utterances
from tests.support.whisper import (
    LEAD_SILENCE,
    RATE,
    TAIL_SILENCE,
    WHISPER,
    pieces,
    whisper_command,
    words,
)

PEOPLE = {
    "joe": ("Joe", "Joe keeps the spare key under the blue flowerpot"),
    "slt": ("Sally", "Sally's bicycle lock code is four one seven two"),
    "kal": ("Karl", "Karl's passport is in the green folder in the attic"),
    "ked": ("Kenneth", "Kenneth's dentist appointment is on Thursday at noon"),
}
"""Each enrolled voice: the person's name and the one fact remembered for them."""
GUESTS = ("ona", "lp", "mv", "nsh")
"""Never-enrolled voices: festival's Catalan, Italian, Finnish and Russian reading English."""
SENTENCES = (
    "Turn on the kitchen lights.",
    "Set a timer for ten minutes.",
    "What is the weather like tomorrow morning?",
    "Play some relaxing music in the living room.",
    "Lock the front door and close the garage.",
    "Remind me to call my mother at six o'clock.",
    "Turn the thermostat down to nineteen degrees.",
    "Is the washing machine finished yet?",
    "Add milk, eggs and bread to the shopping list.",
    "What time does the pharmacy open on Sunday?",
    "Open the blinds in the bedroom please.",
    "How much energy did the solar panels produce yesterday?",
    "Dim the lights in the dining room to thirty percent.",
    "Did anyone ring the doorbell while I was away?",
    "Wake me up at half past seven tomorrow.",
    "Goodnight, turn everything off.",
)
"""What ``.peers/voices/<speaker>/NN.wav`` says (NN from 01), as script/peers made them."""
ENROL = 4
SATELLITES = ("assist_satellite.kitchen", "assist_satellite.bedroom")
REPLY = "All right."
OWN_TARGET = 90.0
ADDED_TARGET_MS = 200.0
TIMEOUT = 120.0


@dataclass(slots=True)
class Heard:
    """One turn: who spoke, what they said, what reached the model, and when each step came."""

    voice: str
    sentence: str
    satellite: str
    transcript: str = ""
    error: str = ""
    facts: set[str] = field(default_factory=set)
    """The voices whose fact the turn's model requests carried."""
    named: set[str] = field(default_factory=set)
    """The voices whose person the turn's briefing named."""
    requests: int = 0
    to_transcript: float = 0.0
    to_agent: float = 0.0
    to_model: float = 0.0
    """Seconds from the end of the audio to the transcript, the agent's start, the request."""
    audio: float = 0.0
    """Seconds of audio sent."""
    matching: float = 0.0
    """Seconds the voice's embedding and match took (0: nothing enrolled, none ran)."""


class Home:
    """The running HA, its preferred pipeline and the model server."""

    def __init__(
        self, hass: HomeAssistant, server: LLMServer, pipeline_id: str, agent: str
    ) -> None:
        """Hold what a turn needs."""
        self.hass = hass
        self.server = server
        self.pipeline_id = pipeline_id
        self.agent = agent
        self.matches: list[float] = []
        """How long each voice match took, in order."""

    def time_matches(self) -> None:
        """Note how long each voice match of the entry's household voices takes."""
        (entry,) = self.hass.config_entries.async_entries(DOMAIN)
        runtime: CompanionRuntime = entry.runtime_data
        voices = runtime.voices
        hear = voices.async_hear

        async def timed(pcm: bytes) -> HeardVoice:
            """Match ``pcm`` as the entry would; note how long it took."""
            started = time.perf_counter()
            try:
                return await hear(pcm)
            finally:
                self.matches.append(time.perf_counter() - started)

        voices.async_hear = timed  # type: ignore[method-assign]

    async def hear(self, voice: str, recording: Path, satellite: str) -> Heard:
        """Have ``voice`` say ``recording`` at ``satellite`` through the pipeline; note it all."""
        pcm, rate = pcm_of(recording)
        if rate != RATE:
            raise SystemExit(f"speakers_home: {recording} is not {RATE} Hz")
        audio = bytes(int(RATE * 2 * LEAD_SILENCE)) + pcm + bytes(int(RATE * 2 * TAIL_SILENCE))
        heard = Heard(voice, SENTENCES[int(recording.stem) - 1], satellite)
        heard.audio = len(audio) / (RATE * 2)
        taken: list[float] = []
        times: dict[PipelineEventType, float] = {}
        events: list[PipelineEvent] = []
        asked: list[float] = []

        def noted(event: PipelineEvent) -> None:
            """Keep the event and when it came."""
            times.setdefault(event.type, time.perf_counter())
            events.append(event)

        async def stream() -> AsyncIterator[bytes]:
            """Yield the audio as a microphone stream; note when each piece was taken."""
            async for piece in pieces(audio, 640):
                taken.append(time.perf_counter())
                yield piece

        self.server.on_chat = lambda: asked.append(time.perf_counter())
        before, matched = len(self.server.requests), len(self.matches)
        async with asyncio.timeout(TIMEOUT):
            await async_pipeline_from_audio_stream(
                self.hass,
                context=Context(),
                event_callback=noted,
                stt_metadata=metadata(""),
                stt_stream=stream(),
                pipeline_id=self.pipeline_id,
                satellite_id=satellite,
                end_stage=PipelineStage.INTENT,
            )
        self.server.on_chat = None
        for event in events:
            data = event.data or {}
            if event.type == PipelineEventType.ERROR:
                heard.error = str(data.get("code", "error"))
            elif event.type == PipelineEventType.STT_END:
                heard.transcript = str((data.get("stt_output") or {}).get("text", ""))
        ended = taken[-1]
        heard.to_transcript = times.get(PipelineEventType.STT_END, ended) - ended
        heard.to_agent = times.get(PipelineEventType.INTENT_START, ended) - ended
        heard.to_model = (asked[0] - ended) if asked else 0.0
        heard.matching = sum(self.matches[matched:])
        for body in self.server.requests[before:]:
            text = "\n".join(
                c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)
                for c in (m.get("content") for m in messages(body))
            )
            heard.requests += 1
            for person, (name, fact) in PEOPLE.items():
                if fact in text:
                    heard.facts.add(person)
                if f"The person speaking is {name}." in text:
                    heard.named.add(person)
        return heard


def start_whisper(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start wyoming-faster-whisper on a free port; return it and the port."""
    if not (WHISPER / "model" / "model.bin").exists():
        raise SystemExit(f"speakers_home: no Whisper in {WHISPER}: run script/peers")
    port = free_port(sys.executable)
    with (folder / "whisper.log").open("wb") as log:
        process = subprocess.Popen(whisper_command(port), stdout=log, stderr=log)
    return process, port


async def set_up(hass: HomeAssistant, server: LLMServer, whisper_port: int) -> Home:
    """Configure the companion, its speech to text and the preferred pipeline, by their flows."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    agent = await configure(hass, server.url, "", "test-model")
    (entry,) = hass.config_entries.async_entries(DOMAIN)
    # Many turns a minute: no rate limit (the entry reloads).
    hass.config_entries.async_update_entry(
        entry, options={**entry.options, CONF_TURNS_PER_MINUTE: 0}
    )
    await hass.async_block_till_done()
    info = await WyomingSTT("127.0.0.1", whisper_port).describe()
    flows = hass.config_entries.subentries
    step = await flows.async_init((entry.entry_id, SUBENTRY_STT), context={"source": "user"})
    step = await flows.async_configure(
        step["flow_id"], {CONF_HOST: "127.0.0.1", CONF_PORT: whisper_port}
    )
    step = await flows.async_configure(
        step["flow_id"], {CONF_MODEL: info.installed[0].name, CONF_LANGUAGES: ["en"]}
    )
    if step["type"] != "create_entry":
        raise SystemExit(f"speakers_home: the speech to text flow failed: {step}")
    await hass.async_block_till_done()
    (stt,) = [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == "stt"
    ]
    pipeline = async_get_pipeline(hass)  # the preferred one: satellites use it
    await async_update_pipeline(
        hass,
        pipeline,
        language="en",
        stt_engine=stt,
        stt_language="en",
        conversation_engine=agent,
        conversation_language="en",
        prefer_local_intents=False,
    )
    hass.config.allowlist_external_dirs.add(str(VOICES.resolve()))
    return Home(hass, server, pipeline.id, agent)


async def enrol(home: Home) -> None:
    """Enrol each person from their first recordings and remember their fact."""
    (entry,) = home.hass.config_entries.async_entries(DOMAIN)
    for voice, (name, fact) in PEOPLE.items():
        _user, person = await add_person(home.hass, name)
        files = [str(p.resolve()) for p in utterances(voice, VOICES)[:ENROL]]
        answer = await call(
            home.hass, "enroll_voice", {"person": person, "role": "adult", "audio": files}
        )
        if answer.get("samples") != ENROL:
            raise SystemExit(f"speakers_home: {voice} enrolled with {answer}")
        await call(
            home.hass,
            "remember",
            {"persona": home.agent, "person": person, "text": fact, "topic": "household"},
        )
    runtime: CompanionRuntime = entry.runtime_data
    memory = runtime.engine.memory
    if memory is None:
        raise SystemExit("speakers_home: the persona has no memory")
    await memory.wait_idle(30)


async def unenrolled_turns(home: Home, count: int) -> list[Heard]:
    """Have each person say their first ``count`` heard recordings with no voice enrolled."""
    heard = []
    for voice in PEOPLE:
        for n, recording in enumerate(utterances(voice, VOICES)[ENROL:][:count]):
            heard.append(await home.hear(voice, recording, SATELLITES[n % 2]))
    return heard


def share(part: int, whole: int) -> float:
    """Return ``part`` of ``whole`` in percent (0 of nothing)."""
    return 100 * part / whole if whole else 0.0


def seconds(values: list[float]) -> str:
    """Return the median and p95 of seconds, in ms."""
    ms = [v * 1000 for v in values]
    p95 = percentile(ms, 95) if len(ms) > 1 else ms[0]
    return f"p50 {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms"


def report(
    baselines: tuple[list[Heard], list[Heard]], turns: list[Heard], guests: list[Heard]
) -> bool:
    """Print every figure against its target; return whether all are met."""
    lengths = [t.audio for t in (*turns, *guests)]
    print(
        f"{len(lengths)} turns of {min(lengths):.1f}-{max(lengths):.1f} s of audio (mean "
        f"{statistics.mean(lengths):.1f} s, {LEAD_SILENCE + TAIL_SILENCE} s of it silence); "
        f"load average (1 min) {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n"
    )
    print("Synthetic voices are far easier to tell apart than people: the same text, no room,")
    print("no microphone, no cold. Read these shares as an upper bound for a real household.\n")
    print("## Whisper's hearing (sentences word for word)")
    for voice in (*PEOPLE, *GUESTS):
        said = [t for t in (*turns, *guests) if t.voice == voice]
        if said:
            right = sum(words(t.transcript) == words(t.sentence) for t in said)
            print(f"   {voice:>6}: {right} of {len(said)}")
    own = sum(t.voice in t.facts for t in turns)
    named = sum(t.voice in t.named for t in turns)
    other = sum(bool((t.facts | t.named) - {t.voice}) for t in turns)
    guest = sum(bool(t.facts | t.named) for t in guests)
    failed = [t for t in (*turns, *guests) if t.error or t.requests == 0]
    print(f"\n## {len(PEOPLE)} people enrolled ({ENROL} recordings each), {len(turns)} turns")
    for satellite in SATELLITES:
        at = [t for t in turns if t.satellite == satellite]
        reached = share(sum(t.voice in t.facts for t in at), len(at))
        print(f"   {satellite}: own memories {reached:.1f} % of {len(at)}")
    for voice, (name, _fact) in PEOPLE.items():
        theirs = [t for t in turns if t.voice == voice]
        print(
            f"   {name:>8} ({voice}): own {sum(voice in t.facts for t in theirs)} of "
            f"{len(theirs)}, named {sum(voice in t.named for t in theirs)}, someone else's "
            f"{sum(bool((t.facts | t.named) - {voice}) for t in theirs)}"
        )
    print(f"   briefing named the right person: {share(named, len(turns)):.1f} %")
    print(f"   turns with a pipeline error or no model request: {len(failed)}")
    for t in failed:
        print(f"     {t.voice} {t.sentence!r}: {t.error or 'no request'} ({t.transcript!r})")
    own_share, other_share = share(own, len(turns)), share(other, len(turns))
    guest_share = share(guest, len(guests))
    print(f"   own memories: {own_share:.1f} %   someone else's: {other_share:.1f} %")
    print(f"   never-enrolled voices ({len(guests)} turns): reached anyone's {guest_share:.1f} %")
    ok = record(
        "speakers home own memories",
        f"{own_share:.1f} % of {len(turns)} turns",
        f">= {OWN_TARGET} %",
        met=own_share >= OWN_TARGET,
    )
    ok &= record(
        "speakers home someone else's memories",
        f"{other_share:.1f} %",
        "0 %",
        met=other == 0,
    )
    ok &= record(
        "speakers home guests reached anyone's memories",
        f"{guest_share:.1f} % of {len(guests)} turns",
        "0 %",
        met=guest == 0,
    )
    same = {(t.voice, t.sentence): t for t in turns}
    before, after = baselines
    pairs = [
        (b, a, same[(b.voice, b.sentence)])
        for b, a in zip(before, after, strict=True)
        if (b.voice, b.sentence) in same
    ]
    print(
        f"\n## wait after the end of the audio ({len(pairs)} recordings: no voice enrolled, "
        "before enrolment and after forget_voice; then the same with 4 enrolled)"
    )
    for label, stage in (
        ("transcript", "to_transcript"),
        ("agent start", "to_agent"),
        ("model request", "to_model"),
    ):
        first = [getattr(b, stage) for b, _, _ in pairs]
        last = [getattr(a, stage) for _, a, _ in pairs]
        some = [getattr(t, stage) for _, _, t in pairs]
        print(
            f"   {label:>13}: none before {seconds(first)}; none after {seconds(last)}; "
            f"enrolled {seconds(some)}"
        )
    print(
        f"   the voice match alone (embed + identify), all {len(turns)} turns: "
        f"{seconds([t.matching for t in turns])}"
    )
    slowest = sorted(enumerate(turns, 1), key=lambda n_t: -n_t[1].matching)[:5]
    print(
        "   slowest matches (turn number after enrolment, voice, seconds of audio): "
        + ", ".join(
            f"#{n} {t.voice} {t.audio:.1f} s: {t.matching * 1000:.0f} ms" for n, t in slowest
        )
    )
    added = [(t.to_agent - (b.to_agent + a.to_agent) / 2) * 1000 for b, a, t in pairs]
    middle, tail = statistics.median(added), percentile(added, 95)
    print(
        f"   identification added to the agent's start, per recording (enrolled minus the "
        f"mean of the two runs with none): median {middle:+.0f} ms, p95 {tail:+.0f} ms"
    )
    for name, value in (("median", middle), ("p95", tail)):
        ok &= record(
            f"speakers home identification added wait, {name}",
            f"{value:+.0f} ms (end of audio to the agent's start)",
            f"<= {ADDED_TARGET_MS:.0f} ms",
            met=value <= ADDED_TARGET_MS,
        )
    return ok


async def bench(args: argparse.Namespace, folder: Path) -> bool:
    """Start Whisper, the model server and HA; run the turns; report."""
    for voice in (*PEOPLE, *GUESTS):
        if len(utterances(voice, VOICES)) < ENROL + 2:
            raise SystemExit(f"speakers_home: no voice {voice} in {VOICES}: script/peers voices")
    whisper, port = start_whisper(folder)
    try:
        await wait_for(port, whisper)
        async with LLMServer(responder=lambda _body, _n: Reply.text(REPLY)) as server:
            hass = await start_home_assistant(str(folder / "config"))
            try:
                home = await set_up(hass, server, port)
                before = await unenrolled_turns(home, args.baseline)
                await enrol(home)
                home.time_matches()
                turns = []
                for voice in PEOPLE:
                    for n, recording in enumerate(utterances(voice, VOICES)[ENROL:]):
                        turns.append(await home.hear(voice, recording, SATELLITES[n % 2]))
                guests = []
                for voice in GUESTS:
                    heard = utterances(voice, VOICES)[ENROL:]
                    for n, recording in enumerate(heard[: args.guest_turns]):
                        guests.append(await home.hear(voice, recording, SATELLITES[n % 2]))
                for name, _fact in PEOPLE.values():
                    await call(home.hass, "forget_voice", {"person": f"person.{name.lower()}"})
                after = await unenrolled_turns(home, args.baseline)
                return report((before, after), turns, guests)
            finally:
                await hass.async_stop()
    finally:
        whisper.terminate()
        whisper.wait(10)


def main() -> None:
    """Parse the options, run the benchmark, exit non-zero on a missed target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=int, default=4, help="recordings a person, no voices")
    parser.add_argument("--guest-turns", type=int, default=6, help="turns a never-enrolled voice")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    if not VOICES.is_dir():
        raise SystemExit(f"speakers_home: no test voices in {VOICES}: run script/peers voices")
    with ffmpeg_on_path(), tempfile.TemporaryDirectory(prefix="speakers-home-") as folder:
        (Path(folder) / "config").mkdir()
        ok = asyncio.run(bench(args, Path(folder)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
