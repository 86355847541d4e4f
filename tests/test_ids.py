"""The ids the server makes (server/ids.py): a match's sorts by the time it was made, and is safe in URLs
and MQTT topics."""

from __future__ import annotations

import re
import time

from hypothesis import given
from hypothesis import strategies as st

from server.ids import MATCH_ID_LENGTH, RANDOM_BITS, SORTED_ALPHABET, TIME_BITS, match_id_at, new_match_id

milliseconds = st.integers(min_value=0, max_value=(1 << TIME_BITS) - 1)
random_bits = st.integers(min_value=0, max_value=(1 << RANDOM_BITS) - 1)
SAFE = re.compile(r"[A-Za-z0-9_-]+")  # (base64url's characters: no "/", "+" or "#" for a topic)


def test_the_alphabet_is_url_safe_and_in_ascii_order() -> None:
    assert len(set(SORTED_ALPHABET)) == 64 and list(SORTED_ALPHABET) == sorted(SORTED_ALPHABET)
    assert SAFE.fullmatch(SORTED_ALPHABET)


@given(milliseconds, random_bits, milliseconds, random_bits)
def test_match_ids_compare_as_their_time_then_their_random_bits(
    ms_a: int, bits_a: int, ms_b: int, bits_b: int
) -> None:
    a, b = match_id_at(ms_a, bits_a), match_id_at(ms_b, bits_b)
    assert len(a) == len(b) == MATCH_ID_LENGTH == 15
    assert (a < b) == ((ms_a, bits_a) < (ms_b, bits_b))
    assert (a == b) == ((ms_a, bits_a) == (ms_b, bits_b))


@given(milliseconds, random_bits)
def test_a_match_id_spells_its_time_and_random_bits(ms: int, bits: int) -> None:
    value = 0
    for character in match_id_at(ms, bits):
        value = value << 6 | SORTED_ALPHABET.index(character)
    assert (value >> RANDOM_BITS, value & ((1 << RANDOM_BITS) - 1)) == (ms, bits)


def test_new_match_ids_are_safe_unique_and_later_ones_sort_after() -> None:
    first = [new_match_id() for _ in range(1_000)]
    time.sleep(0.002)  # (a later millisecond)
    later = new_match_id()
    assert len(set(first)) == len(first)
    assert all(SAFE.fullmatch(match_id) for match_id in first)
    assert later > max(first)
