"""Secret redaction for everything that leaves the engine as a record: audit, logs, errors, URLs.

It sits beside ``chars`` at the bottom of the engine: the tools' errors, the stored turns and
the audit log all pass through it, and the host masks URLs with it.
"""

from __future__ import annotations

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
        "pwd",
        "secret",
        "signature",
        "token",
    }
)
_SECRET_PAIRS = frozenset(
    {("api", "key"), ("private", "key"), ("access", "key"), ("x", "api")}
    | {(word, "code") for word in ("lock", "door", "alarm", "access", "security", "pass", "pin")}
    | {(word, "code") for word in ("auth", "verification", "login", "entry", "user")}
)
_SECRET_ALONE = frozenset({"code", "codes"})
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@]+@")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PARTS = re.compile(r"[^a-z0-9]+")
_SECRET_TEXT = re.compile(
    r"(?i)\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-[A-Za-z0-9_-]{12,}"
    r"|\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}"  # a JWT (HA tokens)
    r"|\b(?:gh[pousr]_|github_pat_|hf_|xox[abprs]-|glpat-)[A-Za-z0-9_-]{16,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{35}"
    r"|(?<![0-9A-Za-z])[0-9a-fA-F]{32,}(?![0-9A-Za-z])"  # a hex key
)
_KEY_VALUE = re.compile(
    r"(?P<key>\b[A-Za-z][A-Za-z0-9_.-]{0,40})(?P<close>[\"']?)(?P<sep>\s*[=:]\s*)"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]{1,200})(?P=quote)|(?P<bare>[^\s\"',;&)}\]]+))"
)
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
    ``hf_``, ``AKIA`` …), JWTs, long hex or base64 keys, the value after a secret name
    (``password: x``, ``"api_key": "x"``, ``Password=x;`` in a connection string) and the
    login of any URL (``postgres://user:pw@host``, ``bolt://…``).
    """
    text = _URL_CREDENTIALS.sub(rf"\1{REDACTED}@", text)
    text = _KEY_VALUE.sub(_masked_value, _SECRET_TEXT.sub(REDACTED, text))
    text = _BASE64ISH.sub(_masked_key, text)
    for value in sorted((v for v in values if len(v) >= MIN_SECRET_VALUE), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def _masked_value(match: re.Match[str]) -> str:
    """Mask the value after a key that names a secret; leave other pairs alone."""
    if not is_secret_key(match.group("key")) or match.group(0).endswith(REDACTED):
        return match.group(0)
    quote = match.group("quote") or ""
    head = match.group("key") + match.group("close") + match.group("sep")
    return f"{head}{quote}{REDACTED}{quote}"


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
    key split across two chunks is scrubbed whole; at most ``MAX_HELD`` characters wait.
    With ``hold_all`` nothing is released before ``flush`` (up to ``MAX_HELD_ALL``): the
    values of a round's secret arguments are known only once the round has ended.
    """

    MAX_HELD = 2000
    MAX_HELD_ALL = 64_000

    def __init__(self, *, hold_all: bool = False) -> None:
        """Start empty; ``hold_all`` keeps everything until ``flush``."""
        self.hold_all = hold_all
        self._held = ""
        self._values: set[str] = set()

    def add_values(self, values: Collection[str]) -> None:
        """Mask these exact values (a secret argument's) in everything released from now on."""
        self._values.update(v for v in values if len(v) >= MIN_SECRET_VALUE)

    def feed(self, text: str) -> str:
        """Take a chunk; return what can be shown of the text so far, scrubbed."""
        self._held += text
        limit = self.MAX_HELD_ALL if self.hold_all else self.MAX_HELD
        cut = 0 if self.hold_all else self._clause_end()
        if len(self._held) - cut > limit:
            space = self._held.rfind(" ", 0, len(self._held) - limit // 2)
            cut = max(cut, space + 1 if space >= 0 else len(self._held) - limit // 2)
        released, self._held = self._held[:cut], self._held[cut:]
        return scrub_text(released, self._values) if released else ""

    def flush(self) -> str:
        """Release and scrub whatever is held."""
        released, self._held = self._held, ""
        return scrub_text(released, self._values) if released else ""

    def _clause_end(self) -> int:
        """Return where the last finished clause of the held text ends (0: none)."""
        end = 0
        for match in _CLAUSE_END.finditer(self._held):
            end = match.end()
        return end
