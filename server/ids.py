"""The ids the server makes: a match's, which sorts by time, and the random ones of everything else.

A match's id is the key of its row and the first column of its moves' key. Random ids put each live
match's moves at a random place in that index, so that a commit of the flat-out window's thousands of
moves rewrote pages all over it; ids that begin with their time keep the live matches together at the
index's end, as UUIDv7 does for its rows: SQLite's writer committed a move for a quarter less CPU
(docs/performance.md). Match ids are public (``/api/matches`` lists them); what no one may
guess is a seat's token (:mod:`server.tokens`).
"""

from __future__ import annotations

import secrets
import time

SORTED_ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
"""64 URL- and topic-safe characters in ASCII order, so that ids written in them sort as their numbers."""
TIME_BITS = 42
"""Milliseconds since 1970, until the year 2109."""
RANDOM_BITS = 48
"""After the time: two matches made in the same millisecond collide once in some 10^14 pairs."""
MATCH_ID_LENGTH = (TIME_BITS + RANDOM_BITS) // 6
_SHIFTS = tuple(range(6 * (MATCH_ID_LENGTH - 1), -1, -6))


def new_match_id() -> str:
    """A match id of 15 characters: the time it was made, to the millisecond, then 48 random bits."""
    return match_id_at(time.time_ns() // 1_000_000, secrets.randbits(RANDOM_BITS))


def match_id_at(milliseconds: int, random_bits: int) -> str:
    """The match id of ``milliseconds`` since 1970 (modulo :data:`TIME_BITS`) and ``random_bits``: ids
    compare as these pairs do."""
    value = (milliseconds % (1 << TIME_BITS)) << RANDOM_BITS | random_bits % (1 << RANDOM_BITS)
    return "".join([SORTED_ALPHABET[value >> shift & 63] for shift in _SHIFTS])


def new_id() -> str:
    """A random, URL- and topic-safe id (an event log's)."""
    return secrets.token_urlsafe(8)
