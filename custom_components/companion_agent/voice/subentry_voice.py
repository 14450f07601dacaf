"""``SubentryVoice``: what speaks a voice subentry's sentences, checked, its errors HA's.

A Wyoming server is asked for its voices once a minute (one question at a time: a request
that comes while the warm-up asks waits for that answer instead of asking again); embedded
Piper loads its voice from the folder (kept loaded). A voice the server or folder lacks,
a server that cannot be reached, a voice file that will not load: each is an HA error with
a translation key, and our own voice going missing raises a repair issue.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator

from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_HOST, CONF_PORT
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError

from ..const import CONF_ENGINE, CONF_SPEAKER, CONF_VOICE, DOMAIN, ENGINE_EMBEDDED
from ..engine.errors import (
    SpeechEngineMissingError,
    SpeechError,
    SpeechVoiceNotFoundError,
    VoiceFileError,
)
from ..engine.speech import (
    AudioChunk,
    EmbeddedPiper,
    PiperVoiceFolder,
    Synthesis,
    Synthesizer,
    TtsInfo,
    TtsVoice,
    WyomingTTS,
)
from ..repairs import (
    async_clear_missing_voice,
    async_report_bad_voice_file,
    async_report_missing_voice,
)
from .embedded_piper import async_require_piper, voices_folder
from .tts_voices import offered_voice, unknown_voice_error

SERVER_CHECK_TTL = 60.0
"""How long a server that had our voice is trusted without asking again (a failure forgets)."""


class SubentryVoice:
    """The subentry's synthesizer for a voice (its own or one a request picks), checked."""

    def __init__(self, hass: HomeAssistant, entry_id: str, subentry: ConfigSubentry) -> None:
        """Bind to the subentry's server (or the voices folder) and voice."""
        self._hass = hass
        self._entry_id = entry_id
        self._subentry = subentry
        data = subentry.data
        self.embedded = data.get(CONF_ENGINE) == ENGINE_EMBEDDED
        self.host: str = data.get(CONF_HOST, "")
        self.port: int = int(data.get(CONF_PORT, 0))
        self.voice: str = data[CONF_VOICE]
        self.speaker: str | None = data.get(CONF_SPEAKER)
        self.voices: tuple[TtsVoice, ...] = ()
        """The voices on offer, as last listed: the server's or the folder's."""
        self.languages: tuple[str, ...] = ()
        self._folder = PiperVoiceFolder(voices_folder(hass)) if self.embedded else None
        self._checked: tuple[float, TtsInfo] | None = None  # the server's last good answer
        self._checking: asyncio.Future[TtsInfo] | None = None

    @property
    def server(self) -> str:
        """Return where the voice speaks: ``host:port``, or ``embedded``."""
        return "embedded" if self.embedded else f"{self.host}:{self.port}"

    def key(self, voice: str, speaker: str | None) -> str:
        """Return what tells this voice (and speaker) apart from every other one's audio."""
        return f"{self._subentry.subentry_id}|{self.server}|{voice}|{speaker or ''}"

    def synthesis(self, voice: str, speaker: str | None) -> Synthesis:
        """Return how ``voice`` speaks sentences: checked first, on a connection of its own."""

        async def synthesize(sentences: AsyncIterator[str]) -> AsyncGenerator[AudioChunk]:
            """Check the voice, then speak ``sentences``; HA errors for what fails."""
            audio = (await self.synthesizer(voice, speaker)).synthesize(sentences)
            try:
                async for chunk in self.guarded(audio, voice):
                    yield chunk
            finally:
                await audio.aclose()

        return synthesize

    async def synthesizer(self, voice: str, speaker: str | None) -> Synthesizer:
        """Return what speaks ``voice``: the subentry's server, or embedded Piper."""
        if self.embedded:
            return await self._embedded(voice, speaker)
        info = await self._server_info()
        self.voices = info.voices
        self._check(voice, speaker)
        return WyomingTTS(self.host, self.port, voice=voice, speaker=speaker)

    async def guarded(
        self, audio: AsyncGenerator[AudioChunk], voice: str
    ) -> AsyncGenerator[AudioChunk]:
        """Pass ``voice``'s audio on; map speech errors to HA errors; close when done."""
        try:
            async for chunk in audio:
                yield chunk
        except SpeechVoiceNotFoundError as err:
            self._checked = None
            if voice == self.voice:
                raise self._voice_missing() from err
            raise unknown_voice_error(voice, self.voices, self.languages) from err
        except SpeechError as err:
            self._checked = None
            raise self.unreachable() from err
        finally:
            await audio.aclose()
        if voice == self.voice:
            async_clear_missing_voice(self._hass, self._subentry.subentry_id)

    def unreachable(self) -> HomeAssistantError:
        """Return the error for a server that cannot be reached."""
        return HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="tts_unreachable",
            translation_placeholders={"server": self.server},
        )

    async def _server_info(self) -> TtsInfo:
        """Return the server's voices: known within a minute, else asked (once at a time)."""
        if self._checked is not None and time.monotonic() - self._checked[0] < SERVER_CHECK_TTL:
            return self._checked[1]
        if self._checking is None:
            self._checking = asyncio.ensure_future(self._ask_server())
        checking = self._checking
        try:
            return await asyncio.shield(checking)
        finally:
            if checking.done() and self._checking is checking:
                self._checking = None

    async def _ask_server(self) -> TtsInfo:
        """Ask the server for its voices, or raise the unreachable error."""
        try:
            info = await WyomingTTS(self.host, self.port).describe()
        except SpeechError as err:
            raise self.unreachable() from err
        self._checked = (time.monotonic(), info)
        return info

    async def _embedded(self, voice: str, speaker: str | None) -> EmbeddedPiper:
        """Return embedded Piper with ``voice`` from the folder (loaded once), or raise."""
        assert self._folder is not None  # made for an embedded subentry
        try:
            await async_require_piper(self._hass)
            self.voices = tuple(file.voice for file in await self._folder.voices())
            self._check(voice, speaker)
            return EmbeddedPiper(await self._folder.load(voice), speaker)
        except SpeechEngineMissingError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN, translation_key="tts_piper_unavailable"
            ) from err
        except VoiceFileError as err:
            if voice == self.voice:
                async_report_bad_voice_file(
                    self._hass, self._entry_id, self._subentry.subentry_id, voice, str(err.path)
                )
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="tts_voice_file",
                translation_placeholders={"voice": voice, "path": str(err.path)},
            ) from err

    def _check(self, voice: str, speaker: str | None) -> None:
        """Raise unless ``voice`` (and ``speaker``) is on offer; our own voice gets an issue."""
        if voice == self.voice and all(v.name != voice for v in self.voices):
            if not self.embedded:
                self._checked = None
                raise self._voice_missing()
            return  # loading it says what is wrong with the file
        offered_voice(self.voices, voice, speaker, self.languages)

    def _voice_missing(self) -> HomeAssistantError:
        """Raise the repair issue for our voice and return the error to raise."""
        async_report_missing_voice(
            self._hass, self._entry_id, self._subentry.subentry_id, self.voice, self.server
        )
        return HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="tts_voice_missing",
            translation_placeholders={"voice": self.voice, "server": self.server},
        )
