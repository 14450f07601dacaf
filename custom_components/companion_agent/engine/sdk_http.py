"""The HTTP package under the ``openai`` SDK: ``httpx`` for openai 2.x, ``httpx2`` for 3.x.

openai 3.0 moved from httpx to its fork httpx2 and no longer installs httpx. What the engine
builds for the SDK (timeouts, the embedder's own connection pool) and the transport errors
it catches come from ``package``: the one whose ``Timeout`` is the SDK's ``openai.Timeout``.
This is the one place the two SDK lines differ for the engine; httpx2 keeps httpx's names
for all of it, so type checkers are shown ``httpx``.

A host may lend the SDK a client of the other package: Home Assistant 2026.10 lends an
httpx client to openai 3.x, which the SDK accepts. ``async_byte_stream_types`` names
the stream classes of both.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, cast

import openai

PACKAGE_NAMES = ("httpx", "httpx2")


def _sdk_package() -> ModuleType:
    """Return the loaded HTTP package the SDK's ``Timeout`` comes from."""
    for name in PACKAGE_NAMES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "Timeout", None) is openai.Timeout:
            return module
    raise ImportError(f"the openai SDK {openai.__version__} uses none of {PACKAGE_NAMES}")


if TYPE_CHECKING:
    import httpx as package
else:
    package = _sdk_package()

__all__ = ["PACKAGE_NAMES", "async_byte_stream_types", "package"]


def async_byte_stream_types() -> tuple[type[package.AsyncByteStream], ...]:
    """Return the ``AsyncByteStream`` classes of the HTTP packages loaded (httpx, httpx2)."""
    found: list[type[package.AsyncByteStream]] = []
    for name in PACKAGE_NAMES:
        base: object = getattr(sys.modules.get(name), "AsyncByteStream", None)
        if isinstance(base, type) and base not in found:
            found.append(cast("type[package.AsyncByteStream]", base))
    return tuple(found)
