"""Who is speaking, through a real HA: Assist's pipeline, our Whisper STT entity, real voices.

Three people speak at satellites: Ada (Piper's voice, an enrolled adult), Ben (festival's
slt voice, an enrolled child) and a guest (festival's kal voice, never enrolled). Each
utterance goes through HA's own Assist pipeline with the satellite's id (as an ESPHome
satellite's does) into our speech to text (Whisper) and our persona; the scripted model
server shows what each turn was sent. Ada and Ben enrol from WAV files, as the
``enroll_voice`` action takes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from homeassistant.components import conversation
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
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry

from tests.ha.common import (
    SetupCompanion,
    add_person,
    ask,
    async_load,
    call,
    entity_id,
    persona,
    settled,
    speech_to_text,
    wyoming_voice,
)
from tests.ha.common.audio import metadata
from tests.ha.common.house import EXPOSED, UNLOCK, audit, flush_audit, state
from tests.ha.common.speakers import Devices
from tests.support.chat_requests import all_messages, last_user_message
from tests.support.festival import festival_say, write_wav
from tests.support.llm_script import Reply
from tests.support.llm_server import LLMServer
from tests.support.piper import PiperPeer
from tests.support.whisper import WhisperPeer, pieces, spoken

pytestmark = pytest.mark.usefixtures("demo_devices")

ENROL = (
    "Please turn on the lights in the kitchen.",
    "What is the weather going to be like tomorrow morning?",
    "Remind me to water the plants on Sunday evening.",
    "Play some quiet music in the living room.",
)
KITCHEN, BEDROOM = "assist_satellite.kitchen", "assist_satellite.bedroom"
"""The kitchen is the ``devices`` fixture's satellite that can start a conversation."""
ADA_SECRET = "Ada keeps the spare key under the blue flowerpot"
BEN_SECRET = "Ben hid the chocolate behind the bread bin"


class House:
    """The companion with a Whisper pipeline, and Ada, Ben and a guest who speak to it."""

    def __init__(
        self, hass: HomeAssistant, entry: MockConfigEntry, pipeline_id: str, piper: PiperPeer
    ) -> None:
        """Hold the entry, the pipeline, and Piper for Ada's voice."""
        self.hass = hass
        self.entry = entry
        self.pipeline_id = pipeline_id
        self.piper = piper
        self.agent = entity_id(hass, entry, "conversation")

    async def voice(self, who: str, text: str) -> bytes:
        """Return ``text`` in ``who``'s voice: Ada is Piper, Ben festival's slt, the guest kal."""
        if who == "ada":
            return await spoken(self.piper, text)
        return await self.hass.async_add_executor_job(
            festival_say, text, "slt" if who == "ben" else "kal"
        )

    async def hear(
        self, who: str, text: str, satellite: str, conversation_id: str | None = None
    ) -> dict[str, object]:
        """Have ``who`` say ``text`` at ``satellite``; return the intent stage's output."""
        audio = await self.voice(who, text)
        events: list[PipelineEvent] = []
        await async_pipeline_from_audio_stream(
            self.hass,
            context=Context(),
            event_callback=events.append,
            stt_metadata=metadata(""),
            stt_stream=pieces(audio, 640),
            pipeline_id=self.pipeline_id,
            conversation_id=conversation_id,
            satellite_id=satellite,
            end_stage=PipelineStage.INTENT,
        )
        errors = [e.data for e in events if e.type == PipelineEventType.ERROR]
        assert errors == []
        [output] = [
            (e.data or {})["intent_output"]
            for e in events
            if e.type == PipelineEventType.INTENT_END
        ]
        assert isinstance(output, dict)
        return output

    async def enrol(self, who: str, person: str, role: str, folder: Path) -> Mapping[str, object]:
        """Enrol ``who``'s voice for ``person`` from four WAV files in ``folder``."""
        files = []
        for n, sentence in enumerate(ENROL):
            pcm = await self.voice(who, sentence)
            files.append(str(write_wav(folder / f"{who}-{n}.wav", pcm)))
        return await call(
            self.hass, "enroll_voice", {"person": person, "role": role, "audio": files}
        )


@pytest.fixture
async def house(
    hass: HomeAssistant,
    setup_companion: SetupCompanion,
    piper: PiperPeer,
    whisper: WhisperPeer,
    tmp_path: Path,
) -> House:
    """Set up the demo lock, the companion with Piper and Whisper, and its pipeline."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    await async_load(hass, MockConfigEntry(domain="demo"))
    for exposed in EXPOSED:
        async_expose_entity(hass, conversation.DOMAIN, exposed, True)
    entry = await setup_companion(
        persona(llm_apis=[llm.LLM_API_ASSIST]),
        wyoming_voice(piper.host, piper.port, piper.voice),
        speech_to_text(whisper.host, whisper.port, whisper.model, languages=["en"]),
    )
    pipeline = async_get_pipeline(hass)  # the preferred one: satellites use it
    await async_update_pipeline(
        hass,
        pipeline,
        language="en",
        stt_engine=entity_id(hass, entry, "stt"),
        stt_language="en",
        tts_engine=entity_id(hass, entry, "tts"),
        tts_language="en_US",
        tts_voice=piper.voice,
        conversation_engine=entity_id(hass, entry, "conversation"),
        conversation_language="en",
        prefer_local_intents=False,
    )
    hass.config.allowlist_external_dirs.add(str(tmp_path))
    return House(hass, entry, pipeline.id, piper)


async def test_each_voice_reaches_its_own_memories_and_a_guest_is_the_household(
    hass: HomeAssistant, house: House, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Ada's and Ben's turns at one satellite get their own memories; a guest gets neither."""
    _ada_id, ada = await add_person(hass, "Ada")
    _ben_id, ben = await add_person(hass, "Ben")
    assert (await house.enrol("ada", ada, "adult", tmp_path))["samples"] == len(ENROL)
    assert (await house.enrol("ben", ben, "child", tmp_path))["samples"] == len(ENROL)
    for person, secret in ((ada, ADA_SECRET), (ben, BEN_SECRET)):
        await call(
            hass,
            "remember",
            {"persona": house.agent, "person": person, "text": secret, "topic": "hiding place"},
        )
    await settled(house.entry)
    question = "Where is the thing I hid?"
    sent: dict[str, str] = {}
    for who in ("ada", "ben", "guest"):
        llm_server.script(Reply.text("Let me think."))
        await house.hear(who, question, KITCHEN)
        sent[who] = last_user_message(llm_server)

    assert ADA_SECRET in sent["ada"]
    assert BEN_SECRET not in sent["ada"]
    assert BEN_SECRET in sent["ben"]
    assert ADA_SECRET not in sent["ben"]
    assert ADA_SECRET not in sent["guest"]
    assert BEN_SECRET not in sent["guest"]


async def test_a_conversation_begun_in_the_kitchen_goes_on_in_the_bedroom(
    hass: HomeAssistant, house: House, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Ada's next turn on another satellite, in another conversation, has her last exchange."""
    _ada_id, ada = await add_person(hass, "Ada")
    await house.enrol("ada", ada, "adult", tmp_path)
    llm_server.script(Reply.text("A lovely name for a cat."))
    await house.hear("ada", "My new cat is called Biscuit.", KITCHEN)
    llm_server.script(Reply.text("You told me about Biscuit."))
    again = "Tell me again what I said to you in the kitchen."  # a second or two: voices need it
    await house.hear("ada", again, BEDROOM)
    window = all_messages(llm_server).lower()  # Whisper writes "biscuit"
    llm_server.script(Reply.text("I don't know."))
    await house.hear("guest", again, BEDROOM)

    assert "my new cat is called biscuit" in window
    assert "biscuit" not in all_messages(llm_server).lower()


async def test_only_the_enrolled_adults_yes_unlocks_the_door_once(
    hass: HomeAssistant, house: House, llm_server: LLMServer, tmp_path: Path
) -> None:
    """A child's and a guest's "yes" leave the door locked; Ada's unlocks it, once."""
    _ada_id, ada = await add_person(hass, "Ada")
    _ben_id, ben = await add_person(hass, "Ben")
    await house.enrol("ada", ada, "adult", tmp_path)
    await house.enrol("ben", ben, "child", tmp_path)
    events: list[Mapping[str, object]] = []
    hass.bus.async_listen("companion_agent_confirmation", callback(lambda e: events.append(e.data)))
    llm_server.script(
        Reply.tool_calls(("call_unlock", "HassTurnOff", UNLOCK)),
        Reply.text("Shall I unlock the front door?"),
    )
    asked = await house.hear("ada", "Please unlock the front door for me.", KITCHEN)
    conversation_id = asked["conversation_id"]
    assert isinstance(conversation_id, str)
    assert state(hass, "lock.front_door") == "locked"
    assert [(e["status"], e["needs_adult"]) for e in events] == [("requested", True)]
    yes = "Yes, please unlock the front door now."

    child = await house.hear("ben", yes, KITCHEN, conversation_id)
    guest = await house.hear("guest", yes, KITCHEN, conversation_id)
    assert state(hass, "lock.front_door") == "locked"
    for refused in (child, guest):
        speech = refused["response"]["speech"]["plain"]["speech"]  # type: ignore[index]
        assert "voice" in speech.lower()
    llm_server.script(Reply.text("Done, the front door is unlocked."))
    await house.hear("ada", yes, KITCHEN, conversation_id)
    assert state(hass, "lock.front_door") == "unlocked"
    await hass.services.async_call("lock", "lock", {"entity_id": "lock.front_door"}, blocking=True)
    llm_server.script(Reply.text("It is already done."))
    await house.hear("ada", yes, KITCHEN, conversation_id)

    assert state(hass, "lock.front_door") == "locked"
    assert [e["status"] for e in events].count("executed") == 1
    await flush_audit(house.entry)
    runs = [r for r in audit(hass) if r["tool"] == "HassTurnOff" and r["outcome"] == "success"]
    assert len(runs) == 1
    assert runs[0]["decision"] == "approved"


async def test_a_person_enrols_at_a_satellite_by_saying_the_phrases_it_asks_for(
    hass: HomeAssistant, devices: Devices, house: House, llm_server: LLMServer
) -> None:
    """The satellite asks for four phrases, one at a time, listening after each; then knows her."""
    _ada_id, ada = await add_person(hass, "Ada")
    assert await call(hass, "enroll_voice", {"person": ada, "satellite": KITCHEN}) == {
        "status": "listening",
        "phrases": len(ENROL),
    }
    await hass.async_block_till_done()
    heard = devices[KITCHEN].heard
    assert heard.log[0] == "start_conversation"
    assert ENROL[0] in heard.extra[0]["message"]
    conversation_id: str | None = None
    for n, phrase in enumerate(ENROL):
        output = await house.hear("ada", phrase, KITCHEN, conversation_id)
        said = output["response"]["speech"]["plain"]["speech"]  # type: ignore[index]
        last = n == len(ENROL) - 1
        assert output["continue_conversation"] is not last
        assert ("Ada" in said) if last else (ENROL[n + 1] in said)
        conversation_id = str(output["conversation_id"])
    assert llm_server.requests == []  # no model hears an enrolment
    await call(
        hass,
        "remember",
        {"persona": house.agent, "person": ada, "text": ADA_SECRET, "topic": "hiding place"},
    )
    await settled(house.entry)
    llm_server.script(Reply.text("Under the flowerpot."))
    await house.hear("ada", "Where is the thing I hid?", KITCHEN)

    assert ADA_SECRET in last_user_message(llm_server)


async def test_that_wasnt_me_takes_a_misheard_turn_out_of_the_persons_memory(
    hass: HomeAssistant, house: House, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Ben's voiceprint was made from Ada's voice: her turn runs as Ben until she says so."""
    ben_id, ben = await add_person(hass, "Ben")
    await house.enrol("ada", ben, "adult", tmp_path)  # the mix-up: Ada's recordings for Ben
    llm_server.script(Reply.text("I'll keep that in mind."))
    told = await house.hear("ada", "My locker at the gym has the code four four two.", KITCHEN)
    conversation_id = str(told["conversation_id"])
    asked = len(llm_server.requests)

    taken = await house.hear("ada", "That wasn't me.", KITCHEN, conversation_id)
    speech = taken["response"]["speech"]["plain"]["speech"]  # type: ignore[index]
    assert "taken it out" in speech
    assert len(llm_server.requests) == asked  # no model hears "that wasn't me"
    llm_server.script(Reply.text("Nothing about a locker."))
    await ask(hass, house.agent, "What did I tell you about my locker?", user_id=ben_id)
    llm_server.script(Reply.text("The locker code is four four two."))
    await ask(hass, house.agent, "What is the locker code?")

    sent_as_ben, sent_as_household = (str(r["messages"]).lower() for r in llm_server.requests[-2:])
    assert "gym" not in sent_as_ben  # (Whisper may write the code as digits)
    assert "gym" in sent_as_household
    # The typed turn, in the task that ran the spoken ones, inherits no voice from them.
    assert "the person speaking is ben" not in sent_as_household
