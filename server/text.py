"""What text from players may hold: names and chat lines that show what they say and nothing else.

A name is shown beside every move, seat and lobby entry; a chat line (or a bot
status note) beside the board. Unicode lets text lie about itself:

- bidirectional embeddings, overrides and isolates (U+202A-U+202E,
  U+2066-U+2069) turn the direction of everything after them until a
  terminator that a hostile line leaves out, so a line can reverse what
  follows it on the page;
- zero-width and other format characters (U+200B-U+200F, U+2060, U+FEFF,
  U+061C, ...) are invisible, so two names that look alike differ, or a name
  looks empty;
- control characters and line or paragraph separators break lines and logs;
- combining marks stack: dozens on one letter ("Zalgo" text) draw over the lines
  above and below it.

Names are held to the strictest rule, since they stand for a player everywhere:
normalised to NFC (so one name has one spelling), stripped, and made only of
characters that are seen, or spaces. Chat keeps the format characters that real
writing needs (the zero-width joiner of emoji sequences, the non-joiner of
Persian, the direction marks of Arabic and Hebrew, none of which reaches past
its neighbours) and refuses the bidi controls that do. Both hold marks to
:data:`MAX_STACKED_MARKS` on one character, counted the same way.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from server.errors import ErrorCode, ProtocolError

SPACES = " \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
"""The space separators (Unicode's category Zs), which are stripped from either end of a name or a line.
Not all that ``str.strip`` takes: a tab, a line break or another control character at an end is refused
like one anywhere else, as docs/protocol.md says, not quietly dropped."""

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Embeddings, overrides and isolates, with their terminators: each turns the direction of what follows."""

INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
"""Hangul fillers: letters by category, blank on screen (the usual trick for a name that shows nothing)."""

MAX_STACKED_MARKS = 4
"""Combining marks allowed in a row, the limit UTS #39 (Unicode's security mechanisms) suggests: real
writing needs at most 4 (Vietnamese 2, Tibetan stacks 3, Burmese and pointed Hebrew with cantillation
4), Zalgo dozens. UAX #15's Stream-Safe Text Format allows 30, a bound for normalisers, not for a page.
Counted in the canonical decomposition (NFD), so names (NFC) and chat (as sent) count alike: nonspacing
and enclosing marks (Mn, Me) and anything else with a combining class. Not by class alone: Thai U+0E47,
Tibetan subjoined letters and enclosing circles have class 0 and stack as high. A spacing mark (Mc)
takes room like a letter, so starts a new stack; a format character, a Hangul filler or a code point not
yet assigned (to this Python's Unicode) shows nothing, so neither counts nor ends one (else a zero-width
joiner every 4 marks would let a tower through)."""

_SHOW_NOTHING = frozenset({"Cf", "Cn"})
"""Format characters and unassigned code points: between marks, they do not end a stack."""
_STACKING_CATEGORIES = frozenset({"Mn", "Me"})
"""Nonspacing and enclosing marks: drawn over, under or around the character before them."""

_REFUSED_IN_NAMES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (bidi, zero-width), surrogate, private-use, unassigned, line and paragraph separators."""
_REFUSED_IN_LINES = frozenset({"Cc", "Cs", "Zl", "Zp"})
"""Control, surrogate, line and paragraph separators: the bidi controls are refused on top of these."""


def clean_name(text: str, max_length: int) -> str:
    """A player's name as everyone will see it: NFC, stripped, 1 to ``max_length`` characters, each one
    visible or a space. Raises ``bad_field`` naming the first character that is not."""
    cleaned = _stripped(unicodedata.normalize("NFC", text), "name", max_length)
    for character in cleaned:
        if not _shows_in_name(character):
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"name contains {_describe(character)}, which does not show: names are visible characters",
            )
    _refuse_stacked_marks(cleaned, "name")
    return cleaned


def repaired_name(text: str, max_length: int) -> str | None:
    """What is left of a name stored before :func:`clean_name`'s rules: NFC, the characters that do not
    show dropped, stripped, cut to ``max_length``; ``None`` if nothing shows. For names that cannot be
    refused any more, only mended (migration 0002). It keeps stacked marks as they were: the limit on
    them came later, so a mended name may still stack more than :data:`MAX_STACKED_MARKS`."""
    shown = "".join(filter(_shows_in_name, unicodedata.normalize("NFC", text)))
    # Again: a dropped character may have kept an accent from its letter.
    shown = unicodedata.normalize("NFC", shown).strip(SPACES)
    return shown[:max_length].rstrip(SPACES) or None


def _shows_in_name(character: str) -> bool:
    return unicodedata.category(character) not in _REFUSED_IN_NAMES and character not in INVISIBLE_LETTERS


def clean_text(text: str, what: str, max_length: int) -> str:
    """A chat line (or a note) as given but stripped: 1 to ``max_length`` characters, something visible
    among them, no control character, line break or bidi control. Raises ``bad_field`` otherwise."""
    cleaned = _stripped(text, what, max_length)
    for character in cleaned:
        if character in BIDI_CONTROLS:
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"{what} contains {_describe(character)}, which would turn the direction of what follows",
            )
        if unicodedata.category(character) in _REFUSED_IN_LINES:
            raise ProtocolError(ErrorCode.BAD_FIELD, f"{what} contains control characters")
    _refuse_stacked_marks(cleaned, what)
    if all(
        character.isspace() or unicodedata.category(character) == "Cf" or character in INVISIBLE_LETTERS
        for character in cleaned
    ):
        raise ProtocolError(ErrorCode.BAD_FIELD, f"{what} shows nothing: it is only invisible characters")
    return cleaned


def _refuse_stacked_marks(text: str, what: str) -> None:
    """Raises ``bad_field`` if ``text`` stacks more than :data:`MAX_STACKED_MARKS` combining marks on
    one character, which would draw over the lines around it."""
    if any(depth > MAX_STACKED_MARKS for _, depth in _stacking(text)):
        raise ProtocolError(
            ErrorCode.BAD_FIELD,
            f"{what} stacks more than {MAX_STACKED_MARKS} combining marks on one character",
        )


def unstacked(text: str) -> str:
    """``text`` as it is if it keeps to :data:`MAX_STACKED_MARKS`, else without the marks past it on each
    character (in NFC): for text stored before the limit, which can only be mended now (migration 0005)."""
    stacking = list(_stacking(text))
    if all(depth <= MAX_STACKED_MARKS for _, depth in stacking):
        return text
    kept = "".join(character for character, depth in stacking if depth <= MAX_STACKED_MARKS)
    return unicodedata.normalize("NFC", kept)


def _stacking(text: str) -> Iterator[tuple[str, int]]:
    """Each character of ``text``'s canonical decomposition, with how many marks it makes on the character
    they stack on if it is one of them, else 0 (see :data:`MAX_STACKED_MARKS` for what counts)."""
    stacked = 0
    for character in unicodedata.normalize("NFD", text):
        if unicodedata.category(character) in _STACKING_CATEGORIES or unicodedata.combining(character):
            stacked += 1
            yield character, stacked
            continue
        if unicodedata.category(character) not in _SHOW_NOTHING and character not in INVISIBLE_LETTERS:
            stacked = 0
        yield character, 0


def _stripped(text: str, what: str, max_length: int) -> str:
    cleaned = text.strip(SPACES)
    if not cleaned:
        raise ProtocolError(ErrorCode.BAD_FIELD, f"{what} is blank")
    if len(cleaned) > max_length:
        raise ProtocolError(ErrorCode.BAD_FIELD, f"{what} is longer than {max_length} characters")
    return cleaned


def _describe(character: str) -> str:
    """``U+202E (RIGHT-TO-LEFT OVERRIDE)``: a character that cannot be shown, named so people can find it."""
    name = unicodedata.name(character, "")
    return f"U+{ord(character):04X} ({name})" if name else f"U+{ord(character):04X}"
