"""A stored match as text in its game's usual notation: PGN for chess, PDN for checkers, a numbered move
list otherwise.

All start with PGN-style tag pairs (``[Name "value"]``), which is what PDN
requires and what people already know from chess. A chess export is PGN as
python-chess and Lichess import it: SAN moves, and each bot move's search as
an ``[%eval ...]`` comment.
"""

from __future__ import annotations

import re
import textwrap

from games import Game
from server.pgn import pgn_result, pgn_text, tag_pair
from server.storage.records import MatchRecord

PDN_GAME_TYPE_ENGLISH_DRAUGHTS = "21"
_SEAT = re.compile(r"\bseat ([01])\b")


def export_extension(game: Game) -> str:
    """The file name extension of ``game``'s export: ``pgn``, ``pdn`` or ``txt``."""
    return {"chess": "pgn", "checkers": "pdn"}.get(game.name, "txt")


def export_text(record: MatchRecord, game: Game) -> str:
    """The match as a text file: PGN for chess, PDN for checkers, tag pairs and a move list otherwise."""
    if game.name == "chess":
        return pgn_text(record, game, _date(record), _by_side(record.reason, game) if record.reason else None)
    if game.name == "checkers":
        return _pdn_text(record, game)
    return _plain_text(record, game)


def _pdn_text(record: MatchRecord, game: Game) -> str:
    """PDN: Black and White by name, a PGN-style result, and the numbered moves wrapped at 79 columns."""
    players = {seat.seat: seat.player_name for seat in record.seats}
    by_side = {side: players.get(seat, "?") for seat, side in enumerate(game.sides)}
    result = pgn_result(record, game)
    tags = [
        *_opening_tags(record),
        ("Round", "-"),
        ("Black", by_side.get("Black", "?")),
        ("White", by_side.get("White", "?")),
        ("Result", result),
        ("GameType", PDN_GAME_TYPE_ENGLISH_DRAUGHTS),
    ]
    movetext = textwrap.fill(" ".join([*_numbered(_moves(record)), result]), width=79)
    return _text(tags, record, game, movetext)


def _plain_text(record: MatchRecord, game: Game) -> str:
    """The other games: each side's player, the result in words, a numbered line per pair of plies."""
    players = {seat.seat: seat.player_name for seat in record.seats}
    result = _result_words(record, game)
    tags = [
        *_opening_tags(record),
        ("Game", game.title),
        *((side, players.get(seat, "?")) for seat, side in enumerate(game.sides)),
        ("Result", result),
    ]
    return _text(tags, record, game, "\n".join([*_numbered_lines(_moves(record)), result]))


def _opening_tags(record: MatchRecord) -> list[tuple[str, str]]:
    return [("Event", f"Ply Arena match {record.id}"), ("Site", "Ply Arena"), ("Date", _date(record))]


def _text(tags: list[tuple[str, str]], record: MatchRecord, game: Game, movetext: str) -> str:
    """The tag pairs, with the time control and how the match ended, then the moves."""
    tags = [*tags, ("TimeControl", str(record.options.get("time_control", "untimed")))]
    if record.reason:
        tags.append(("Termination", _by_side(record.reason, game)))
    header = "\n".join(tag_pair(name, value) for name, value in tags)
    return f"{header}\n\n{movetext}\n"


def _moves(record: MatchRecord) -> list[str]:
    return [move.notation for move in sorted(record.moves, key=lambda move: move.ply)]


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
