"""Our requirements resolve under every checked HA release's constraints, as HA's uv would.

For each release (hacs.json's minimum, then every monthly release to the newest) the
manifest's requirements, and each on-demand set beside them, are resolved with uv under the
release's ``package_constraints.txt`` and HA's own Wyoming pin, for its Python, on glibc
(all releases) and musl (the minimum, 2026.2.3 and the newest). What cannot be installed
today is listed in ``GAPS`` with its cause: those cases must fail with that cause, so the
test notices when they start to work. The manifest before issue 15 must fail too.

Needs the package index (marked ``network``); downloads are cached (see ``resolve``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from packaging.version import Version

from tests.support.ha_requirements import (
    OLD_MANIFEST,
    ON_DEMAND,
    Release,
    Resolution,
    manifest_requirements,
    releases,
    resolve,
)

pytestmark = pytest.mark.network

NEWEST = releases()[-1].version
MUSL_RELEASES = {releases()[0].version, "2026.2.3", NEWEST}
WORKERS = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap:
    """A set that cannot be installed where ``applies`` says, and the package to blame."""

    requirement_set: str
    applies: Callable[[Release, str], bool]
    culprit: str
    why: str


GAPS = (
    Gap(
        requirement_set="mem0",
        applies=lambda release, _: Version(release.version) >= Version("2026.10.0"),
        culprit="protobuf",
        why="every mem0ai release (to 2.2.1) needs protobuf<7; HA 2026.10 pins protobuf 7.36.0",
    ),
    Gap(
        requirement_set="piper",
        applies=lambda _, platform: platform == "musl",
        culprit="piper-tts",
        why="onnxruntime, which piper-tts needs, has no musllinux wheels (HA OS, the container)",
    ),
    Gap(
        requirement_set="mp3",
        applies=lambda _, platform: platform == "musl",
        culprit="lameenc",
        why="lameenc has no musllinux wheels and no source release (HA OS, the container)",
    ),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One resolution: a requirement set on a release and platform."""

    release: Release
    platform: str
    requirement_set: str

    @property
    def requirements(self) -> tuple[str, ...]:
        """Return what is resolved: the manifest's requirements, plus the set's if any."""
        base = OLD_MANIFEST if self.requirement_set == "old manifest" else manifest_requirements()
        return (*base, *ON_DEMAND.get(self.requirement_set, ()))

    @property
    def gap(self) -> Gap | None:
        """Return the known gap this case falls into, if any."""
        return next(
            (
                gap
                for gap in GAPS
                if gap.requirement_set == self.requirement_set
                and gap.applies(self.release, self.platform)
            ),
            None,
        )

    def __str__(self) -> str:
        """Name the case in test ids."""
        return f"{self.release.version}-{self.platform}-{self.requirement_set}"


def cases() -> list[Case]:
    """Return every resolution the test makes, for our current requirements."""
    return [
        Case(release=release, platform=platform, requirement_set=name)
        for release in releases()
        for platform in ("glibc", "musl")
        if platform == "glibc" or release.version in MUSL_RELEASES
        for name in ("manifest", *ON_DEMAND)
    ]


OLD_CASES = {
    # release: the package the old exact pins clash on
    "2026.3.4": "openai",  # HA pins openai 2.21.0
    NEWEST: "openai",  # HA pins openai 3.26.0
}


def old_cases() -> list[Case]:
    """Return the resolutions of the manifest before issue 15, which must fail."""
    return [
        Case(release=release, platform="glibc", requirement_set="old manifest")
        for release in releases()
        if release.version in OLD_CASES
    ]


@pytest.fixture(scope="session")
def resolutions(request: pytest.FixtureRequest) -> Iterator[dict[str, Future[Resolution]]]:
    """Start the selected tests' resolutions at once, a few uv processes at a time."""
    selected = {
        str(value): value
        for item in request.session.items
        for value in getattr(getattr(item, "callspec", None), "params", {}).values()
        if isinstance(value, Case)
    }
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        yield {
            key: pool.submit(resolve, case.requirements, case.release, case.platform)
            for key, case in selected.items()
        }


@pytest.mark.parametrize("case", cases(), ids=str)
def test_requirements_resolve_under_each_release(
    case: Case, resolutions: dict[str, Future[Resolution]]
) -> None:
    """Each set resolves beside the manifest, or fails for exactly its known cause."""
    resolution = resolutions[str(case)].result()
    gap = case.gap
    if gap is None:
        assert resolution.ok, resolution.message
        pinned_openai = release_pin(case.release, "openai")
        if pinned_openai is not None:
            assert resolution.pins["openai"] == pinned_openai
    else:
        assert not resolution.ok, f"{case} resolves now: drop its gap ({gap.why})"
        assert gap.culprit in resolution.message, resolution.message


@pytest.mark.parametrize("case", old_cases(), ids=lambda case: case.release.version)
def test_the_old_exact_pins_do_not_resolve(
    case: Case, resolutions: dict[str, Future[Resolution]]
) -> None:
    """The manifest before issue 15 (openai==2.15.0, jsonschema==4.26.0) is refused."""
    resolution = resolutions[str(case)].result()
    assert not resolution.ok
    assert OLD_CASES[case.release.version] in resolution.message


def release_pin(release: Release, package: str) -> str | None:
    """Return the version ``release`` pins ``package`` to, if it pins it."""
    for line in release.constraints.read_text(encoding="utf-8").splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower() == package and version:
            return version.strip()
    return None
