"""What text from players may hold: names and chat lines that show what they say and nothing else.

A name is shown beside every move, seat and lobby entry; a chat line (or a bot
status note) beside the board. Unicode lets text lie about itself:

- bidirectional embeddings, overrides and isolates (U+202A-U+202E,
  U+2066-U+2069) turn the direction of everything after them until a
  terminator that a hostile line leaves out, so a line can reverse what
  follows it on the page;
- zero-width and other format characters (U+200B-U+200F, U+2060, U+FEFF,
  U+061C, ...), and the rest of Unicode's default-ignorable code points
  (variation selectors, the combining grapheme joiner, fillers, ...), are
  invisible, and a few other characters draw nothing (the braille pattern
  blank), so two names that look alike differ, or a name or a line looks empty;
- control characters and line or paragraph separators break lines and logs;
- combining marks stack: dozens on one letter ("Zalgo" text) draw over the lines
  above and below it.

Names are held to the strictest rule, since they stand for a player everywhere:
normalised to NFC (so one name has one spelling), stripped, and made only of
characters that are seen, or spaces. Chat keeps the invisible characters that
real writing needs (the zero-width joiner and the variation selectors of emoji
sequences, the non-joiner of Persian, the direction marks of Arabic and Hebrew,
none of which reaches past its neighbours), refuses the bidi controls that do,
and refuses a line in which nothing shows. Both hold marks to
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

DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator
    (0x200B, 0x200F),  # zero-width space, non-joiner and joiner, direction marks
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format characters
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors 1-16
    (0xFEFF, 0xFEFF),  # zero-width no-break space (byte order mark)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # unassigned
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE0FFF),  # tags, variation selectors 17-256, unassigned
)
"""Unicode's Default_Ignorable_Code_Point ranges (first, last), from DerivedCoreProperties.txt of Unicode
14.0.0, the version of Python 3.11's unicodedata, which lacks the property. Code points that renderers
show nothing for unless they support them, and then mostly as a change to their neighbours (a selector
picks a glyph, a joiner a shape): format characters, selectors and fillers of several general categories
(Cf, Mn, Lo, Cn), so no category test finds them all."""

INVISIBLE = frozenset(
    chr(code) for first, last in DEFAULT_IGNORABLE_RANGES for code in range(first, last + 1)
)
"""Every default-ignorable code point, as a set so each character of a name or a line costs one lookup."""

BLANK_CHARACTERS = frozenset("\u2800\U0001d159\U00016fe4")
"""Characters not default-ignorable that draw nothing all the same: the braille pattern blank and the
musical null notehead (symbols with room but no ink, both used for names that look empty) and the Khitan
small script filler (a mark that holds an empty place in a Khitan character)."""

_DRAWS_NOTHING = INVISIBLE | BLANK_CHARACTERS
"""What does not show: in a name it is refused, in a line it is kept but does not count as something said."""

MAX_STACKED_MARKS = 4
"""Combining marks allowed in a row, the limit UTS #39 (Unicode's security mechanisms) suggests: real
writing needs at most 4 (Vietnamese 2, Tibetan stacks 3, Burmese and pointed Hebrew with cantillation
4), Zalgo dozens. UAX #15's Stream-Safe Text Format allows 30, a bound for normalisers, not for a page.
Counted in the canonical decomposition (NFD), so names (NFC) and chat (as sent) count alike: nonspacing
and enclosing marks (Mn, Me) and anything else with a combining class. Not by class alone: Thai U+0E47,
Tibetan subjoined letters and enclosing circles have class 0 and stack as high. A spacing mark (Mc)
takes room like a letter, so starts a new stack, and so does a blank that is no mark, like a space; a format
character, another invisible one that is not a mark (a Hangul filler) or a code point not yet assigned
(to this Python's Unicode) takes none, so neither counts nor ends one (else a zero-width joiner every 4
marks would let a tower through)."""

_SHOW_NOTHING = frozenset({"Cf", "Cn"})
"""Format characters and unassigned code points: between marks, they do not end a stack."""
_STACKING_CATEGORIES = frozenset({"Mn", "Me"})
"""Nonspacing and enclosing marks: drawn over, under or around the character before them."""

_REFUSED_IN_NAMES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (bidi, zero-width), surrogate, private-use, unassigned, line and paragraph separators."""
_REFUSED_IN_LINES = frozenset({"Cc", "Cs", "Zl", "Zp"})
"""Control, surrogate, line and paragraph separators: the bidi controls are refused on top of these."""


_PRESENTATION_SELECTORS = dict.fromkeys(map(ord, "\ufe0e\ufe0f"))
"""Text and emoji presentation selectors: keyboards add U+FE0F after emoji (a heart typed on a phone is
U+2764 U+FE0F), so a name drops them rather than be refused; the emoji then takes its default look."""


def clean_name(text: str, max_length: int) -> str:
    """A player's name as everyone will see it: NFC, presentation selectors dropped, stripped, 1 to
    ``max_length`` characters, each one visible or a space. Raises ``bad_field`` naming the first
    character that is not."""
    # (normalised after the selectors go: ``e`` U+FE0F U+0301 is then ``é``, one spelling of one name)
    cleaned = _stripped(
        unicodedata.normalize("NFC", text.translate(_PRESENTATION_SELECTORS)), "name", max_length
    )
    for character in cleaned:
        if not _shows_in_name(character):
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"name contains {_describe(character)}, which does not show: names are visible characters",
            )
    _refuse_stacked_marks(cleaned, "name")
    return cleaned


def check_clean_name(text: str, max_length: int) -> None:
    """Raises ``bad_field`` unless ``text`` is a name as :func:`clean_name` leaves it: for names that come
    cleaned already, from elsewhere (another instance's lobby entries, server/lobby.py), and are shown as
    they come. One that :func:`clean_name` would refuse is refused with its reason; one it would change
    (not NFC, spaces around it, a presentation selector) is refused too, not mended, since whoever sent it
    did not clean it. The message names no character of ``text`` but by its code point: it may be logged."""
    if clean_name(text, max_length) != text:
        raise ProtocolError(
            ErrorCode.BAD_FIELD,
            "name is not as names are kept: NFC, stripped, without presentation selectors",
        )


def repaired_name(text: str, max_length: int) -> str | None:
    """What is left of a name stored before :func:`clean_name`'s rules: NFC, the characters that do not
    show dropped, stripped, cut to ``max_length``; ``None`` if nothing shows. For names that cannot be
    refused any more, only mended (migrations 0002 and 0006). It keeps stacked marks as they were: the
    limit on them came later, so a mended name may still stack more than :data:`MAX_STACKED_MARKS`."""
    shown = "".join(filter(_shows_in_name, unicodedata.normalize("NFC", text)))
    # Again: a dropped character may have kept an accent from its letter.
    shown = unicodedata.normalize("NFC", shown).strip(SPACES)
    return shown[:max_length].rstrip(SPACES) or None


def _shows_in_name(character: str) -> bool:
    return character not in _DRAWS_NOTHING and unicodedata.category(character) not in _REFUSED_IN_NAMES


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
    if not shows_something(cleaned):
        raise ProtocolError(ErrorCode.BAD_FIELD, f"{what} shows nothing: it is only invisible characters")
    return cleaned


def shows_something(text: str) -> bool:
    """Whether any character of ``text`` is drawn: not a space, a format character or another invisible
    one (:data:`INVISIBLE`, :data:`BLANK_CHARACTERS`). A line in which none is says nothing."""
    return any(
        character not in _DRAWS_NOTHING
        and not character.isspace()
        and unicodedata.category(character) != "Cf"
        for character in text
    )


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
        if character not in INVISIBLE and unicodedata.category(character) not in _SHOW_NOTHING:
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


def name_key(name: str) -> str:
    """How claimed names are compared: case folded and compatibility forms made one (``ＡＬＩＣＥ`` is
    ``alice``), so no one claims a name that only looks different from another's."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
