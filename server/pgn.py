"""A stored chess match as PGN, the file every chess program reads (python-chess and Lichess among them).

Moves are written in SAN (the game's :meth:`games.base.Position.display_move`), and each move that a bot
sent with its search carries it as an ``[%eval ...]`` comment, in pawns from White's point of view, or
``#N`` for a mate in N moves (negative when Black mates), with the search's depth after a comma: the
convention of Lichess and python-chess (``chess.pgn.GameNode.eval``). Scores on the wire are the
mover's: centipawns, or a mate as ``MATE_SCORE`` minus the plies to it (docs/protocol.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from games import Game
from server.clock import TimeControl
from server.storage.records import EngineInfo, MatchRecord, MoveRecord

MATE_SCORE = 1_000_000
"""A bot's score for mating on the move it sends; a mate ``n`` plies away (that move included) scores
``MATE_SCORE - n``, a mate against it ``n - MATE_SCORE``."""
MATE_PLIES = 10_000
"""Scores within this of ``MATE_SCORE`` announce a mate; every other score is an evaluation."""
LINE_WIDTH = 79
"""PGN's export format keeps lines under 80 characters."""

_TERMINATIONS = (("ran out of time", "time forfeit"), ("did not come back", "abandoned"))
"""PGN's ``Termination`` values for the reasons that are not the game's own ``normal`` end."""


def tag_pair(name: str, value: str) -> str:
    """``[Name "value"]``, the value's backslashes and quotes escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'[{name} "{escaped}"]'


def pgn_result(record: MatchRecord, game: Game) -> str:
    """``1-0`` White won, ``0-1`` Black won, ``1/2-1/2``, or ``*`` for a game not finished (or aborted)."""
    if record.status != "finished":
        return "*"
    if record.winner is None:
        return "1/2-1/2"
    return "1-0" if game.sides[record.winner] == "White" else "0-1"


def pgn_text(record: MatchRecord, game: Game, date: str, reason: str | None) -> str:
    """The match as PGN: the seven tag roster, time control and termination, then the movetext.

    ``reason`` is the result's reason with its seats named by side (``Black resigned``); it also closes
    the movetext as a comment, for people (PGN's ``Termination`` has only a few fixed words).
    """
    players = {seat.seat: seat.player_name for seat in record.seats}
    result = pgn_result(record, game)
    tags = [
        ("Event", f"Ply Arena match {record.id}"),
        ("Site", "Ply Arena"),
        ("Date", date),
        ("Round", "-"),
        ("White", players.get(0, "?")),
        ("Black", players.get(1, "?")),
        ("Result", result),
        ("TimeControl", _time_control(str(record.options.get("time_control", "untimed")))),
    ]
    if record.status == "finished":
        tags.append(("Termination", _termination(reason or "")))
    moves = sorted(record.moves, key=lambda move: move.ply)
    words = [*_movetext(game, moves), *([f"{{{reason}}}"] if reason else []), result]
    header = "\n".join(tag_pair(name, value) for name, value in tags)
    return f"{header}\n\n{_wrapped(words)}\n"


def _movetext(game: Game, moves: list[MoveRecord]) -> list[str]:
    """Move numbers, SAN moves and their eval comments, one word each (a comment is never broken)."""
    notation = [move.notation for move in moves]
    positions = game.history(notation)
    shown = game.displayed(positions, notation) or notation
    words: list[str] = []
    for index, (move, san) in enumerate(zip(moves, shown, strict=True)):
        if index % 2 == 0:
            words.append(f"{index // 2 + 1}.")
        elif words[-1].startswith("{"):
            words.append(f"{index // 2 + 1}...")  # Black's move after a comment names its number again
        words.append(san)
        comment = eval_comment(move.engine, white_moved=positions[index].turn == 0)
        if comment is not None:
            words.append(comment)
    return words


def eval_comment(engine: EngineInfo | None, *, white_moved: bool) -> str | None:
    """``{[%eval 0.35,12]}`` for a bot's move (``None`` without a score): its score seen from White, then
    its depth, which a move from a book has none of (``{[%eval 0.35]}``)."""
    if engine is None or engine.score is None:
        return None
    score = engine.score if white_moved else -engine.score
    depth = f",{engine.depth}" if engine.depth is not None and engine.source != "book" else ""
    if abs(score) > MATE_SCORE - MATE_PLIES:
        # Plies to mate counted from before the move; the mating side's moves left after it.
        plies = MATE_SCORE - abs(score)
        mover_mates = (score > 0) == white_moved
        moves_left = (plies - 1) // 2 if mover_mates else plies // 2
        # ``#0``, mate on the board, has no sign: the side to move is the one mated (python-chess reads so).
        value = f"#{'-' if score < 0 and moves_left else ''}{moves_left}"
    else:
        value = f"{score / 100:.2f}"
    return f"{{[%eval {value}{depth}]}}"


def _time_control(text: str) -> str:
    """PGN's time control, in seconds (``300+3``), from ours in minutes (``5+3``); ``-`` when untimed."""
    try:
        control = TimeControl.parse(text)
    except ValueError:
        return "?"
    if control is None:
        return "-"
    return f"{control.base_ms // 1000}+{control.increment_ms // 1000}"


def _termination(reason: str) -> str:
    for words, termination in _TERMINATIONS:
        if words in reason:
            return termination
    return "normal"


def _wrapped(words: Iterable[str]) -> str:
    """``words`` joined by spaces into lines of at most :data:`LINE_WIDTH` characters, none broken."""
    lines: list[str] = []
    line = ""
    for word in words:
        if line and len(line) + 1 + len(word) > LINE_WIDTH:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(lines)
