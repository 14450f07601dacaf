"""Secret redaction for everything that leaves the engine as a record: audit, logs, errors, URLs.

It sits beside ``chars`` at the bottom of the engine: the tools' errors, the stored turns and
the audit log all pass through it, and the host masks URLs with it.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections.abc import Collection
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .json_types import JSONObject, JSONValue

REDACTED = "***"

_SECRET_WORDS = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "cookie",
        "credential",
        "credentials",
        "otp",
        "passcode",
        "passphrase",
        "passwd",
        "password",
        "pin",
        "pincode",
        "psk",
        "pwd",
        "secret",
        "signature",
        "token",
    }
)
_SECRET_PAIRS = frozenset(
    {("api", "key"), ("private", "key"), ("access", "key"), ("x", "api")}
    | {(word, "key") for word in ("wifi", "fi", "wlan", "wpa", "wpa2", "network", "security")}
    | {(word, "key") for word in ("shared", "encryption", "license", "master", "recovery")}
    | {(word, "code") for word in ("lock", "door", "alarm", "access", "security", "pass", "pin")}
    | {(word, "code") for word in ("auth", "verification", "login", "entry", "user", "wifi", "fi")}
    | {(word, "code") for word in ("recovery", "backup", "gate", "garage", "safe")}
)
_SECRET_ALONE = frozenset({"code", "codes"})
_URL_CREDENTIALS = re.compile(r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://)[^\s/@。！？；]+@")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PARTS = re.compile(r"[^a-z0-9]+")
_SECRET_TEXT = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?:bearer|basic)[ \t]+[A-Za-z0-9._~+/=-]{8,}"
    r"|(?<![A-Za-z0-9_])sk-[A-Za-z0-9_-]{12,}"
    r"|(?<![A-Za-z0-9_])eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}"  # a JWT
    r"|(?<![A-Za-z0-9_])(?:gh[pousr]_|github_pat_|hf_|xox[abprs]-|glpat-)[A-Za-z0-9_-]{16,}"
    r"|(?<![A-Za-z0-9_])AKIA[0-9A-Z]{16}(?![A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9_])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"
    r"|(?<![0-9A-Za-z])[0-9a-fA-F]{32,}(?![0-9A-Za-z])"  # a hex key
)
_CJK_SECRET_NAMES = (
    "密码|密碼|口令|密钥|密鑰|验证码|驗證碼|安全码|開鎖碼|开锁码|门锁码|通行码|授权码|访问码|令牌|"
    "PIN码|PIN碼|pin码"
)
_LABEL = (
    r"(?:(?<![A-Za-z0-9_])(?P<open>[*_`~]{0,3})"
    r"(?P<name>(?:[A-Za-z][A-Za-z0-9_-]{0,40}[ \t]{1,4})?"
    r"[A-Za-z](?:[A-Za-z0-9_.-]{0,40}[A-Za-z0-9_-])?)"
    rf"|(?P<cjk>{_CJK_SECRET_NAMES}))"
    r"(?P<close>[\"'`*_~]{0,3})"
    r"(?P<sep>[ \t]{0,4}[=:：|]"
    r"|[ \t]{0,4}(?P<said>(?<=[ \t])(?i:is|was)(?![A-Za-z])|是|为|為)(?:[ \t]{0,4}[:：])?)"
    r"[*_`~]{0,3}"
    r"[ \t]{0,16}(?:\n[ \t]{0,16}(?:```[A-Za-z]{0,12}|[-*+>][ \t]{1,4})?){0,3}"
)
"""A secret's label up to where its value begins: ``**Wi-Fi password:** ``, ``api_key = ``,
``the PIN is ``, ``密码是``; its value may start up to three line breaks later."""
_NOT_A_VALUE = (
    r"(?![*_`~]{0,3}[A-Za-z](?:[A-Za-z0-9_.-]{0,80}[A-Za-z0-9_-])?"
    r"[\"'`*_~]{0,3}[ \t]*[=:：](?:\s|$))"
)
"""A value is never the next label (``password:`` on a line, ``token: x`` on the next)."""
_LABELLED = re.compile(
    _LABEL + _NOT_A_VALUE + r"(?:(?P<quote>\*\*|__|[*_`\"'])"
    r"(?P<quoted>(?:(?![.!?]\s)[^\n。！？；]){1,200}?)(?P=quote)(?![A-Za-z0-9])"
    r"|[*_`~\"']{0,3}(?P<bare>(?(said)(?:(?![\"'`*,;&)}\]<>|])[!-~])+"
    r"|[^\s\"'`*,;&)}\]<>|。，！？；：、（）「」『』【】《》]+)))"
)
_MASKED = "\ue000"
"""Stands for what the first passes masked while labels are read (a private-use character):
it is no label's emphasis and no value of its own; it is shown as ``REDACTED``."""
_OPEN_LABEL = re.compile(_LABEL + r"\Z")
_OPEN_ENDS = ("=", ":", "：", "|", "*", "_", "`", "~", "+", ">", "-", "是", "为", "為", "is", "was")
"""What a label that waits for its value ends in, before blanks (a fence ends in ```` ``` ````
and maybe a language): cheap to ask before ``_OPEN_LABEL``."""
_FENCE_END = re.compile(r"```[A-Za-z]{0,12}\Z")
_LABEL_CHARS = 240
"""The longest a label can be up to its value: each part is bounded (220 at most)."""
_OPEN_LABEL_CHARS = 256
"""How far back the text is read to tell whether a label waits (at least ``_LABEL_CHARS``)."""
_TRAILING = ".!?:：。，,"
_DETERMINERS = frozenset({"the", "a", "an", "my", "your", "our", "their", "his", "her", "its"})
_DETERMINERS |= frozenset({"this", "that", "new", "old", "current", "same"})
_NOT_SAID_VALUES = frozenset(
    {
        "a", "an", "the", "not", "no", "in", "on", "at", "for", "to", "of", "from", "with", "by",
        "still", "also", "now", "then", "just", "only", "set", "unset", "stored", "saved", "kept",
        "written", "printed", "shown", "required", "needed", "missing", "empty", "blank",
        "unknown", "changed", "hidden", "correct", "wrong", "incorrect", "invalid", "valid",
        "secret", "private", "different", "being", "usually", "probably", "likely", "what",
        "which", "where", "that", "this", "it", "there", "here", "and", "or", "but", "too",
        "very", "enabled", "disabled", "expired", "case", "long", "short", "strong", "weak",
    }
)  # fmt: skip
"""Words after ``the password is`` that start a sentence about it, not its value."""
_BASE64ISH = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}={0,2}")
MIN_SECRET_VALUE = 4
"""Known secret values shorter than this are not searched for in free text."""


@lru_cache(maxsize=2048)
def is_secret_key(key: str) -> bool:
    """Return True when a mapping key names a secret (api_key, accessToken, lock code …).

    ``code`` alone or next to a word of access (``lock_code``, ``alarmCode``) is a secret;
    ``weather_code`` or ``country_code`` is not.
    """
    parts = [p for p in _PARTS.split(_CAMEL.sub("_", key).lower()) if p]
    if len(parts) == 1 and parts[0] in _SECRET_ALONE:
        return True
    if any(part in _SECRET_WORDS for part in parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(parts))


def scrub_text(text: str, values: Collection[str] = ()) -> str:
    """Replace secret-looking fragments of free text, and any of the known secret ``values``.

    Caught: bearer and basic credentials, API keys by their prefix (``sk-``, ``ghp_``,
    ``hf_``, ``AKIA`` …), JWTs, long hex or base64 keys, the login of any URL
    (``postgres://user:pw@host``, ``bolt://…``) and the value after a secret's label
    (``_labelled_secrets``).
    """
    text = _labelled_secrets(_masked_tokens(text))
    text = _BASE64ISH.sub(_masked_key, text).replace(_MASKED, REDACTED)
    for value in sorted((v for v in values if len(v) >= MIN_SECRET_VALUE), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def _masked_tokens(text: str) -> str:
    """Mask URL logins and keys known by their shape with ``_MASKED`` (never across a line)."""
    return _SECRET_TEXT.sub(_MASKED, _URL_CREDENTIALS.sub(rf"\1{_MASKED}@", text))


def _labelled_secrets(text: str) -> str:
    """Mask the value that follows a secret's label; leave other labels' values alone.

    A label names a secret by its words (``password``, ``PIN``, ``api key``, ``Wi-Fi key``,
    ``lock code``, ``accessToken``; ``is_secret_key``) or is ``密码``, ``口令``, ``密钥``,
    ``验证码`` …; then ``:``, ``=``, a table's ``|``, ``is``/``was`` or ``是``/``为``. Markdown
    emphasis and quotes around label and value are part of the pattern (``**PIN:** `4711```);
    the value may stand up to three line breaks later. A value is one word, or what its
    quotes, backticks or emphasis enclose; after ``is`` or ``是`` it is one word of ASCII
    that does not start a sentence (``the password is not set`` keeps its words).
    """
    out: list[str] = []
    done = at = 0
    while (match := _LABELLED.search(text, at)) is not None:
        span = _secret_value(match)
        if span is None:
            at = match.end("name") if match.group("name") else match.end("cjk")
            continue
        out += [text[done : span[0]], REDACTED]
        done = at = span[1]
    return "".join([*out, text[done:]]) if out else text


def _secret_value(match: re.Match[str]) -> tuple[int, int] | None:
    """Return where the value of a secret's label is (trailing full stops kept); None: keep."""
    if match.group("name") and not _secret_label(match.group("name")):
        return None
    group = "quoted" if match.group("quoted") is not None else "bare"
    start, end = match.span(group)
    value = match.group(group)
    if group == "bare":
        value = value.rstrip(_TRAILING)
        end = start + len(value)
    if not value.replace(_MASKED, "").strip("*"):
        return None
    if match.group("said") and value.lower() in _NOT_SAID_VALUES:
        return None
    return start, end


def _secret_label(name: str) -> bool:
    """Say whether a label's words name a secret (``the code`` does, ``country code`` not)."""
    words = name.split()
    if len(words) > 1 and words[0].lower() in _DETERMINERS:
        words = words[1:]
    return is_secret_key("_".join(words))


def _masked_key(match: re.Match[str]) -> str:
    """Mask a long run that mixes upper case, lower case and digits (a base64 key)."""
    run = match.group(0)
    mixed = any(c.isupper() for c in run) and any(c.islower() for c in run)
    return REDACTED if mixed and any(c.isdigit() for c in run) else run


def secret_fields(schema: JSONValue) -> frozenset[str]:
    """Return the argument names a tool's JSON Schema marks secret, at any depth.

    A property is secret when its schema says ``"x-secret": true`` or
    ``"format": "password"`` (what OpenAPI and form builders use for passwords).
    """
    found: set[str] = set()
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        properties = node.get("properties")
        for name, sub in properties.items() if isinstance(properties, dict) else ():
            if isinstance(sub, dict) and _marked_secret(sub):
                found.add(name)
        pending.extend(v for k, v in node.items() if k != "enum" and isinstance(v, dict | list))
    return frozenset(found)


def _marked_secret(schema: JSONObject) -> bool:
    """Say whether a property's schema marks it secret."""
    return schema.get("x-secret") is True or schema.get("format") == "password"


def secret_values(arguments: JSONValue, names: Collection[str]) -> list[str]:
    """Return the text of every value stored under one of ``names``, at any depth."""
    out: list[str] = []
    pending = [arguments]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if key in names and isinstance(item, str | int) and not isinstance(item, bool):
                    out.append(str(item))
                else:
                    pending.append(item)
        elif isinstance(node, list):
            pending.extend(node)
    return out


def shown_arguments(arguments: str, secret: Collection[str] = ()) -> JSONObject:
    """Return a call's JSON arguments as listeners may see them: secrets masked.

    ``{}`` when the arguments are not a JSON object (the tool was not run).
    """
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    shown = redact(value, secret) if isinstance(value, dict) else {}
    return shown if isinstance(shown, dict) else {}


def redact(value: JSONValue, secret: Collection[str] = ()) -> JSONValue:
    """Return a copy with secret keys masked at any depth and secret-looking text scrubbed.

    ``secret`` adds names a tool's contract marks secret (``secret_fields``).
    """
    match value:
        case dict():
            return {
                key: REDACTED if key in secret or is_secret_key(key) else redact(item, secret)
                for key, item in value.items()
            }
        case list():
            return [redact(item, secret) for item in value]
        case str():
            return scrub_text(value)
        case _:
            return value


def redact_url(url: str) -> str:
    """Return a URL fit to show: credentials and secret-looking query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub_text(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(
        f"{key}={REDACTED}" if is_secret_key(key) or _looks_secret(value) else f"{key}={value}"
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _looks_secret(value: str) -> bool:
    """Return True for a query value that looks like a key (``sk-…``, a long token)."""
    return scrub_text(value) != value or len(value) >= 24


_CLAUSE_END = re.compile(r"\n|[.!?](?=\s)\s|[。！？；]")


class StreamRedactor:
    """Scrub text that is shown as it streams (the model's thinking) without cutting a secret.

    Text is released a clause at a time (a line or a sentence ended), scrubbed, so that a
    key split across two chunks is scrubbed whole; a line that ends in a label
    (``Wi-Fi password:``) waits for the line that holds its value. Whatever the chunks,
    what is released is what ``scrub_text`` makes of the whole text, as long as no more
    than ``MAX_HELD`` characters had to wait (then the oldest go, cut at a space).
    With ``hold_all`` nothing is released before ``flush`` (up to ``MAX_HELD_ALL``): the
    values of a round's secret arguments are known only once the round has ended.
    """

    MAX_HELD = 2000
    MAX_HELD_ALL = 64_000

    def __init__(self, *, hold_all: bool = False) -> None:
        """Start empty; ``hold_all`` keeps everything until ``flush``."""
        self.hold_all = hold_all
        self._held = ""
        self._ends: list[int] = []
        """Where clauses of the held text end, in order."""
        self._safe = 0
        """The last clause end no label waits at: the held text may be cut there (0: none)."""
        self._values: set[str] = set()

    def add_values(self, values: Collection[str]) -> None:
        """Mask these exact values (a secret argument's) in everything released from now on."""
        self._values.update(v for v in values if len(v) >= MIN_SECRET_VALUE)

    def feed(self, text: str) -> str:
        """Take a chunk; return what can be shown of the text so far, scrubbed."""
        seen = len(self._held)
        self._held += text
        if self.hold_all:
            cut, limit = 0, self.MAX_HELD_ALL
        else:
            self._find_safe_end(max(seen - 1, 0))
            cut, limit = self._safe, self.MAX_HELD
        if len(self._held) - cut > limit:
            space = self._held.rfind(" ", 0, len(self._held) - limit // 2)
            cut = max(cut, space + 1 if space >= 0 else len(self._held) - limit // 2)
        if not cut:
            return ""
        released, self._held = self._held[:cut], self._held[cut:]
        self._ends = [end - cut for end in self._ends if end > cut]
        self._safe = max(self._safe - cut, 0)
        return scrub_text(released, self._values)

    def flush(self) -> str:
        """Release and scrub whatever is held."""
        released, self._held, self._ends, self._safe = self._held, "", [], 0
        return scrub_text(released, self._values) if released else ""

    def _find_safe_end(self, start: int) -> None:
        """Note the clause ends found from ``start`` on; the last no label waits at is safe."""
        last = self._ends[-1] if self._ends else 0
        new = [m.end() for m in _CLAUSE_END.finditer(self._held, start) if m.end() > last]
        self._ends += new
        for end in reversed(new):
            # The window starts at a clause end, where the first passes cut nothing apart.
            at = bisect.bisect_right(self._ends, end - _OPEN_LABEL_CHARS)
            window = self._held[self._ends[at - 1] if at else 0 : end]
            if not _waits_for_value(window):
                self._safe = end
                return


def _waits_for_value(text: str) -> bool:
    """Say whether ``text`` (starting where a clause starts) ends in a label whose value has
    not come yet.

    Any label, not only a secret's: how the line is read (``code is =`` then a value on the
    next line) depends on what follows, so the line waits for it.
    """
    tail = text.rstrip(" \t\n")[-16:]
    if not tail.lower().endswith(_OPEN_ENDS) and _FENCE_END.search(tail) is None:
        return False
    return _OPEN_LABEL.search(_masked_tokens(text)[-_LABEL_CHARS:]) is not None
