"""A real Home Assistant *process* with its frontend, for browser tests and demos.

``HomeAssistantProcess.start(folder)`` writes a config folder (HTTP on 127.0.0.1 and a free
port, the frontend, any YAML the caller adds, this repository's integration linked into
``custom_components/``), starts HA's own entry point (``python -m
homeassistant``) as a subprocess, waits until it answers, and onboards it through HA's own
onboarding API: an owner with a known password (HA's ``homeassistant`` auth provider), the
analytics and integration steps done. The core-config step is marked done in the folder's
onboarding store before HA starts: finishing it through the API also sets up Google
Translate's TTS, Met weather and Radio Browser, which need packages and the internet that
a test (or the demo) does not have, and fill the log with their tracebacks. ``rest``, ``ws`` and
``configure_companion`` then drive it as a person's browser would, signed in as that user;
``stop`` ends it. Nothing is mocked: the browser sees HA's real login page and dashboards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from textwrap import dedent
from types import TracebackType
from typing import Any, Self, cast

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
INTEGRATION = ROOT / "custom_components" / "companion_agent"
CLIENT_ID = "http://127.0.0.1/"
USERNAME = "owner"
PASSWORD = "companion-test-password"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
CALL_TIMEOUT = 30.0

# HA 2026.2.3's command line refuses Python 3.13.0 (it asks for 3.13.2), though it runs fine
# on it: skip only that check, then run HA's own main() with the arguments given.
BOOT = dedent(
    """
    import sys
    import homeassistant.__main__ as entry_point
    entry_point.validate_python = lambda: None
    sys.exit(entry_point.main())
    """
)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_config(
    folder: Path, port: int, extra_yaml: str = "", *, name: str = "Companion test home"
) -> None:
    """Write configuration.yaml, the onboarding store, and link the integration in."""
    folder.mkdir(parents=True, exist_ok=True)
    storage = folder / ".storage"
    storage.mkdir(exist_ok=True)
    onboarding = {"version": 4, "minor_version": 1, "key": "onboarding"}
    (storage / "onboarding").write_text(
        json.dumps({**onboarding, "data": {"done": ["core_config"]}})
    )
    lines = [
        "homeassistant:",
        f"  name: {name}",
        "  time_zone: UTC",
        "http:",
        "  server_host: 127.0.0.1",
        f"  server_port: {port}",
        "frontend:",
        "conversation:",
        "logger:",
        "  default: warning",
        "  logs:",
        "    custom_components.companion_agent: info",
    ]
    (folder / "configuration.yaml").write_text("\n".join(lines) + "\n" + extra_yaml)
    custom = folder / "custom_components"
    custom.mkdir(exist_ok=True)
    link = custom / INTEGRATION.name
    if not link.exists():
        link.symlink_to(INTEGRATION, target_is_directory=True)


@dataclass(slots=True, kw_only=True)
class HomeAssistantProcess:
    """One running HA process, signed in as its owner."""

    folder: Path
    port: int
    process: asyncio.subprocess.Process
    session: aiohttp.ClientSession
    username: str = USERNAME
    password: str = PASSWORD
    access_token: str = ""
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        """Note where the process writes its output."""
        self.log = self.folder / "home-assistant.out"

    @property
    def url(self) -> str:
        """Return HA's base URL."""
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    async def start(
        cls,
        folder: Path,
        *,
        extra_yaml: str = "",
        start_within: float = START_TIMEOUT,
        port: int | None = None,
        name: str = "Companion test home",
        username: str = USERNAME,
        password: str = PASSWORD,
        path: Sequence[Path] = (),
    ) -> Self:
        """Write the config, start HA, wait for it and onboard it; raise if it never answers.

        ``port`` defaults to a free one; ``path`` holds folders put first on HA's ``PATH``
        (where HA finds ``ffmpeg``); the owner signs in as ``username`` / ``password``.
        """
        port = port or free_port()
        write_config(folder, port, dedent(extra_yaml), name=name)
        search = os.pathsep.join([*map(str, path), os.environ.get("PATH", "")])
        out = (folder / "home-assistant.out").open("wb")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            BOOT,
            "--config",
            str(folder),
            "--skip-pip",
            "--log-no-color",
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PATH": search},
            start_new_session=True,
        )
        out.close()
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT))
        home = cls(
            folder=folder,
            port=port,
            process=process,
            session=session,
            username=username,
            password=password,
        )
        try:
            await home._wait_until_up(start_within)
            await home._onboard()
        except BaseException:
            await home.stop()
            raise
        return home

    async def __aenter__(self) -> Self:
        """Use the running process."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the process."""
        await self.stop()

    def output(self, tail: int = 4000) -> str:
        """Return the end of what the process printed (for a failing test's message)."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-tail:]
        return ""

    async def stop(self) -> None:
        """Stop HA (SIGTERM, then SIGKILL after ``STOP_TIMEOUT``); close the HTTP session."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                await self.process.wait()
        await self.session.close()

    async def rest(self, method: str, path: str, data: object | None = None) -> Any:
        """Call HA's REST API as the owner; return the JSON answer, raise on an error status."""
        headers = {"Authorization": f"Bearer {self.access_token}"}
        async with self.session.request(
            method, self.url + path, json=data, headers=headers
        ) as response:
            if response.status >= 400:
                text = await response.text()
                raise RuntimeError(f"{method} {path}: {response.status} {text[:500]}")
            return await response.json(content_type=None)

    async def ws(self, *messages: dict[str, Any]) -> list[Any]:
        """Send WebSocket commands as the owner, one after another; return their results."""
        results: list[Any] = []
        async with self.session.ws_connect(self.url + "/api/websocket") as ws:
            await ws.receive_json()
            await ws.send_json({"type": "auth", "access_token": self.access_token})
            if (await ws.receive_json())["type"] != "auth_ok":
                raise RuntimeError("WebSocket auth failed")
            for number, message in enumerate(messages, start=1):
                await ws.send_json({**message, "id": number})
                reply = await ws.receive_json()
                if not reply.get("success"):
                    raise RuntimeError(f"{message['type']}: {reply.get('error')}")
                results.append(reply.get("result"))
        return results

    async def configure_companion(
        self,
        llm_url: str,
        model: str = "test-model",
        *,
        profile: str | None = None,
        api_key: str = "",
    ) -> str:
        """Add the integration through its config flow; return its persona's entity id.

        ``profile`` switches the persona to another profile through its reconfigure flow.
        """
        flow = await self.rest(
            "POST", "/api/config/config_entries/flow", {"handler": INTEGRATION.name}
        )
        done = await self.rest(
            "POST",
            f"/api/config/config_entries/flow/{flow['flow_id']}",
            {"base_url": llm_url, "api_key": api_key, "model": model},
        )
        if done.get("type") != "create_entry":
            raise RuntimeError(f"config flow did not create the entry: {done}")
        entry_id = done["result"]["entry_id"]
        if profile is not None:
            await self._reconfigure_persona(entry_id, profile)
            await self._reloaded(entry_id)
        for _ in range(100):
            [entities] = await self.ws({"type": "config/entity_registry/list"})
            found = [
                e["entity_id"]
                for e in entities
                if e["config_entry_id"] == entry_id and e["entity_id"].startswith("conversation.")
            ]
            if found:
                return cast(str, found[0])
            await asyncio.sleep(0.1)
        raise RuntimeError("the persona's conversation entity never appeared")

    async def expose(self, *entity_ids: str) -> None:
        """Expose entities to Assist (and so to the companion's tools)."""
        await self.ws(
            {
                "type": "homeassistant/expose_entity",
                "assistants": ["conversation"],
                "entity_ids": list(entity_ids),
                "should_expose": True,
            }
        )

    async def state(self, entity_id: str) -> str:
        """Return an entity's state."""
        return cast(str, (await self.rest("GET", f"/api/states/{entity_id}"))["state"])

    async def _reconfigure_persona(self, entry_id: str, profile: str) -> None:
        """Point the entry's first persona at ``profile`` (its Assist access kept)."""
        [entries] = await self.ws({"type": "config_entries/subentries/list", "entry_id": entry_id})
        subentry = next(s for s in entries if s["subentry_type"] == "conversation")
        flow = await self.rest(
            "POST",
            "/api/config/config_entries/subentries/flow",
            {
                "handler": [entry_id, "conversation"],
                "source": "reconfigure",
                "subentry_id": subentry["subentry_id"],
            },
        )
        await self.rest(
            "POST",
            f"/api/config/config_entries/subentries/flow/{flow['flow_id']}",
            {"profile": profile, "llm_hass_api": ["assist"]},
        )

    async def _entry_state(self, entry_id: str) -> str:
        """Return a config entry's state (``loaded``, ``not_loaded``, ...)."""
        entries = await self.rest("GET", "/api/config/config_entries/entry")
        return str(next(e["state"] for e in entries if e["entry_id"] == entry_id))

    async def _reloaded(self, entry_id: str, within: float = 30.0) -> None:
        """Wait for the reload a subentry change starts: out of ``loaded``, then back in."""
        with contextlib.suppress(TimeoutError):
            await self._entry_becomes(entry_id, lambda state: state != "loaded", 2.0)
        await self._entry_becomes(entry_id, lambda state: state == "loaded", within)

    async def _entry_becomes(
        self, entry_id: str, wanted: Callable[[str], bool], within: float
    ) -> None:
        """Poll the entry's state until ``wanted`` says yes; TimeoutError after ``within``."""
        async with asyncio.timeout(within):
            while True:
                if wanted(await self._entry_state(entry_id)):
                    return
                await asyncio.sleep(0.05)

    async def _wait_until_up(self, within: float) -> None:
        """Poll the onboarding endpoint until HA answers; fail early if the process died."""
        async with asyncio.timeout(within):
            while True:
                if self.process.returncode is not None:
                    raise RuntimeError(
                        f"HA exited with {self.process.returncode}:\n{self.output()}"
                    )
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with self.session.get(self.url + "/api/onboarding") as response:
                        if response.status == 200:
                            return
                await asyncio.sleep(0.25)

    async def _onboard(self) -> None:
        """Create the owner with a known password and finish every onboarding step."""
        async with self.session.post(
            self.url + "/api/onboarding/users",
            json={
                "client_id": CLIENT_ID,
                "name": "Owner",
                "username": self.username,
                "password": self.password,
                "language": "en",
            },
        ) as response:
            response.raise_for_status()
            code = (await response.json())["auth_code"]
        async with self.session.post(
            self.url + "/auth/token",
            data={"grant_type": "authorization_code", "code": code, "client_id": CLIENT_ID},
        ) as response:
            response.raise_for_status()
            self.access_token = (await response.json())["access_token"]
        await self.rest("POST", "/api/onboarding/analytics")
        await self.rest(
            "POST",
            "/api/onboarding/integration",
            {"client_id": CLIENT_ID, "redirect_uri": CLIENT_ID + "?auth_callback=1"},
        )
