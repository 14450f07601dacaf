"""The time a question names: words, digits and Chinese, each the span a person means."""

from datetime import UTC, datetime, timedelta

import pytest

from custom_components.companion_agent.engine.memory.stores.sqlite.search import (
    TimeSpan,
    asked_about,
)

NOW = datetime(2024, 2, 20, 15, 30, tzinfo=UTC)
"""A Tuesday."""


def day(year: int, month: int, number: int) -> tuple[datetime, datetime]:
    """Return the span of one day."""
    start = datetime(year, month, number, tzinfo=UTC)
    return start, start + timedelta(days=1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did Paola explore on 24.01.2024?", day(2024, 1, 24)),
        ("Was war am 3.2.2024?", day(2024, 2, 3)),
        ("What happened on 2024-01-21?", day(2024, 1, 21)),
        ("on 21/1/2024", day(2024, 1, 21)),
        ("on 1/21/2024", day(2024, 1, 21)),
        ("我2024年1月21日做了什么？", day(2024, 1, 21)),
        ("一月五号吃了什么", day(2024, 1, 5)),
        ("十二月二十一日你在哪里", day(2023, 12, 21)),
        ("1月5号吃了什么", day(2024, 1, 5)),
        ("What did Kate make on 29 Dec 2023?", day(2023, 12, 29)),
        ("Where was I on October 13, 2023?", day(2023, 10, 13)),
        ("What did we do on the 10th of February 2024?", day(2024, 2, 10)),
        ("What did I cook yesterday?", day(2024, 2, 19)),
    ],
)
def test_a_day_is_that_day(text: str, expected: tuple[datetime, datetime]) -> None:
    """A date in words or digits is the day it names, whatever the order it is written in."""
    assert asked_about(text, NOW) == TimeSpan(*expected)


@pytest.mark.parametrize(
    "text",
    [
        "on 3/4/2024",  # 3 April or 4 March: not guessed
        "on 31.02.2024",  # no such day
        "on 2024-13-01",
        "the code is 12.5",
    ],
)
def test_a_date_that_cannot_be_read_one_way_names_no_day(text: str) -> None:
    """An order that cannot be told, or a day that does not exist, is not taken for a day."""
    span = asked_about(text, NOW)
    assert span is None or (span.end - span.start).days > 1


def test_a_month_is_the_last_one_a_year_the_year_and_last_week_the_week_before() -> None:
    """ "in June" is last June, "in 2023" the year, "last week" the week before this one."""
    assert asked_about("Where did we go in June?", NOW) == TimeSpan(
        datetime(2023, 6, 1, tzinfo=UTC), datetime(2023, 7, 1, tzinfo=UTC)
    )
    assert asked_about("What did I read in 2023?", NOW) == TimeSpan(
        datetime(2023, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)
    )
    assert asked_about("Who called last week?", NOW) == TimeSpan(
        datetime(2024, 2, 12, tzinfo=UTC), datetime(2024, 2, 19, tzinfo=UTC)
    )
    assert asked_about("上个月我去了哪里", NOW) == TimeSpan(
        datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 2, 1, tzinfo=UTC)
    )
    assert asked_about("What is my favourite colour?", NOW) is None
