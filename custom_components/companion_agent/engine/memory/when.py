"""When a question asks about: "on 29 Dec 2023", "24.01.2024", "in June", "last week", "上个月".

``asked_about(text, now)`` returns the span of time a question names, or None. A search
ranks the memories said within that span higher (it never drops the others: "last year"
in "the trip we took last year" may be relative to something said, not to today). English
and Chinese; a month without a year is the latest such month up to ``now``; times are UTC
(a memory's time is when it was said, as stored). Dates in digits: ISO "2024-01-21", day
first with dots "21.01.2024" (as written in most of Europe), with slashes only when the
order cannot be mistaken ("21/1/2024", "1/21/2024"; not "3/4/2024"), "2024年1月21日".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.IGNORECASE)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}(?:\s+(?:of\s+)?{_YEAR})?\b", re.IGNORECASE)
_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})\b")
_DOTTED = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.((?:19|20)\d\d)\b")
_SLASHED = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d\d)\b")
_CN_MONTH_NUMBER = "(十[一二]|[一二三四五六七八九十]|1[0-2]|[1-9])"
_CN_DAY_NUMBER = r"(\d{1,2}|[一二三四五六七八九十]{1,3})"
_CN_DAY = re.compile(rf"(?:(\d{{4}})年)?{_CN_MONTH_NUMBER}月{_CN_DAY_NUMBER}[日号]")
_YEAR_ONLY = re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.IGNORECASE)
_AGO = re.compile(r"\b(\d{1,3}|a|an|one|two|three)\s+(day|week|month)s?\s+ago\b", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|last\s+night|(?:last|this|past)\s+(?:week(?:end)?|month|year))\b",
    re.IGNORECASE,
)
_CN_MONTH = re.compile(rf"(?:(\d{{4}})年)?{_CN_MONTH_NUMBER}月")
_CN_YEAR = re.compile(r"(\d{4})年")
_CN_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_RELATIVE = (
    ("前天", "day", -2),
    ("昨天", "day", -1),
    ("昨晚", "day", -1),
    ("今天", "day", 0),
    ("上上周", "week", -2),
    ("上周", "week", -1),
    ("上星期", "week", -1),
    ("上个星期", "week", -1),
    ("上礼拜", "week", -1),
    ("这周", "week", 0),
    ("本周", "week", 0),
    ("这个星期", "week", 0),
    ("上个月", "month", -1),
    ("上月", "month", -1),
    ("这个月", "month", 0),
    ("本月", "month", 0),
    ("前年", "year", -2),
    ("去年", "year", -1),
    ("今年", "year", 0),
)
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """A span of time, ``start`` included, ``end`` excluded (UTC)."""

    start: datetime
    end: datetime

    def __contains__(self, moment: datetime) -> bool:
        """Say whether ``moment`` falls within the span."""
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return self.start <= moment < self.end


def asked_about(text: str, now: datetime | None = None) -> TimeSpan | None:
    """Return the span of time ``text`` asks about, or None when it names none."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    for find in (_day, _month, _year, _relative, _chinese):
        span = find(text, now)
        if span is not None:
            return span
    return None


def _day(text: str, now: datetime) -> TimeSpan | None:
    """Return the day of "29 Dec 2023", "October 13, 2023", "June 5th", "24.01.2024"."""
    start = _numeric_day(text, now)
    if start is not None:
        return TimeSpan(start, start + timedelta(days=1))
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        match = pattern.search(text)
        if match is None:
            continue
        month = _MONTHS[match.group(month_group).lower().rstrip(".")]
        day, year = int(match.group(day_group)), match.group(3)
        start = _dated(int(year) if year else None, month, day, now)
        if start is not None:
            return TimeSpan(start, start + timedelta(days=1))
    return None


def _numeric_day(text: str, now: datetime) -> datetime | None:
    """Return midnight of a date written in digits ("2024-01-21", "21.01.2024", 1月21日)."""
    if match := _ISO.search(text):
        year, month, day = (int(group) for group in match.groups())
        return _dated(year, month, day, now)
    if match := _DOTTED.search(text):
        day, month, year = (int(group) for group in match.groups())
        return _dated(year, month, day, now)
    if match := _CN_DAY.search(text):
        year_text, month_text, day_text = match.groups()
        year_number = int(year_text) if year_text else None
        return _dated(year_number, _cn_number(month_text), _cn_number(day_text), now)
    for match in _SLASHED.finditer(text):
        first, second, year = (int(group) for group in match.groups())
        if (first > 12) != (second > 12):  # only one order is a date
            day, month = (first, second) if first > 12 else (second, first)
            return _dated(year, month, day, now)
    return None


def _month(text: str, now: datetime) -> TimeSpan | None:
    """Return the month of "in June", "July 2023" (not the word "may" alone)."""
    for match in _MONTH_YEAR.finditer(text):
        name, year = match.group(1).lower(), match.group(2)
        if name == "may" and not year and not _after_preposition(text, match.start()):
            continue  # "may" is far more often the verb
        short = len(name) == 3 and name != "may" and not match.group(0).endswith(".")
        if short and not year and not _after_preposition(text, match.start()):
            continue  # "mar", "jan" alone are too often other words
        return _month_span(int(year) if year else None, _MONTHS[name.rstrip(".")], now)
    return None


def _after_preposition(text: str, index: int) -> bool:
    """Say whether the word before ``index`` is "in", "during", "since", "of", "early"…."""
    before = text[:index].split()
    return bool(before) and before[-1].lower() in {"in", "during", "since", "of", "early", "late"}


def _year(text: str, now: datetime) -> TimeSpan | None:
    """Return the year of "in 2023"."""
    match = _YEAR_ONLY.search(text)
    if match is None:
        return None
    year = int(match.group(1))
    return TimeSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _relative(text: str, now: datetime) -> TimeSpan | None:
    """Return the span of "yesterday", "last week", "3 days ago", "this month"."""
    match = _AGO.search(text)
    if match is not None:
        count = _WORD_NUMBERS.get(match.group(1).lower()) or int(match.group(1))
        unit = match.group(2).lower()
        days = {"day": 1, "week": 7, "month": 30}[unit] * count
        centre = _midnight(now) - timedelta(days=days)
        slack = timedelta(days={"day": 1, "week": 3, "month": 10}[unit])
        return TimeSpan(centre - slack, centre + slack + timedelta(days=1))
    match = _RELATIVE.search(text)
    if match is None:
        return None
    phrase = " ".join(match.group(1).lower().split())
    if phrase in ("today", "tonight"):
        return _unit_span("day", 0, now)
    if phrase in ("yesterday", "last night"):
        return _unit_span("day", -1, now)
    which, unit = phrase.split(" ")
    if unit == "weekend":
        saturday = _midnight(now) - timedelta(days=(now.weekday() - 5) % 7 or 7)
        return TimeSpan(saturday, saturday + timedelta(days=2))
    if which == "past":
        days = {"week": 7, "month": 31, "year": 366}[unit]
        return TimeSpan(_midnight(now) - timedelta(days=days), now + timedelta(seconds=1))
    return _unit_span(unit, -1 if which == "last" else 0, now)


def _chinese(text: str, now: datetime) -> TimeSpan | None:
    """Return the span of 昨天, 上周, 上个月, 去年, 六月, 2023年."""
    for word, unit, offset in _CN_RELATIVE:
        if word in text:
            return _unit_span(unit, offset, now)
    match = _CN_MONTH.search(text)
    if match is not None:
        return _month_span(
            int(match.group(1)) if match.group(1) else None, _cn_number(match.group(2)), now
        )
    match = _CN_YEAR.search(text)
    if match is not None:
        year = int(match.group(1))
        return TimeSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
    return None


def _cn_number(text: str) -> int:
    """Return 1..99 written in digits or in Chinese numerals (五, 十二, 二十一); 0 if neither."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return _CN_NUMBERS.get(text, 0)
    tens, _, ones = text.partition("十")
    return (_CN_NUMBERS.get(tens, 0) if tens else 1) * 10 + _CN_NUMBERS.get(ones, 0)


def _unit_span(unit: str, offset: int, now: datetime) -> TimeSpan:
    """Return the day, week (from Monday), month or year ``offset`` units from now's."""
    today = _midnight(now)
    if unit == "day":
        start = today + timedelta(days=offset)
        return TimeSpan(start, start + timedelta(days=1))
    if unit == "week":
        start = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return TimeSpan(start, start + timedelta(weeks=1))
    if unit == "month":
        index = now.year * 12 + now.month - 1 + offset
        return _month_span(index // 12, index % 12 + 1, now)
    year = now.year + offset
    return TimeSpan(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _month_span(year: int | None, month: int, now: datetime) -> TimeSpan:
    """Return one month; without a year, the latest such month up to ``now``."""
    if year is None:
        year = now.year if month <= now.month else now.year - 1
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return TimeSpan(start, end)


def _dated(year: int | None, month: int, day: int, now: datetime) -> datetime | None:
    """Return midnight of a date (without a year, the latest up to ``now``); None if invalid."""
    try:
        if year is not None:
            return datetime(year, month, day, tzinfo=UTC)
        moment = datetime(now.year, month, day, tzinfo=UTC)
        return moment if moment <= now else datetime(now.year - 1, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _midnight(moment: datetime) -> datetime:
    """Return the start of ``moment``'s day."""
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)
