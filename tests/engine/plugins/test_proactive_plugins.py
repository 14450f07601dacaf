"""Speaking first: mood, quiet hours, presence, rate limits; the mood_chat and state_chat triggers.

Time is a clock the test moves; presence and state changes come from small hosts written here
(the host side of the engine's protocols, as Home Assistant supplies it in production).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.plugins import (
    HostServices,
    ProactiveRequest,
    TurnContext,
)
from custom_components.companion_agent.engine.proactive import (
    MoodScore,
    Presence,
    ProactivePolicy,
    QuietHours,
    SpeakingLimit,
    StateChange,
    StateListener,
)

from .samples import Clock, activate

# 2026-02-03 12:00 in Shanghai (the fixture's home time zone).
NOON = datetime(2026, 2, 3, 4, 0, tzinfo=UTC)
TURN = TurnContext(conversation_id="c", profile_id="test", outcome="complete")


class Home:
    """Presence the test sets."""

    def __init__(self) -> None:
        """Start with someone home and awake."""
        self.now = Presence(someone_home=True)

    def presence(self) -> Presence:
        """Return the presence the test set."""
        return self.now


class States:
    """State changes the test sends to whoever watches."""

    def __init__(self) -> None:
        """Start with no watchers."""
        self.watchers: list[tuple[tuple[str, ...], StateListener]] = []

    def watch_states(
        self, entity_ids: Sequence[str], listener: StateListener
    ) -> Callable[[], None]:
        """Note the watcher; return how to remove it."""
        entry = (tuple(entity_ids), listener)
        self.watchers.append(entry)
        return lambda: self.watchers.remove(entry)

    def change(self, entity_id: str, old: str | None, new: str | None) -> None:
        """Send one change to the watchers of ``entity_id``."""
        for ids, listener in list(self.watchers):
            if entity_id in ids:
                listener(
                    StateChange(entity_id=entity_id, old_state=old, new_state=new, name="Anna")
                )


def test_mood_moves_with_emotions_and_outcomes_is_bounded_and_decays() -> None:
    """Happy tags raise it, sad ones lower it, never past ±1; it halves every half-life."""
    mood = MoodScore(half_life=3600.0)
    assert mood.value(NOON) == 0.0
    for _ in range(50):
        mood.record(NOON, emotions=("joy", "love"), outcome="complete")
    assert 0.9 < mood.value(NOON) <= 1.0
    assert mood.value(NOON + timedelta(hours=1)) == pytest.approx(mood.value(NOON) / 2)
    for _ in range(50):
        mood.record(NOON, emotions=("sad",), outcome="failed")
    assert mood.value(NOON) == -1.0
    assert mood.record(NOON, emotions=("not-an-emotion",)) == -1.0


def test_quiet_hours_across_midnight_and_within_a_day() -> None:
    """22:00–08:00 holds at night and not at noon; 13:00–14:00 only holds after lunch."""
    night = QuietHours.parse("22:00", "08:00")
    assert night.contains(datetime(2026, 1, 1, 23, 30))
    assert night.contains(datetime(2026, 1, 1, 7, 59))
    assert not night.contains(datetime(2026, 1, 1, 8, 0))
    assert not night.contains(datetime(2026, 1, 1, 12, 0))
    nap = QuietHours.parse("13:00", "14:00")
    assert nap.contains(datetime(2026, 1, 1, 13, 15))
    assert not nap.contains(datetime(2026, 1, 1, 12, 0))
    assert not QuietHours.parse("", "").contains(datetime(2026, 1, 1, 3, 0))
    with pytest.raises(ValueError, match="HH:MM"):
        QuietHours.parse("late", "08:00")


def test_the_rate_limit_counts_per_hour_and_per_day_over_sliding_windows() -> None:
    """Two an hour and three a day: the third in an hour waits, the fourth in a day too."""
    limit = SpeakingLimit(per_hour=2, per_day=3)
    for minutes in (0, 10):
        assert limit.allows(NOON + timedelta(minutes=minutes))
        limit.note(NOON + timedelta(minutes=minutes))
    assert not limit.allows(NOON + timedelta(minutes=30))
    assert limit.allows(NOON + timedelta(minutes=61))
    limit.note(NOON + timedelta(minutes=61))
    assert not limit.allows(NOON + timedelta(hours=5))
    assert limit.allows(NOON + timedelta(hours=24, minutes=1))


def test_the_policy_holds_for_quiet_hours_absence_sleep_low_mood_and_the_limit() -> None:
    """Each reason holds on its own; all clear speaks; a happy mood looks sooner."""
    policy = ProactivePolicy(
        quiet=QuietHours.parse("22:00", "08:00"),
        limit=SpeakingLimit(per_hour=1, per_day=5),
        quiet_below=-0.3,
        base_interval=3600.0,
    )
    home = Presence(someone_home=True)
    noon = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert policy.decide(noon.replace(hour=23), mood=0.0, presence=home).reason == "quiet hours"
    away = Presence(someone_home=False)
    assert policy.decide(noon, mood=0.0, presence=away).reason == "nobody home"
    asleep = Presence(someone_home=True, asleep=True)
    assert policy.decide(noon, mood=0.0, presence=asleep).reason == "asleep"
    assert policy.decide(noon, mood=-0.5, presence=home).reason == "low mood"
    assert policy.decide(noon, mood=0.0, presence=home).speak
    policy.spoke(noon)
    assert policy.decide(noon, mood=0.0, presence=home).reason == "rate limit"
    assert policy.interval(1.0) == 1800.0
    assert policy.interval(-1.0) == 7200.0
    assert policy.interval(5.0) == 1800.0  # bounded


async def test_mood_chat_asks_to_speak_when_allowed_and_learns_its_mood_from_turns(
    tmp_path: Path, host: HostServices
) -> None:
    """Noon, someone home: it asks once (the hourly limit), not when asleep, not when low."""
    clock, home = Clock(NOON), Home()
    plugins = activate(
        tmp_path,
        replace(host, clock=clock, presence=home),
        '[plugins]\nenabled = ["mood_chat"]\n'
        '[plugins.mood_chat]\ntargets = ["assist_satellite.kitchen"]\nmax_per_hour = 1\n',
    )
    plugin = plugins.get("mood_chat")
    assert plugin is not None
    asked: list[ProactiveRequest] = []

    async def emit(request: ProactiveRequest) -> None:
        """Note the request."""
        asked.append(request)

    await plugins.start_triggers(emit)
    check = plugin.check  # type: ignore[attr-defined]
    assert (await check()).speak
    assert (await check()).reason == "rate limit"
    clock.now = NOON + timedelta(hours=2)
    home.now = Presence(someone_home=True, asleep=True)
    assert (await check()).reason == "asleep"
    home.now = Presence(someone_home=True)
    for _ in range(10):
        await plugin.on_after_turn("hi", "[sad] Oh no. [angry] Terrible.", TURN)  # type: ignore[attr-defined]
    assert (await check()).reason == "low mood"
    clock.now = NOON + timedelta(days=2)  # the mood fades back to neutral
    assert (await check()).speak
    await plugins.close()

    assert [r.targets for r in asked] == [("assist_satellite.kitchen",)] * 2
    assert asked[0].source == "mood_chat"
    assert asked[0].prompt.startswith("Start a short, friendly chat")


async def test_mood_chat_refuses_a_bad_quiet_hour_naming_the_key(
    tmp_path: Path, host: HostServices
) -> None:
    """A quiet_start that is not HH:MM is reported against the profile's key."""
    plugins = activate(
        tmp_path,
        host,
        '[plugins]\nenabled = ["mood_chat"]\n[plugins.mood_chat]\nquiet_start = "soon"\n',
    )
    (problem,) = plugins.problems
    assert problem.key == "plugins.mood_chat.quiet_start"
    assert "HH:MM" in problem.message
    assert plugins.get("mood_chat") is None


@pytest.mark.parametrize(
    ("plugin", "setting", "wrong"),
    [
        ("mood_chat", 'quiet_end = "8am"', ("quiet_end", "HH:MM")),
        ("mood_chat", 'quiet_start = "24:00"', ("quiet_start", "23:59")),
        ("mood_chat", 'quiet_start = ""', ("quiet_start", "both")),  # one end alone
        ("mood_chat", "check_minutes = 0", ("check_minutes", "more than 0")),
        ("mood_chat", "max_per_day = -1", ("max_per_day", "negative")),
        ("mood_chat", 'targets = ["light.kitchen"]', ("targets", "light.kitchen")),
        ("state_chat", "cooldown_seconds = -5", ("cooldown_seconds", "negative")),
        ("state_chat", 'targets = ["Media_Player.Lounge "]', ("targets", "Media_Player")),
    ],
)
async def test_a_bad_trigger_setting_is_reported_against_its_file_and_key(
    tmp_path: Path, host: HostServices, plugin: str, setting: str, wrong: tuple[str, str]
) -> None:
    """Each bad value in a profile's override names the profile file and the exact key."""
    key, says = wrong
    profile = f'[plugins]\nenabled = ["{plugin}"]\n[plugins.{plugin}]\n{setting}\n'
    plugins = activate(tmp_path, host, profile)
    (problem,) = plugins.problems
    assert problem.key == f"plugins.{plugin}.{key}"
    assert problem.path.suffix == ".toml"
    assert problem.path.name != "plugin.toml"  # the profile that set it, not the defaults
    assert says in problem.message
    assert plugins.get(plugin) is None


async def test_a_host_that_cannot_tell_speakers_apart_takes_any_target(
    tmp_path: Path, host: HostServices
) -> None:
    """Which ids can speak is the host's rule: without one, no target is refused."""
    profile = (
        '[plugins]\nenabled = ["mood_chat"]\n[plugins.mood_chat]\ntargets = ["light.kitchen"]\n'
    )
    plugins = activate(tmp_path, replace(host, speakers=None), profile)
    assert plugins.problems == ()
    assert plugins.get("mood_chat") is not None


async def test_one_quiet_hour_alone_names_the_missing_one(
    tmp_path: Path, host: HostServices
) -> None:
    """quiet_start set, quiet_end left empty (its default): the error is about quiet_end."""
    profile = '[plugins]\nenabled = ["state_chat"]\n[plugins.state_chat]\nquiet_start = "22:00"\n'
    (problem,) = activate(tmp_path, host, profile).problems
    assert problem.key == "config.quiet_end"
    assert problem.path.name == "plugin.toml"
    assert "both" in problem.message


async def test_state_chat_speaks_on_an_arrival_once_per_cooldown_and_not_on_repeats(
    tmp_path: Path, host: HostServices
) -> None:
    """not_home → home asks; home → home and start-up do not; the cooldown holds a rerun."""
    clock, states = Clock(NOON), States()
    plugins = activate(
        tmp_path,
        replace(host, clock=clock, states=states),
        '[plugins]\nenabled = ["state_chat"]\n[plugins.state_chat]\n'
        'entities = ["person.anna"]\ntargets = ["media_player.lounge"]\ncooldown_seconds = 600\n',
    )
    asked: list[ProactiveRequest] = []

    async def emit(request: ProactiveRequest) -> None:
        """Note the request."""
        asked.append(request)

    await plugins.start_triggers(emit)
    states.change("person.anna", None, "home")  # appears at start-up: no arrival
    states.change("person.anna", "not_home", "home")
    states.change("person.anna", "home", "home")
    clock.now = NOON + timedelta(minutes=5)
    states.change("person.anna", "not_home", "home")  # within the cooldown
    clock.now = NOON + timedelta(minutes=11)
    states.change("person.anna", "not_home", "home")
    for _ in range(3):
        await asyncio.sleep(0)  # the requests go out in tasks of their own
    await plugins.close()

    assert [r.prompt for r in asked] == [
        "Anna has just come home. Greet them warmly in one or two sentences."
    ] * 2
    assert asked[0].targets == ("media_player.lounge",)
    assert states.watchers == []  # stopped: unsubscribed
