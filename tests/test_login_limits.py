"""The limits on logins and registrations: attempts per key, lockouts that double past wrong passwords."""

from __future__ import annotations

from server.login_limits import LoginGuard, seconds_text
from server.text import name_key


def test_past_the_free_failures_each_wrong_password_locks_out_twice_as_long_up_to_the_cap() -> None:
    guard = LoginGuard(rate_per_s=100.0, burst=100, free_failures=2, max_lockout_s=8.0)
    keys = ["name:ada"]
    now = 0.0
    for _ in range(2):
        guard.failed(keys, now)
        assert guard.wait_s(keys, now) == 0
    windows = []
    for _ in range(6):
        guard.failed(keys, now)
        windows.append(guard.wait_s(keys, now))
        now += windows[-1]
        assert guard.wait_s(keys, now) == 0  # (the window has passed)
    assert windows == [1, 2, 4, 8, 8, 8]
    guard.succeeded(keys)
    guard.failed(keys, now)
    assert guard.wait_s(keys, now) == 0  # a success started the count again


def test_any_locked_key_holds_the_attempt_back_and_others_stay_free() -> None:
    guard = LoginGuard(rate_per_s=100.0, burst=100, free_failures=0, max_lockout_s=60.0)
    guard.failed(["address:10.0.0.1"], 0.0)
    assert guard.wait_s(["name:bob", "address:10.0.0.1"], 0.5) == 0.5
    assert guard.wait_s(["name:bob", "address:10.0.0.2"], 0.5) == 0


def test_attempts_right_or_wrong_spend_the_allowance() -> None:
    guard = LoginGuard(rate_per_s=0.5, burst=3, free_failures=5, max_lockout_s=60.0)
    assert [guard.wait_s(["name:eve"], 0.0) for _ in range(4)] == [0, 0, 0, 2.0]
    assert guard.wait_s(["name:eve"], 2.0) == 0  # one more after its time
    assert guard.wait_s(["name:someone else"], 2.0) == 0


def test_names_are_compared_without_case_or_compatibility_forms() -> None:
    assert name_key("Ada Lovelace") == name_key("ADA LOVELACE") == name_key("ａｄａ ｌｏｖｅｌａｃｅ")
    assert name_key("Straße") == name_key("STRASSE")
    assert name_key("Ada") != name_key("Adam")
    assert seconds_text(0.2) == "1 s" and seconds_text(4.5) == "5 s"
