"""The audio of an announcement, as PCM for a satellite: a TTS stream as it is, else ffmpeg.

An announcement Home Assistant synthesised (its token, or a ``/api/tts_proxy/`` URL whose
stream exists, as ``start_chat`` gives) is read from its TTS stream: WAV plays as it
comes, with no ffmpeg and no delay; another format is decoded by ffmpeg from the stream.
Other media (an MP3 URL, the pre-announcement chime) is decoded by ffmpeg at the format
the satellite wants, else ``DEFAULT_FORMAT``; Home Assistant's own chime is read from its
file (``compat.async_preannounce_chime``; not found there, a pre-announcement is left
out). ffmpeg is Home Assistant's (its ffmpeg integration's, else ``ffmpeg`` on the path);
without it such media cannot play, and a chime that cannot play is left out. Decoded media
is bounded: ``MAX_MEDIA_SECONDS`` (a chime: ``MAX_CHIME_SECONDS``).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterable, AsyncIterator

import yarl
from homeassistant.components import tts
from homeassistant.components.assist_satellite.entity import AssistSatelliteAnnouncement
from homeassistant.core import HomeAssistant

from ...compat import async_preannounce_chime
from ...const import LOGGER
from ...engine.errors import AudioDecoderError
from ...engine.speech.satellite import PcmConverter, PcmFormat, unwrap_wav
from .voice import AudioSource

DEFAULT_FORMAT = PcmFormat(rate=22050, width=2, channels=1)
MAX_MEDIA_SECONDS = 300.0
MAX_CHIME_SECONDS = 10.0
READ_BYTES = 4096
TTS_PROXY = "/api/tts_proxy/"


def announcement_audio(
    hass: HomeAssistant, announcement: AssistSatelliteAnnouncement, wanted: PcmFormat | None
) -> AudioSource:
    """Return the source of an announcement's audio: its chime (if any), then the message."""

    async def open_audio() -> tuple[PcmFormat, AsyncIterator[bytes]]:
        """Open the message; decode the chime in the message's format, in front of it."""
        fmt, message = await _media(hass, announcement.media_id, announcement.tts_token, wanted)
        if not announcement.preannounce_media_id:
            return fmt, message
        chime_fmt = _decodable(fmt)
        location = await _location(hass, announcement.preannounce_media_id, chime=True)
        if location is None:  # HA's own chime, not found (said once): the message alone
            return fmt, message
        try:
            chime = [
                piece async for piece in _decoded(hass, location, chime_fmt, MAX_CHIME_SECONDS)
            ]
        except AudioDecoderError as err:
            LOGGER.warning("The announcement plays without its chime: %s", err)
            return fmt, message
        return fmt, _chained(PcmConverter(chime_fmt, fmt).convert(b"".join(chime)), message)

    return open_audio


async def _media(
    hass: HomeAssistant, media_id: str, token: str | None, wanted: PcmFormat | None
) -> tuple[PcmFormat, AsyncIterator[bytes]]:
    """Open the message: its TTS stream when it has one, else the media through ffmpeg."""
    url = yarl.URL(media_id)
    if token is None and url.path.startswith(TTS_PROXY):
        token = url.path.removeprefix(TTS_PROXY)
    stream = tts.async_get_stream(hass, token) if token else None
    if stream is not None and stream.extension == "wav":
        return await unwrap_wav(stream.async_stream_result())
    fmt = _decodable(wanted or DEFAULT_FORMAT)
    if stream is not None:
        return fmt, _decoded(hass, stream.async_stream_result(), fmt, MAX_MEDIA_SECONDS)
    location = await _location(hass, media_id, chime=False)
    return fmt, _decoded(hass, location or media_id, fmt, MAX_MEDIA_SECONDS)


def _decodable(fmt: PcmFormat) -> PcmFormat:
    """Return ``fmt`` with 16-bit samples, what ffmpeg is asked to write."""
    return PcmFormat(rate=fmt.rate, width=2, channels=fmt.channels)


async def _location(hass: HomeAssistant, media_id: str, *, chime: bool) -> str | None:
    """Return where ffmpeg reads media: Home Assistant's chime from its file, else the URL.

    None: HA's chime was not found where it was, so a pre-announcement (``chime``), which
    may be HA's own, is left out.
    """
    ha_chime = await async_preannounce_chime(hass)
    if ha_chime is None:
        return None if chime else media_id
    return ha_chime.file if yarl.URL(media_id).path == ha_chime.url_path else media_id


async def _decoded(
    hass: HomeAssistant,
    source: str | AsyncIterable[bytes],
    fmt: PcmFormat,
    limit: float,
) -> AsyncIterator[bytes]:
    """Yield ``source`` (a file or URL, or bytes to feed) decoded by ffmpeg to ``fmt`` PCM.

    ``fmt`` is 16-bit (``_decodable``): ffmpeg writes signed 16-bit samples.
    """
    binary = _ffmpeg(hass)
    where = source if isinstance(source, str) else "pipe:0"
    command = [binary, "-hide_banner", "-loglevel", "error", "-i", where, "-f", "s16le"]
    command += ["-ac", str(fmt.channels), "-ar", str(fmt.rate), "pipe:1"]
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL
            if isinstance(source, str)
            else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as err:
        raise AudioDecoderError(f"cannot run ffmpeg ({binary}): {err}") from err
    writer = None if isinstance(source, str) else asyncio.create_task(_feed(process, source))
    budget = fmt.bytes_for(limit)
    try:
        assert process.stdout is not None
        while budget > 0 and (piece := await process.stdout.read(min(READ_BYTES, budget))):
            budget -= len(piece)
            yield piece
        if budget > 0 and await process.wait() != 0:
            assert process.stderr is not None
            error = (await process.stderr.read(1000)).decode(errors="replace").strip()
            raise AudioDecoderError(f"ffmpeg could not decode the media: {error}")
    finally:
        if writer is not None:
            writer.cancel()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _feed(process: asyncio.subprocess.Process, data: AsyncIterable[bytes]) -> None:
    """Write ``data`` to ffmpeg's input, then close it."""
    assert process.stdin is not None
    try:
        async for piece in data:
            process.stdin.write(piece)
            await process.stdin.drain()
    except ConnectionError:
        pass  # ffmpeg stopped reading: it has what it needs
    except Exception as err:  # the TTS of another integration: any error it raises
        LOGGER.warning("The announcement's audio failed: %s", err)
    finally:
        process.stdin.close()


def _ffmpeg(hass: HomeAssistant) -> str:
    """Return Home Assistant's ffmpeg, or raise AudioDecoderError when there is none."""
    if "ffmpeg" in hass.config.components:
        from homeassistant.components.ffmpeg import get_ffmpeg_manager  # noqa: PLC0415

        return get_ffmpeg_manager(hass).binary
    found = shutil.which("ffmpeg")
    if found is None:
        raise AudioDecoderError("media that is not WAV needs ffmpeg, and there is none")
    return found


async def _chained(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Yield ``first``, then the pieces of ``rest``."""
    yield first
    async for piece in rest:
        yield piece
