"""The ``mood_chat`` plugin: speak first now and then, as the persona's mood and the home allow.

It keeps a mood score from the emotion tags of the persona's answers and how its turns ended
(``on_after_turn``), looks for a chance to speak every ``check_minutes`` (sooner when happy,
later when low) and asks the host for a proactive turn when the policy allows: outside quiet
hours, someone home and awake (when the host can tell), mood not low, within the rate limits.
"""

from __future__ import annotations

import asyncio
import logging
import re

from custom_components.companion_agent.engine.plugins import (
    HookPlugin,
    PluginContext,
    ProactiveEmitter,
    ProactiveRequest,
    TriggerPlugin,
    TurnContext,
)
from custom_components.companion_agent.engine.proactive import (
    Decision,
    MoodScore,
    ProactivePolicy,
    QuietHours,
    QuietHoursError,
    SpeakingLimit,
    bad_speaker,
)
from custom_components.companion_agent.engine.proactive.speaking_first import VALENCE

LOGGER = logging.getLogger(__name__)
TAG = re.compile(r"\[([A-Za-z_]{1,24})\]")
MAX_TAGS = 16


def mood_words(mood: float) -> str:
    """Return the mood as a hint for the model."""
    if mood >= 0.3:
        return "You have been in a good mood lately."
    if mood <= -0.15:
        return "You have been a little low lately; keep it gentle."
    return ""


class MoodChatPlugin(TriggerPlugin, HookPlugin):
    """Start a chat when the mood, the hour and the home allow it."""

    def __init__(self, context: PluginContext) -> None:
        """Read and check the settings; no I/O."""
        super().__init__(context)
        config = context.config
        self.targets = config.texts("targets")
        if (target := bad_speaker(self.targets, context.speakers)) is not None:
            raise config.error("targets", f"{target!r} is not an assist_satellite or media_player")
        self.instruction = config.text("instruction")
        minutes = config.number("check_minutes")
        half_life = config.number("mood_half_life_hours")
        for key, value in (("check_minutes", minutes), ("mood_half_life_hours", half_life)):
            if value <= 0:
                raise config.error(key, "must be more than 0")
        try:
            quiet = QuietHours.parse(config.text("quiet_start"), config.text("quiet_end"))
        except QuietHoursError as err:
            raise config.error(f"quiet_{err.end}", str(err)) from err
        per_hour, per_day = config.integer("max_per_hour"), config.integer("max_per_day")
        for key, count in (("max_per_hour", per_hour), ("max_per_day", per_day)):
            if count < 0:
                raise config.error(key, "cannot be negative")
        self.mood = MoodScore(half_life=half_life * 3600.0)
        self.policy = ProactivePolicy(
            quiet=quiet,
            limit=SpeakingLimit(per_hour=per_hour, per_day=per_day),
            quiet_below=config.number("quiet_below"),
            base_interval=minutes * 60.0,
        )
        self._emit: ProactiveEmitter | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, emit: ProactiveEmitter) -> None:
        """Begin looking for chances to speak."""
        self._emit = emit
        self._task = asyncio.create_task(self._looking(), name=f"{self.plugin_id} looks")

    async def stop(self) -> None:
        """Stop looking; nothing is emitted after this."""
        self._emit = None
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def check(self) -> Decision:
        """Ask the policy once; when it allows, ask the host for a proactive turn."""
        now = self.context.now()
        mood = self.mood.value(now)
        presence = self.context.presence.presence() if self.context.presence else None
        decision = self.policy.decide(now, mood=mood, presence=presence)
        if not decision.speak or self._emit is None:
            LOGGER.debug("%s holds: %s", self.plugin_id, decision.reason or "stopped")
            return decision
        self.policy.spoke(now)
        prompt = " ".join(part for part in (self.instruction, mood_words(mood)) if part)
        await self._emit(
            ProactiveRequest(source=self.plugin_id, prompt=prompt, targets=self.targets)
        )
        return decision

    async def on_after_turn(self, user_text: str, assistant_text: str, ctx: TurnContext) -> None:
        """Fold the answer's emotion tags and the turn's outcome into the mood."""
        emotions = tuple(
            tag.lower() for tag in TAG.findall(assistant_text)[:MAX_TAGS] if tag.lower() in VALENCE
        )
        self.mood.record(self.context.now(), emotions=emotions, outcome=ctx.outcome)

    async def _looking(self) -> None:
        """Wait the mood's interval, then check; a failing check is logged, never fatal."""
        while True:
            await asyncio.sleep(self.policy.interval(self.mood.value(self.context.now())))
            try:
                await self.check()
            except Exception:
                LOGGER.warning("%s could not start a chat", self.plugin_id, exc_info=True)
