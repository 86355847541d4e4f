"""A stored match as text in its game's usual notation: PDN for checkers, a numbered move list otherwise.

Both start with PGN-style tag pairs (``[Name "value"]``), which is what PDN
requires and what people already know from chess.
"""

from __future__ import annotations

import re
import textwrap

from games import Game
from server.storage.records import MatchRecord

PDN_GAME_TYPE_ENGLISH_DRAUGHTS = "21"
_SEAT = re.compile(r"\bseat ([01])\b")


def export_text(record: MatchRecord, game: Game) -> str:
    """The match as a text file: PDN for checkers, tag pairs and a move list for the other games."""
    players = {seat.seat: seat.player_name for seat in record.seats}
    tags = [("Event", f"Ply Arena match {record.id}"), ("Site", "Ply Arena"), ("Date", _date(record))]
    if game.name == "checkers":
        tags.append(("Round", "-"))
        by_side = {side: players.get(seat, "?") for seat, side in enumerate(game.sides)}
        tags += [("Black", by_side.get("Black", "?")), ("White", by_side.get("White", "?"))]
        result = _pdn_result(record, game)
        tags += [("Result", result), ("GameType", PDN_GAME_TYPE_ENGLISH_DRAUGHTS)]
    else:
        tags.append(("Game", game.title))
        tags += [(side, players.get(seat, "?")) for seat, side in enumerate(game.sides)]
        result = _result_words(record, game)
        tags.append(("Result", result))
    tags.append(("TimeControl", str(record.options.get("time_control", "untimed"))))
    if record.reason:
        tags.append(("Termination", _by_side(record.reason, game)))
    header = "\n".join(f'[{name} "{_escape(value)}"]' for name, value in tags)
    moves = [move.notation for move in sorted(record.moves, key=lambda move: move.ply)]
    if game.name == "checkers":
        movetext = textwrap.fill(" ".join([*_numbered(moves), result]), width=79)
    else:
        movetext = "\n".join([*_numbered_lines(moves), result])
    return f"{header}\n\n{movetext}\n"


def _numbered(moves: list[str]) -> list[str]:
    """``["1.", "11-15", "23-19", "2.", ...]``: a move number before each pair of plies."""
    words: list[str] = []
    for index, move in enumerate(moves):
        if index % 2 == 0:
            words.append(f"{index // 2 + 1}.")
        words.append(move)
    return words


def _numbered_lines(moves: list[str]) -> list[str]:
    return [f"{index // 2 + 1}. {' '.join(moves[index : index + 2])}" for index in range(0, len(moves), 2)]


def _pdn_result(record: MatchRecord, game: Game) -> str:
    if record.status != "finished":
        return "*"
    if record.winner is None:
        return "1/2-1/2"
    return "1-0" if game.sides[record.winner] == "White" else "0-1"


def _result_words(record: MatchRecord, game: Game) -> str:
    if record.status == "aborted":
        return "aborted"
    if record.status != "finished":
        return "*"
    return "draw" if record.winner is None else f"{game.sides[record.winner]} wins"


def _by_side(reason: str, game: Game) -> str:
    """``"seat 1 resigned"`` as ``"White resigned"``: a file read away from the server has no seats."""
    return _SEAT.sub(lambda seat: game.sides[int(seat[1])], reason)


def _date(record: MatchRecord) -> str:
    return (record.started_at or record.created_at).strftime("%Y.%m.%d")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
