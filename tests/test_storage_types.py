"""Column types: what a timestamp becomes on each database."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from sqlalchemy import Dialect, TypeDecorator
from sqlalchemy.dialects import postgresql, sqlite

from server.storage.models import UTCDateTime

SQLITE = sqlite.dialect()

zones = st.builds(
    timezone, st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(lambda m: timedelta(minutes=m))
)
aware = st.datetimes(
    min_value=datetime(1900, 1, 2), max_value=datetime(9999, 12, 30), timezones=zones | st.just(UTC)
)


def bind(dialect: Dialect) -> Callable[[Any], Any]:
    """How a statement compiled for ``dialect`` binds a timestamp: the type as adapted to the dialect."""
    processor = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert processor is not None
    return processor


def sqlalchemy_own_processor(dialect: Dialect) -> Callable[[Any], Any]:
    """What SQLAlchemy would bind without our shortcut: this type's step, then the dialect's."""
    processor = TypeDecorator.bind_processor(UTCDateTime().dialect_impl(dialect), dialect)
    assert processor is not None
    return processor


@given(aware)
def test_sqlite_timestamps_are_the_text_sqlalchemy_would_store(value: datetime) -> None:
    text = bind(SQLITE)(value)
    assert text == sqlalchemy_own_processor(SQLITE)(value)
    assert text == value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")  # naive UTC, in time order


@given(st.lists(st.tuples(aware, st.integers(0, 3), st.integers(0, 999_999)), min_size=1, max_size=20))
@example([(datetime(9999, 12, 31, 23, 59, 58, 5, tzinfo=UTC), 1, 999_999)])
def test_one_processor_gives_every_timestamp_its_own_text(
    shifts: list[tuple[datetime, int, int]],
) -> None:
    """The processor keeps the last second's text: timestamps of one second, of the next, and of another
    second again each get their own."""
    processor, theirs = bind(SQLITE), sqlalchemy_own_processor(SQLITE)
    for value, seconds, microseconds in shifts:
        for same_second in (value, value.replace(microsecond=microseconds)):
            later = same_second + timedelta(seconds=seconds)
            assert processor(same_second) == theirs(same_second)
            assert processor(later) == theirs(later)


def test_no_timestamp_stays_null_and_a_naive_one_is_refused() -> None:
    processor = bind(SQLITE)
    assert processor(None) is None
    with pytest.raises(ValueError, match="no time zone"):
        processor(datetime(2026, 3, 1, 12, 0))


def test_postgresql_keeps_the_aware_timestamp() -> None:
    dialect = postgresql.asyncpg.dialect()  # type: ignore[attr-defined]
    at = datetime(2026, 3, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    bound = UTCDateTime().process_bind_param(at, dialect)
    assert bound == at and bound is not None and bound.tzinfo == UTC
