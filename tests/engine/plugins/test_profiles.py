"""Profiles: the shipped ones load; a malformed one is named by file and key; reload snapshots."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.plugins import (
    LoadProblem,
    Profile,
    ProfileLibrary,
    UnreadProfile,
    builtin_roots,
    load_library,
    load_plugins,
)
from custom_components.companion_agent.engine.tools.holding import KINDS
from custom_components.companion_agent.engine.turn.prompt import PromptBuilder

from .samples import HOOK_CODE, HOOK_TOML, write_plugin, write_profile

OVERRIDE = '[plugins]\nenabled = ["recorder"]\n[plugins.recorder]\n'
ROOT = Path(__file__).resolve().parents[3]
GOOD = """
name = "Good"
persona = "You are good."
[plugins]
enabled = ["recorder"]
"""


def only_problem(problems: tuple[LoadProblem, ...]) -> LoadProblem:
    """Return the single problem."""
    assert len(problems) == 1, problems
    return problems[0]


def test_the_shipped_profiles_and_plugins_load() -> None:
    """default, baoqiao (zh-CN) and butler load from the repo with no problem at all."""
    assert builtin_roots() == (ROOT,)
    library = load_library(builtin_roots())
    assert library.problems == ()
    assert {"datetime", "diary", "web_search"} <= set(library.catalog.plugins)
    profiles = {profile.id: profile for profile in library.profiles}
    assert {"default", "baoqiao", "butler"} <= set(profiles)
    assert library.profiles.default is profiles["default"]
    assert profiles["default"].language == "en"
    assert profiles["baoqiao"].language == "zh-CN"
    assert "joy" in profiles["baoqiao"].output.actions
    # every profile's tag vocabulary holds the standard emotions: never words, never spoken
    assert {"happy", "joy", "sad"} <= profiles["default"].output.tags
    assert profiles["default"].output.is_emotion("Happy")
    assert profiles["butler"].language.startswith("en")
    assert len({p.persona for p in profiles.values()}) == len(profiles)
    for profile in profiles.values():
        assert profile.output.follow_ups  # documented, and on
        assert "datetime" in profile.plugin_ids
        assert profile.persona.strip()
        assert profile.max_rounds >= 1
    diary = next(p for p in profiles["butler"].plugins if p.id == "diary")
    assert diary.config.integer("summary_chars") == 400
    assert profiles["butler"].policy["lock"] == "confirm"
    system = PromptBuilder(profiles["baoqiao"]).system_message().content
    assert "宝巧" in system
    assert "Simplified Chinese (zh-CN)" in system


def test_every_shipped_profile_holds_the_line_in_english_and_chinese() -> None:
    """Each kind has a line with its target and one without, in each persona's own words."""
    profiles = {profile.id: profile for profile in load_library(builtin_roots()).profiles}
    for profile in profiles.values():
        holding = profile.holding
        assert holding.active
        assert holding.after == 1.5
        for language in ("en", "zh"):
            for kind in KINDS:
                with_target = holding.phrase((language,), kind, "Porch")
                without = holding.phrase((language,), kind, None)
                assert with_target is not None
                assert without is not None
                assert "{" not in with_target + without
            assert "Porch" in (holding.phrase((language,), "camera", "Porch") or "")
    english = [p.holding.phrase(("en",), "camera", None) for p in profiles.values()]
    assert len(set(english)) == len(profiles)  # each persona says it its own way


def test_every_shipped_profile_bounds_its_speech_and_corrects_claims_in_its_words() -> None:
    """About 20 s or 4 sentences spoken; a claim of a change corrected in English and Chinese."""
    profiles = {profile.id: profile for profile in load_library(builtin_roots()).profiles}
    for profile in profiles.values():
        assert (profile.output.spoken_seconds, profile.output.spoken_sentences) == (20.0, 4)
        claims = profile.claims
        english = claims.claim("The kitchen light is turned on.", looked=False)
        chinese = claims.claim("客厅灯已打开。", looked=False)
        assert english is not None
        assert chinese is not None
        assert "changed" in english.correction
        assert "更改" in chinese.correction or "改" in chinese.correction
        assert claims.claim("The kitchen light is on.", looked=False) is None
    assert profiles["default"].claims.claim("Done.", looked=False).correction == (  # type: ignore[union-attr]
        "I haven't changed anything yet."
    )


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ('name = "x"\npersonality = "odd"\n', "personality", "unknown key"),
        ('[output]\nformat = "short"\n', "output.format", "unknown key"),
        ('[output]\nactions = ["big smile"]\n', "output.actions", "not a valid tag"),
        ("[output]\nactions = 5\n", "output.actions", "expected an array of strings, got an"),
        ('[output]\nactions = ["joy", 5]\n', "output.actions", "expected a string, got an"),
        ('[output]\nemotions = ["[glee]"]\n', "output.emotions", "not a valid tag"),
        ('[output]\nfollow_ups = "no"\n', "output.follow_ups", "expected a boolean, got a str"),
        ("[output]\nfollow_up = false\n", "output.follow_up", "unknown key"),
        ("[models]\nchat = 3\n", "models.chat", "expected a string"),
        ('[models]\naudio = "x"\n', "models.audio", "unknown key"),
        ("max_rounds = 0\n", "max_rounds", "at least 1"),
        ('max_rounds = "six"\n', "max_rounds", "expected an integer, got a string"),
        ("hook_timeout = 0.01\n", "hook_timeout", "at least 0.05"),
        ("turn_deadline = 0.5\n", "turn_deadline", "must be at least 1"),
        ('turn_deadline = "1m"\n', "turn_deadline", "expected a float, got a string"),
        ('language = "Chinese please"\n', "language", "language tag"),
        ('[policy]\n"lock.front_door" = "maybe"\n', "policy.lock.front_door", "allow, validate"),
        ('[plugins]\nenabled = "recorder"\n', "plugins.enabled", "array of strings"),
        (OVERRIDE + 'notes = "x"\n', "plugins.recorder.notes", "unknown setting"),
        (OVERRIDE + "note = 5\n", "plugins.recorder.note", "expected a string, got an integer"),
        ("[plugins]\nrecorder = 1\n", "plugins.recorder", "expected a table"),
        ('name = "unterminated\n', "(toml)", "not valid TOML"),
        ("[holding]\nafter = 0\n", "holding.after", "enabled = false"),
        ('[holding]\nenabled = "no"\n', "holding.enabled", "expected a boolean"),
        ('[holding.english]\ndefault = "Hm."\n', "holding.english", "language tag"),
        ('[holding.en]\nweather = "Hm."\n', "holding.en.weather", "unknown key"),
        ('[holding.en]\ncamera = "At {where}."\n', "holding.en.camera", "not {where}"),
        ('[holding.zh]\nhome_any = "看{target}"\n', "holding.zh.home_any", "no {target}"),
        ('[holding.en]\nsearch = "A {"\n', "holding.en.search", "not a valid template"),
        ("[holding.en]\ndefault = 1\n", "holding.en.default", "expected a string"),
        ("[output]\nspoken_seconds = 1\n", "output.spoken_seconds", "3 to 300 seconds"),
        ("[output]\nspoken_sentences = 0\n", "output.spoken_sentences", "1 to 100 sentences"),
        ('[claims.en]\nown = ["(on"]\n', "claims.en.own", "not a valid regular expression"),
        ('[claims.fr]\nown = ["allumé"]\n', "claims.fr.correction", "needs its correction"),
        ('[claims.en]\nfixed = "No."\n', "claims.en.fixed", "unknown key"),
        ('[claims]\nenabled = "yes"\n', "claims.enabled", "expected a boolean"),
    ],
)
def test_malformed_profile_names_file_and_key(
    tmp_path: Path, text: str, key: str, words: str
) -> None:
    """Each mistake is reported with the profile file and the dotted key; others still load."""
    write_plugin(tmp_path, "recorder", HOOK_TOML, {"plugin.py": HOOK_CODE})
    write_profile(tmp_path, "good", GOOD)
    bad = write_profile(tmp_path, "bad", text)
    library = load_library([tmp_path])
    problem = only_problem(library.problems)
    assert (problem.kind, problem.path, problem.key) == ("profile", bad, key)
    assert words in problem.message
    assert set(library.profiles.profiles) == {"good"}


def test_turn_deadline_defaults_to_a_minute_and_an_integer_means_seconds(tmp_path: Path) -> None:
    """No ``turn_deadline`` gives 60 s; an integer or a float sets it; 1 s is the minimum."""
    write_profile(tmp_path, "plain", 'name = "Plain"\n')
    write_profile(tmp_path, "quick", "turn_deadline = 20\n")
    write_profile(tmp_path, "edge", "turn_deadline = 1.0\n")
    library = load_library([tmp_path])
    assert library.problems == ()
    deadlines = {profile.id: profile.turn_deadline for profile in library.profiles}
    assert deadlines == {"plain": 60.0, "quick": 20.0, "edge": 1.0}
    assert all(type(deadline) is float for deadline in deadlines.values())


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (
            'max_rounds = 0\npersona = 3\n[models]\naudio = "x"\n',
            "max_rounds",
            "value must be at least 1 (and 2 more problems)",
        ),
        (
            'persona = 3\nmax_rounds = 0\n[models]\naudio = "x"\n',
            "persona",
            "expected a string, got an integer (and 2 more problems)",
        ),
        (
            '[models]\naudio = "x"\nvideo = "y"\n',
            "models.audio",
            "unknown key (and 1 more problem)",
        ),
    ],
)
def test_several_mistakes_report_the_first_in_file_order(
    tmp_path: Path, text: str, key: str, message: str
) -> None:
    """With more than one mistake the first one in the file is named, and the rest counted."""
    bad = write_profile(tmp_path, "bad", text)
    problem = only_problem(load_library([tmp_path]).problems)
    assert (problem.path, problem.key, problem.message) == (bad, key, message)


def test_unknown_plugin_is_reported_but_the_profile_loads(tmp_path: Path) -> None:
    """A profile naming a plugin nobody installed still loads, without it, and says so."""
    write_plugin(tmp_path, "recorder", HOOK_TOML, {"plugin.py": HOOK_CODE})
    path = write_profile(tmp_path, "p", '[plugins]\nenabled = ["recorder", "memory"]\n')
    library = load_library([tmp_path])
    problem = only_problem(library.problems)
    assert (problem.path, problem.key) == (path, "plugins.enabled")
    assert "'memory'" in problem.message
    profile = library.profiles.get("p")
    assert profile is not None
    assert profile.plugin_ids == ("recorder",)


def test_broken_plugin_leaves_profiles_working(tmp_path: Path) -> None:
    """A plugin that fails to load is reported once; profiles enabling it load without it."""
    write_plugin(tmp_path, "recorder", HOOK_TOML, {"plugin.py": "raise ImportError('gone')\n"})
    write_profile(tmp_path, "good", GOOD)
    library = load_library([tmp_path])
    problem = only_problem(library.problems)
    assert problem.kind == "plugin"
    profile = library.profiles.get("good")
    assert profile is not None
    assert profile.plugin_ids == ()


def test_reload_gives_new_snapshots_and_keeps_old_ones_intact(tmp_path: Path) -> None:
    """A turn's snapshot never changes; reload returns new ones; a broken edit keeps the last."""
    write_plugin(tmp_path, "recorder", HOOK_TOML, {"plugin.py": HOOK_CODE})
    path = write_profile(tmp_path, "good", GOOD)
    catalog = load_plugins([tmp_path])
    library = ProfileLibrary.load([tmp_path], catalog)
    running = library.get("good")
    assert running is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        running.persona = "changed"  # type: ignore[misc]

    path.write_text(GOOD.replace("You are good.", "You are better."), encoding="utf-8")
    reloaded = library.reload(catalog)
    fresh = reloaded.get("good")
    assert fresh is not None
    assert (running.persona, fresh.persona) == ("You are good.", "You are better.")

    path.write_text("oops = 1\n" + GOOD, encoding="utf-8")
    broken = reloaded.reload(catalog)
    problem = only_problem(broken.problems)
    assert (problem.path, problem.key) == (path, "oops")
    assert "previous version" in problem.message
    assert broken.get("good") is fresh


def test_find_tells_a_profile_that_cannot_be_read_from_one_that_can(tmp_path: Path) -> None:
    """A broken file with a snapshot is found; without one, or with no file, it is unread;
    a user's broken override of a shipped profile is unread, never the shipped one."""
    path = write_profile(tmp_path, "night", '[policy]\n"light.bed" = "confirm"\n')
    library = load_library([*builtin_roots(), tmp_path])
    found = library.profiles.find("night")
    assert isinstance(found, Profile)
    assert found.policy == {"light.bed": "confirm"}

    path.write_text('[policy\n"light.bed" = "confirm"\n', encoding="utf-8")
    kept = load_library([*builtin_roots(), tmp_path], library).profiles.find("night")
    assert kept is found  # the last good snapshot, while the library lives
    broken = load_library([*builtin_roots(), tmp_path]).profiles.find("night")
    assert isinstance(broken, UnreadProfile)
    assert (broken.profile_id, broken.path) == ("night", path)
    assert broken.problem is not None
    assert "line 1" in broken.problem.message

    path.unlink()
    missing = load_library([*builtin_roots(), tmp_path], library).profiles.find("night")
    assert missing == UnreadProfile(profile_id="night", path=path)

    write_profile(tmp_path, "default", "oops = 1\n")
    library = load_library([*builtin_roots(), tmp_path])
    assert library.profiles.default is not None  # the shipped one, for other personas
    override = library.profiles.find("default")
    assert isinstance(override, UnreadProfile)
    assert override.path == tmp_path / "profiles" / "default.toml"

    write_profile(tmp_path, "default", 'name = "Mine"\n')
    assert isinstance(load_library([*builtin_roots(), tmp_path]).profiles.find("default"), Profile)


def test_user_profile_replaces_a_shipped_one(tmp_path: Path) -> None:
    """A user profile with the same id as a shipped one wins for new turns."""
    write_profile(tmp_path, "default", 'name = "Mine"\n')
    library = load_library([*builtin_roots(), tmp_path])
    profile = library.profiles.get("default")
    assert profile is not None
    assert (profile.name, profile.source) == ("Mine", tmp_path / "profiles" / "default.toml")
    assert library.problems == ()


def test_a_profile_may_name_its_own_emotions(tmp_path: Path) -> None:
    write_profile(tmp_path, "gleeful", '[output]\nactions = ["Wave"]\nemotions = ["glee"]\n')
    (profile,) = load_library([tmp_path]).profiles
    assert profile.output.tags == {"wave", "glee"}
    assert profile.output.is_emotion("GLEE")
    assert not profile.output.is_emotion("wave")
    assert not profile.output.is_emotion("happy")


def test_follow_ups_are_on_unless_the_profile_turns_them_off(tmp_path: Path) -> None:
    """``[output] follow_ups``: true when absent; false turns listening for answers off."""
    write_profile(tmp_path, "plain", 'name = "Plain"\n')
    write_profile(tmp_path, "quiet", "[output]\nfollow_ups = false\n")
    write_profile(tmp_path, "eager", "[output]\nfollow_ups = true\n")
    library = load_library([tmp_path])
    assert library.problems == ()
    follow_ups = {profile.id: profile.output.follow_ups for profile in library.profiles}
    assert follow_ups == {"plain": True, "quiet": False, "eager": True}


def test_holding_lines_are_off_without_phrases_or_when_disabled(tmp_path: Path) -> None:
    """No ``[holding]``: nothing to say; ``enabled = false`` keeps the phrases but says none."""
    write_profile(tmp_path, "plain", 'name = "Plain"\n')
    write_profile(tmp_path, "quiet", '[holding]\nenabled = false\n[holding.en]\ndefault = "Hm."\n')
    write_profile(tmp_path, "slow", '[holding]\nafter = 3\n[holding.zh-CN]\ndefault = "嗯。"\n')
    library = load_library([tmp_path])
    assert library.problems == ()
    holding = {profile.id: profile.holding for profile in library.profiles}
    assert not holding["plain"].active
    assert not holding["quiet"].active
    assert holding["quiet"].phrase(("en",), "camera", None) == "Hm."
    assert holding["slow"].active
    assert holding["slow"].after == 3.0
    assert holding["slow"].phrase(("zh-cn",), "search", None) == "嗯。"
