"""Secret redaction for everything that leaves the engine as a record: audit, logs, errors, URLs.

It sits beside ``chars`` at the bottom of the engine: the tools' errors, the stored turns and
the audit log all pass through it, and the host masks URLs with it.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .json_types import JSONValue

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
    r"|\b(?:api[_-]?key|token|password|secret|access_token)\s*[=:]\s*[^\s&,;\"']+"
)


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


def scrub_text(text: str) -> str:
    """Replace secret-looking fragments of free text (bearer, sk- keys, key=value, URL logins)."""
    return _SECRET_TEXT.sub(REDACTED, _URL_CREDENTIALS.sub(rf"\1{REDACTED}@", text))


def redact(value: JSONValue) -> JSONValue:
    """Return a copy with secret keys masked at any depth and secret-looking text scrubbed."""
    match value:
        case dict():
            return {
                key: REDACTED if is_secret_key(key) else redact(item) for key, item in value.items()
            }
        case list():
            return [redact(item) for item in value]
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
