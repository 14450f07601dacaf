"""Whether the model server answers: a warning when it stops, a repair issue when it stays away.

The agents keep running while the server is down; each turn says it cannot reach its model.
A failed check at setup or a model round that gets no answer marks the server down, logs one
warning and starts a cheap check (``GET /models``) every minute. When a check still gets no
answer, the repair issue is raised, so it shows after about a minute of silence. Any answer,
from a check or a turn, marks the server up: one info line, the issue and the checks go. An
answer that refuses the key starts re-authentication.

The issue survives a reload (adding a persona while the server is down does not warn twice);
disabling or removing the entry removes it.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.helpers.httpx_client import get_async_client

from ..const import DOMAIN, ISSUE_SERVER_UNREACHABLE, LOGGER
from ..engine.errors import LLMAuthError, LLMConnectionError, LLMError
from ..engine.llm import NO_RETRY, LLMSettings, OpenAIChatModel
from ..engine.redaction import redact_url

CHECK_INTERVAL = timedelta(minutes=1)
CHECK_TIMEOUT = 10.0


def unreachable_issue_id(entry_id: str) -> str:
    """Return the id of an entry's "model server unreachable" issue."""
    return f"{ISSUE_SERVER_UNREACHABLE}_{entry_id}"


def is_unreachable(error: LLMError) -> bool:
    """Tell whether an error means no answer (or a broken server), not a refusal."""
    return isinstance(error, LLMConnectionError) or (error.status or 0) >= 500


class ServerHealth:
    """Follow whether one entry's model server answers, and keep its repair issue in step."""

    def __init__(self, hass: HomeAssistant, entry: ConfigEntry, settings: LLMSettings) -> None:
        """Prepare a check without retries; pick up an issue raised before a reload."""
        self._hass = hass
        self._entry = entry
        self._server = redact_url(settings.base_url)
        self._probe = OpenAIChatModel(
            replace(settings, retry=NO_RETRY), http_client=get_async_client(hass)
        )
        self._issue_id = unreachable_issue_id(entry.entry_id)
        issue = ir.async_get(hass).async_get_issue(DOMAIN, self._issue_id)
        self.reachable: bool | None = False if issue is not None and issue.active else None
        self._unsub_checks: CALLBACK_TYPE | None = None
        self._stopped = False

    async def async_check(self) -> LLMError | None:
        """Ask the server for its models; return what went wrong, if anything."""
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                await self._probe.list_models()
        except LLMError as err:
            return err
        except TimeoutError:
            return LLMConnectionError("the model server did not answer in time")
        return None

    @callback
    def async_observe(self, error: LLMError | None, *, reauth: bool = True) -> None:
        """Take how the server last answered (``None``: it did) as the word on its health."""
        if error is not None and is_unreachable(error):
            self._async_mark_down(error)
            return
        self._async_mark_up()
        if reauth and isinstance(error, LLMAuthError):
            self._entry.async_start_reauth(self._hass)

    @callback
    def async_stop(self) -> None:
        """Stop checking; the entry is unloading."""
        self._stopped = True
        self._async_stop_checks()

    @callback
    def _async_mark_down(self, error: LLMError) -> None:
        """Warn once, then check every minute until the server answers."""
        if self.reachable is not False:
            LOGGER.warning(
                "The model server at %s is not answering (%s); the agents will say they "
                "cannot reach their model until it does",
                self._server,
                error,
            )
            self.reachable = False
        if self._unsub_checks is None and not self._stopped:
            self._unsub_checks = async_track_time_interval(
                self._hass,
                self._async_scheduled_check,
                CHECK_INTERVAL,
                name=f"{DOMAIN} model server check",
                cancel_on_shutdown=True,
            )

    @callback
    def _async_mark_up(self) -> None:
        """Say once that the server is back; remove the issue and stop checking."""
        if self.reachable is True:
            return
        if self.reachable is False:
            LOGGER.info("The model server at %s answers again", self._server)
        self.reachable = True
        self._async_stop_checks()
        ir.async_delete_issue(self._hass, DOMAIN, self._issue_id)

    async def _async_scheduled_check(self, _now: datetime) -> None:
        """Check the server; raise the issue when it is still not answering."""
        error = await self.async_check()
        if self._stopped:
            return
        self.async_observe(error)
        if self.reachable is False:
            ir.async_create_issue(
                self._hass,
                DOMAIN,
                self._issue_id,
                is_fixable=False,
                severity=ir.IssueSeverity.ERROR,
                translation_key=ISSUE_SERVER_UNREACHABLE,
                translation_placeholders={"server": self._server, "title": self._entry.title},
                data={"entry_id": self._entry.entry_id},
            )

    @callback
    def _async_stop_checks(self) -> None:
        """Cancel the periodic check, if one runs."""
        if self._unsub_checks is not None:
            self._unsub_checks()
            self._unsub_checks = None
