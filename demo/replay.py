"""Demo replay: scripted conversations played by the local OpenAI-compatible server.

With no model configured the demo runs ``LLMServer`` with this responder, as the model
``demo-replay``. It is not a language model and says so (once per run, in its first chat
answer, and in the demo's log). What it answers depends on what it is sent, the way a small
model's answer would: the person's words pick a scene; tool results, held actions and the
``[memory context]`` block decide what it says next. So a memory is recalled only when Home
Assistant's companion really read it from memory, and "done" is said only when the tool
really ran.

Scenes: a light (on/off, by room), an unlock or garage door that waits for a spoken "yes",
"remember that …" (stored by the companion itself, before the model), a question answered
from what memory gave, a proactive line (a turn the home began) and a long story (to be
interrupted). Anything else gets a short list of what the replay can do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.llm_script import Reply, default_reply

MODEL = "demo-replay"
LABEL = "(Demo replay, scripted answers with no language model behind them.) "
STORY = (
    "Once upon a time, in a house at the end of a quiet lane, the lights learned to listen. "
    "Every evening they waited for the family to come home, and every evening they glowed a "
    "little warmer than the night before. One winter the front door began to hum a song of "
    "its own, and the garage door, who was shy, joined in very softly. By spring the whole "
    "house was singing, and nobody could remember how it had ever been quiet."
)
STORY_DELAY = 0.12
"""Seconds between the story's chunks: long enough to speak over it."""
PROACTIVE_LINE = (
    "[smile] Good evening! I noticed the kitchen lights are still on. Shall I turn them off?"
)
CONTEXT = re.compile(
    r"\[memory context (?P<id>\w+)\][^\n]*\n(?P<items>.*?)\n?\[/memory context (?P=id)\]\n?",
    re.DOTALL,
)
PROACTIVE = "[Nobody has spoken"
LIGHTS = {
    "kitchen": "Kitchen Lights",
    "bed": "Bed Light",
    "ceiling": "Ceiling Lights",
    "office": "Office RGBW Lights",
    "living": "Living Room RGBWW Lights",
    "entrance": "Entrance Color + White Lights",
}
HELD = {
    "front door": ("HassTurnOff", "Front Door", "lock", "unlock the front door"),
    "garage": ("HassTurnOn", "Garage Door", "cover", "open the garage door"),
}
MAX_LOG_BYTES = 1_000_000
QUESTION_WORDS = ("what", "when", "where", "who", "which", "do you remember", "did i", "?")
STOP_WORDS = {"the", "a", "an", "do", "does", "is", "are", "my", "i", "you", "what", "when"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What one chat request says: the person's words, memory items, tool results."""

    words: str
    memory: tuple[str, ...]
    tool_results: tuple[tuple[str, str], ...]
    """Each tool's name and what it answered, after the person's last words."""
    tools: frozenset[str]
    proactive: bool


@dataclass(slots=True)
class DemoReplay:
    """The replay's responders; each chat request is noted in ``log`` (JSON lines)."""

    log: Path | None = None
    labelled: bool = False

    def respond(self, body: dict[str, object], number: int) -> Reply:
        """Answer one chat request of a scene; the first answer of a run says what this is."""
        request = read_request(body)
        self._note(request)
        text, reply = scene(request, body, number)
        if reply is not None:
            return reply
        if not self.labelled and not request.proactive:
            self.labelled = True
            text = LABEL + text
        delay = STORY_DELAY if text.endswith(STORY) else 0.01
        return Reply.text(text, delay=delay)

    def extract(self, body: dict[str, object], number: int) -> Reply:
        """Answer the memory model: a fact about family, places or liking; else nothing."""
        exchange = _exchange(body)
        person = str(exchange.get("person", ""))
        about = re.search(r"\b(my|i)\b.*\b(is|are|lives?|likes?|loves?)\b", person, re.I)
        facts = [person.strip()] if about and "?" not in person else []
        answer = {"facts": facts, "conclusions": [], "entities": [], "relations": []}
        return Reply.text(json.dumps(answer))

    def _note(self, request: Request) -> None:
        """Append what the model was given to the log (bounded: started again when full)."""
        if self.log is None:
            return
        line = json.dumps({"words": request.words, "memory": list(request.memory)})
        if self.log.exists() and self.log.stat().st_size > MAX_LOG_BYTES:
            self.log.unlink()
        with self.log.open("a", encoding="utf-8") as out:
            out.write(line + "\n")


def scene(request: Request, body: dict[str, object], number: int) -> tuple[str, Reply | None]:
    """Return the scene's text, or a whole reply (a tool call) when the scene calls a tool."""
    words = request.words.lower()
    if request.proactive:
        return (STORY if "story" in words else PROACTIVE_LINE), None
    if request.tool_results:
        return _after_tool(*request.tool_results[-1]), None
    if answered := _answered_confirmation(request.memory):
        return answered, None
    for key, (tool, name, domain, _) in HELD.items():
        if key in words and re.search(r"\b(unlock|open)\b", words):
            return "", _call(request, tool, name, domain, number)
    if re.search(r"\b(light|lights|lamp)\b", words) and (on := _switch(words)) is not None:
        room = next((name for key, name in LIGHTS.items() if key in words), "Kitchen Lights")
        return "", _call(request, "HassTurnOn" if on else "HassTurnOff", room, "light", number)
    if match := re.search(r"\bremember (?:that )?(.+)", request.words, re.I):
        return f"[nod] I will remember that {match.group(1).rstrip('.!')}.", None
    if "story" in words:
        return STORY, None
    if any(word in words for word in QUESTION_WORDS) and request.memory:
        return f"[nod] You told me that {_recalled(_best(request.memory, words))}.", None
    if re.search(r"\bmy\b", words):
        return "[nod] Noted.", None
    if _is_time(words):
        return "", default_reply(body, number)
    return (
        "In this replay I can turn a light on or off, unlock the front door (after your yes), "
        "remember what you tell me and recall it later, and tell a story."
    ), None


def read_request(body: dict[str, object]) -> Request:
    """Read the person's last words, the memory block, and the tool results after them."""
    messages = [m for m in _list(body.get("messages")) if isinstance(m, dict)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    text = _text(messages[last_user]) if last_user >= 0 else ""
    memory: tuple[str, ...] = ()
    if match := CONTEXT.search(text):
        memory = tuple(line.strip() for line in match["items"].splitlines() if line.strip())
        text = text[match.end() :]
    names = {
        str(call.get("id")): str(call.get("function", {}).get("name"))
        for m in messages[last_user + 1 :]
        for call in _list(m.get("tool_calls"))
        if isinstance(call, dict)
    }
    results = tuple(
        (names.get(str(m.get("tool_call_id")), ""), _text(m))
        for m in messages[last_user + 1 :]
        if m.get("role") == "tool"
    )
    tools = frozenset(
        str(function.get("name"))
        for tool in _list(body.get("tools"))
        if isinstance(tool, dict) and isinstance(function := tool.get("function"), dict)
    )
    return Request(
        words=text.strip(),
        memory=memory,
        tool_results=results,
        tools=tools,
        proactive=text.lstrip().startswith(PROACTIVE),
    )


def _call(request: Request, tool: str, name: str, domain: str, number: int) -> Reply:
    """Call ``tool`` on the entity ``name``; without that tool, say it is not offered."""
    if tool not in request.tools:
        return Reply.text(
            f"I can't reach {name} from here: Home Assistant does not offer me {tool}. "
            "Is it exposed to Assist?"
        )
    arguments = json.dumps({"name": name, "domain": [domain]})
    return Reply.tool_calls((f"call_demo_{number}", tool, arguments), split=2)


def _after_tool(tool: str, result: str) -> str:
    """Say what a tool result means: held for a yes, done (naming what), or failed."""
    data = _json(result)
    if data.get("status") == "pending_confirmation":
        return "[raise_eyebrow] That one needs your say-so first. Shall I? Please say yes or no."
    if data.get("success") is False or "error" in data:
        return "[sigh] I'm afraid that did not work."
    done = _json(str(data.get("result", ""))) or data
    names = [
        str(target.get("name"))
        for target in _list((done.get("data") or {}).get("success"))
        if isinstance(target, dict)
    ]
    if names and tool in ("HassTurnOn", "HassTurnOff"):
        state = "on" if tool == "HassTurnOn" else "off"
        return f"[smile] Very good, the {' and '.join(names)} {_are(names)} {state} now."
    return "[nod] Done."


def _are(names: list[str]) -> str:
    """Return the verb for ``names``: "are" for several or a plural name, else "is"."""
    return "are" if len(names) > 1 or names[0].endswith("s") else "is"


def _json(text: str) -> dict[str, Any]:
    """Return ``text`` as a JSON object, or an empty one."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _answered_confirmation(memory: tuple[str, ...]) -> str:
    """Say how a held action ended, from the confirmations' notice in the memory block."""
    for line in memory:
        if not line.startswith("(confirmations)"):
            continue
        notice = _json(line.removeprefix("(confirmations)").strip())
        if notice.get("status") != "executed":
            return "[nod] Very well, I have left it as it was."
        targets = _list((notice.get("action") or {}).get("targets"))
        target = targets[0] if targets and isinstance(targets[0], dict) else {}
        done = {"unlock": "unlocked", "open": "open"}.get(str(target.get("action")), "done")
        return f"[bow] The {target.get('name', 'door')} is {done} now."
    return ""


def _switch(words: str) -> bool | None:
    """Say whether the words ask to switch on (True), off (False), or neither."""
    if re.search(r"\b(on|up)\b", words):
        return True
    if re.search(r"\b(off|out)\b", words):
        return False
    return None


def _is_time(words: str) -> bool:
    """Say whether the words ask for the time or the date."""
    return any(word in words for word in ("time", "date", "clock"))


def _best(memory: tuple[str, ...], words: str) -> str:
    """Return the memory item that shares most words with the question, without its source."""
    asked = set(re.findall(r"\w+", words)) - STOP_WORDS

    def shared(line: str) -> int:
        """Count the question's words in ``line``."""
        return len(asked & set(re.findall(r"\w+", line.lower())))

    best = max(memory, key=shared)
    return re.sub(r"^\([^)]*\)\s*", "", best)


def _recalled(item: str) -> str:
    """Return what a memory item says: a conclusion's quoted text, without "remember that"."""
    quoted = re.findall(r'"([^"]+)"', item)
    text = quoted[-1] if quoted else item
    text = re.sub(r"^(please )?remember (that )?", "", text.strip(), flags=re.I)
    return text.rstrip(".!")


def _exchange(body: dict[str, object]) -> dict[str, object]:
    """Return the exchange a memory request carries (its last user message's JSON)."""
    messages = [m for m in _list(body.get("messages")) if isinstance(m, dict)]
    for message in reversed(messages):
        if message.get("role") == "user":
            try:
                value = json.loads(_text(message))
            except ValueError:
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def _text(message: dict[object, object]) -> str:
    """Return a message's text (a string, or the text of its parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = [p.get("text") for p in _list(content) if isinstance(p, dict)]
    return "".join(part for part in parts if isinstance(part, str))


def _list(value: object) -> list[object]:
    """Return ``value`` if it is a list, else an empty one."""
    return list(value) if isinstance(value, list) else []
