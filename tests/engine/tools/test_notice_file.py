"""The notice file: what one engine leaves the next, read once, bounded, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from custom_components.companion_agent.engine.guard.confirmations.notices import (
    MAX_KEPT_NOTICES,
    MAX_NOTICE_CHARS,
    ConfirmationNotice,
    KeptNotices,
    read_kept,
    write_kept,
)
from custom_components.companion_agent.engine.guard.confirmations.tokens import ClosedToken


def notice(
    user_id: str | None = "alice", content: str = '{"status":"interrupted"}'
) -> ConfirmationNotice:
    """Return an interrupted call's notice for ``user_id`` in ``conv-1``."""
    return ConfirmationNotice(
        status="interrupted", conversation_id="conv-1", user_id=user_id, content=content
    )


TOKEN = ClosedToken(ref="0123456789abcdef", reason="interrupted", age=12.5)


def test_what_is_written_is_read_back_once(tmp_path: Path) -> None:
    """A round trip keeps every field (a household's ``None`` user too); then the file is gone."""
    path = tmp_path / "notices" / "entry.json"
    kept = KeptNotices(notices=(notice(), notice(None)), interrupted=(TOKEN,))
    write_kept(path, kept)
    assert read_kept(path) == kept
    assert not path.exists()
    assert read_kept(path) == KeptNotices()


def test_nothing_to_keep_leaves_no_file(tmp_path: Path) -> None:
    """An engine with nothing untold removes the file an earlier close left."""
    path = tmp_path / "entry.json"
    write_kept(path, KeptNotices(notices=(notice(),)))
    write_kept(path, KeptNotices())
    assert not path.exists()


def test_the_file_is_bounded(tmp_path: Path) -> None:
    """Only the newest notices are kept; a notice past the size bound is not."""
    path = tmp_path / "entry.json"
    many = tuple(notice(f"user-{n}") for n in range(MAX_KEPT_NOTICES + 5))
    huge = notice("huge", "x" * (MAX_NOTICE_CHARS + 1))
    write_kept(path, KeptNotices(notices=(*many, huge)))
    read = read_kept(path).notices
    assert len(read) == MAX_KEPT_NOTICES
    assert read[0].user_id == "user-5"
    assert read[-1].user_id == f"user-{MAX_KEPT_NOTICES + 4}"


@pytest.mark.parametrize(
    "text",
    [
        "not json at all",
        "[1, 2, 3]",
        '{"version": 99, "notices": [], "interrupted": []}',
        '{"version": 1, "notices": {}, "interrupted": []}',
        "\udcff",
    ],
)
def test_a_file_that_is_not_a_notice_file_is_moved_aside(tmp_path: Path, text: str) -> None:
    """Nothing is restored from it, nothing raises, and it is kept aside for a person to read."""
    path = tmp_path / "entry.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert read_kept(path) == KeptNotices()
    assert not path.exists()
    [aside] = tmp_path.glob("entry.json.corrupt-*")
    assert aside.read_bytes() == text.encode("utf-8", "surrogateescape")


def test_an_unsound_notice_or_token_is_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    """Wrong types, unknown statuses and reasons, unhashable values: skipped, one by one."""
    path = tmp_path / "entry.json"
    good = {"status": "expired", "conversation_id": "c", "user_id": "u", "content": "{}"}
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "notices": [
                    good,
                    {**good, "status": "done"},
                    {**good, "status": ["expired"]},
                    {**good, "user_id": 7},
                    {**good, "conversation_id": ""},
                    {**good, "content": ""},
                    "text",
                ],
                "interrupted": [
                    {"ref": "abc", "reason": "interrupted", "age": 1},
                    {"ref": "abc", "reason": {"x": 1}, "age": 1},
                    {"ref": "abc", "reason": "interrupted", "age": True},
                    {"ref": "abc", "reason": "interrupted", "age": -1},
                    {"ref": "", "reason": "interrupted", "age": 1},
                ],
            }
        ),
        encoding="utf-8",
    )
    kept = read_kept(path)
    assert [(n.status, n.conversation_id, n.user_id) for n in kept.notices] == [
        ("expired", "c", "u")
    ]
    assert kept.interrupted == (ClosedToken(ref="abc", reason="interrupted", age=1.0),)
