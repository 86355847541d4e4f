"""The pure chess clock: parsing time controls, charging, increments, flags."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.clock import Clock, TimeControl, describe


@pytest.mark.parametrize(
    ("text", "base_ms", "increment_ms"),
    [("5+3", 300_000, 3_000), ("0:02+0", 2_000, 0), ("1:30+2", 90_000, 2_000), (" 15+10 ", 900_000, 10_000)],
)
def test_time_controls_parse(text: str, base_ms: int, increment_ms: int) -> None:
    assert TimeControl.parse(text) == TimeControl(base_ms, increment_ms)


def test_untimed_is_none_and_described_as_untimed() -> None:
    assert TimeControl.parse("untimed") is None
    assert describe(None) == "untimed"


@pytest.mark.parametrize(
    "text", ["", "5", "5+", "+3", "0+3", "0:00+1", "1:60+0", "5+999", "999+0", "a+b", "5 + 3"]
)
def test_bad_time_controls_are_refused_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="bad time control"):
        TimeControl.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\u0663+0", id="arabic-indic-three"),
        pytest.param("\uff11+0", id="fullwidth-one"),
        pytest.param("5+\u06f3", id="persian-three-increment"),
        pytest.param("0:\u0663\u0660+1", id="arabic-indic-seconds"),
        pytest.param("\u0967\u0966+5", id="devanagari-minutes"),
    ],
)
def test_only_ascii_digits_make_a_time_control(text: str) -> None:
    """``int`` reads any script's decimal digits ("\u0663" is 3); the protocol's time controls are ASCII."""
    with pytest.raises(ValueError, match="bad time control"):
        TimeControl.parse(text)


@given(minutes=st.integers(0, 180), seconds=st.integers(0, 59), increment=st.integers(0, 180))
def test_describe_round_trips(minutes: int, seconds: int, increment: int) -> None:
    text = f"{minutes}:{seconds:02d}+{increment}"
    try:
        control = TimeControl.parse(text)
    except ValueError:
        return  # out of range: covered by the refusal test
    assert control is not None
    assert TimeControl.parse(describe(control)) == control


def test_running_clock_charges_only_the_running_seat() -> None:
    clock = Clock.new(TimeControl(60_000, 0)).start(0, now=100.0)
    assert clock.remaining(now=110.0) == (50_000, 60_000)
    assert clock.remaining_ms == (60_000, 60_000), "the value itself does not change"


def test_press_adds_the_increment_and_starts_the_other_seat() -> None:
    clock = Clock.new(TimeControl(60_000, 2_000)).start(0, now=0.0)
    clock = clock.press(1, now=5.0)
    assert clock.running == 1
    assert clock.remaining(now=5.0) == (57_000, 60_000)
    assert clock.remaining(now=8.5) == (57_000, 56_500)


@given(
    base_ms=st.integers(1_000, 600_000),
    increment_ms=st.integers(0, 30_000),
    seat=st.sampled_from((0, 1)),
    used_s=st.floats(0.0, 900.0),
)
def test_press_is_the_remaining_times_with_the_movers_increment(
    base_ms: int, increment_ms: int, seat: int, used_s: float
) -> None:
    """``press`` writes ``remaining`` out for speed: the two must agree, a flagged seat included."""
    clock = Clock.new(TimeControl(base_ms, increment_ms)).start(seat, now=50.0)
    now = 50.0 + used_s
    expected = list(clock.remaining(now))
    expected[seat] += increment_ms
    pressed = clock.press(1 - seat, now)
    assert pressed.remaining_ms == tuple(expected)
    assert (pressed.running, pressed.started_at) == (1 - seat, now)


def test_flag_falls_exactly_at_the_deadline() -> None:
    clock = Clock.new(TimeControl(2_000, 0)).start(1, now=10.0)
    assert clock.deadline() == pytest.approx(12.0)
    assert clock.flagged(now=11.999) is None
    assert clock.flagged(now=12.0) == 1
    assert clock.remaining(now=20.0) == (2_000, 0), "a flagged time shows zero, never less"


def test_stopped_clock_runs_no_more() -> None:
    clock = Clock.new(TimeControl(10_000, 5_000)).start(0, now=0.0).stop(now=3.0)
    assert clock.running is None
    assert clock.deadline() is None
    assert clock.flagged(now=1000.0) is None
    assert clock.remaining(now=1000.0) == (7_000, 10_000), "stopping adds no increment"


@given(
    base_ms=st.integers(1_000, 600_000),
    running=st.sampled_from([0, 1]),
    started_at=st.floats(0, 1e6),
    elapsed_s=st.floats(-5, 1_000),
)
def test_remaining_times_never_go_below_zero_and_a_clock_never_runs_backwards(
    base_ms: int, running: int, started_at: float, elapsed_s: float
) -> None:
    """A clock read before its start (the host's time is monotonic, but a caller's need not be) has used
    no time; a seat past its flag shows zero."""
    clock = Clock(TimeControl(base_ms, 0), (base_ms, base_ms), running, started_at)
    now = started_at + elapsed_s
    used = max(0, round((now - started_at) * 1000))
    expected = [base_ms, base_ms]
    expected[running] = max(0, base_ms - used)
    assert clock.elapsed_ms(now) == used
    assert clock.remaining(now) == tuple(expected)
    assert (clock.flagged(now) == running) == (expected[running] == 0)
