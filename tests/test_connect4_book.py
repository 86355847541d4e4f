"""The Connect Four opening book: its format, its builders, and the shipped book."""

from __future__ import annotations

import gzip
import random
from functools import cache
from pathlib import Path

import pytest

from bots import perfect
from bots.connect4_book import Book, BookMove, book_ends, canonical, load, mirror_key, shipped_book
from bots.connect4_book_build import build
from bots.connect4_database import DatabaseMinimax, ScoreDatabase, huffman_code
from bots.connect4_solver import CompiledSearch, Search, SolverBudgetExceeded, solve
from bots.levels import choose_move, level
from games import get_game
from games.connect4 import ConnectFour
from plyarena.cli import main
from plyarena.commands.book import DEFAULT_ROOTS

LATE_ROOT = "4533217613545135"
"""A middle-game position (Red to move) that the exact solver settles in a blink."""
DATABASE_ROOT = "4533217613"
"""Ten stones, the side to move's last turn before twelve: its positions two plies on make a small
database of 12-stone positions."""


def mirrored(moves: str) -> str:
    return "".join(str(8 - int(column)) for column in moves)


def assert_best(position: ConnectFour, entry: BookMove) -> None:
    """``entry`` holds the exact score of ``position`` and a move that keeps it."""
    assert entry.score == solve(position).score, f"{position.key():#x}"
    after = position.play(entry.move)
    if after.outcome() is None:
        assert -solve(after).score == entry.score, f"{position.key():#x}: column {entry.move + 1}"


def test_mirroring_a_key_reflects_the_board() -> None:
    moves = "1234556"
    position, reflected = ConnectFour.from_moves(moves), ConnectFour.from_moves(mirrored(moves))
    assert mirror_key(position.key()) == reflected.key()
    assert mirror_key(mirror_key(position.key())) == position.key()
    assert canonical(position) == canonical(reflected) == min(position.key(), reflected.key())
    symmetric = ConnectFour.from_moves("4444")
    assert mirror_key(symmetric.key()) == symmetric.key()


def test_a_book_built_by_the_solver_plays_the_best_exact_score_everywhere() -> None:
    book = build([LATE_ROOT], plies=len(LATE_ROOT) + 4)
    assert book.entries and book.nodes > 0 and book.complete
    reached = own_turns(book, LATE_ROOT)
    assert {canonical(position) for position in reached} == set(book.entries)
    for position in reached:
        entry = book.lookup(position)
        assert entry is not None
        assert_best(position, entry)


def test_a_lookup_mirrors_the_move_of_a_mirrored_position() -> None:
    book = build([LATE_ROOT], plies=len(LATE_ROOT) + 1)
    entry = book.lookup(ConnectFour.from_moves(LATE_ROOT))
    reflected = book.lookup(ConnectFour.from_moves(mirrored(LATE_ROOT)))
    assert entry is not None and reflected is not None
    assert reflected.move == 6 - entry.move and reflected.score == entry.score
    assert entry.value == (entry.score > 0) - (entry.score < 0)


def test_a_stopped_build_is_partial_and_a_resumed_one_ends_with_the_same_book(tmp_path: Path) -> None:
    plies = len(LATE_ROOT) + 4
    whole = build([LATE_ROOT], plies=plies)
    saved: list[Book] = []
    stopped = build([LATE_ROOT], plies=plies, seconds=0, checkpoint=saved.append)
    assert not stopped.complete and saved[-1] == stopped
    resumed = build([LATE_ROOT], plies=plies, earlier=stopped)
    assert resumed.complete and resumed.entries == whole.entries
    halfway = Book(dict(list(whole.entries.items())[: len(whole.entries) // 2]), plies, (LATE_ROOT,))
    assert build([LATE_ROOT], plies=plies, earlier=halfway).entries == whole.entries


def test_a_book_survives_saving_and_loading(tmp_path: Path) -> None:
    book = build([LATE_ROOT], plies=len(LATE_ROOT) + 4)
    path = tmp_path / "book.json.gz"
    book.save(path)
    assert load(path) == Book(book.entries, book.plies, book.roots, book.nodes, round(book.seconds, 1))
    other = tmp_path / "other.json.gz"
    with gzip.open(other, "wt", encoding="utf-8") as file:
        file.write('{"format": "something else"}')
    with pytest.raises(ValueError, match="not a Connect Four book"):
        load(other)


def test_the_database_code_is_the_documented_huffman_code() -> None:
    # "4": columns 1-3 empty (0 each), column 4 one first-player stone (10, then 0), 5-7 empty, final 0.
    position = ConnectFour.from_moves("4")
    assert huffman_code(position.stones(0), position.mask) == 0b0001000000
    # A full column ends with a 0 too: "444444" is 10 11 10 11 10 11 then 0 in column 4.
    full = ConnectFour.from_moves("444444")
    assert huffman_code(full.stones(0), full.mask) == int("000" + "101110111011" + "0" + "000" + "0", 2)
    # Twelve stones take 32 bits, read as a signed number: a first-player stone at the bottom of column 1
    # sets the top bit.
    twelve = ConnectFour.from_moves("145242233444")
    assert -(1 << 31) <= huffman_code(twelve.stones(0), twelve.mask) < 0


def distance_record(position: ConnectFour, score: int) -> bytes:
    """``position``'s record as BitBully's database stores it, from its exact score."""
    if score == 0:
        stored = 0
    else:
        winners_stones = 22 - abs(score)
        stones_at_end = 2 * winners_stones - (1 if score > 0 else 0)  # the first player's stones are odd
        stored = (100 - (stones_at_end - position.ply)) * (1 if score > 0 else -1)
    code = huffman_code(position.stones(0), position.mask)
    return code.to_bytes(4, "big", signed=True) + stored.to_bytes(1, "big", signed=True)


@cache
def small_database() -> tuple[ScoreDatabase, bytes]:
    """The exact scores of every 12-stone position two plies below :data:`DATABASE_ROOT`, as a file."""
    search = Search(None, 1 << 22)  # one table: the positions share most of their lines
    records = b"".join(
        distance_record(position, search.score(position))
        for position in positions_at(ConnectFour.from_moves(DATABASE_ROOT), 12)
        if not position.can_win_next()  # the database leaves out positions won at once
    )
    return ScoreDatabase.from_bytes(records, "small"), records


needs_compiled_solver = pytest.mark.skipif(
    CompiledSearch is None, reason="solving fifty 12-stone positions takes minutes in Python"
)


@needs_compiled_solver
def test_the_database_reads_exact_scores_of_a_position_and_its_mirror_image(tmp_path: Path) -> None:
    database, records = small_database()
    path = tmp_path / "book_12ply_distances.dat"
    path.write_bytes(records)
    assert len(ScoreDatabase.read(path)) == len(database) > 10
    for position in positions_at(ConnectFour.from_moves(DATABASE_ROOT), 12)[:5]:
        if not position.can_win_next():
            assert database.score(position) == database.score(position.mirrored()) == solve(position).score
    with pytest.raises(ValueError, match="12 stones, not 11"):
        database.score(ConnectFour.from_moves("45332176135"))
    with pytest.raises(KeyError, match="no 12-stone position"):
        database.score(ConnectFour.from_moves("111222333444"))
    (tmp_path / "odd.dat").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ValueError, match="5-byte records"):
        ScoreDatabase.read(tmp_path / "odd.dat")


@needs_compiled_solver
def test_a_book_from_the_database_matches_the_solver() -> None:
    database, _ = small_database()
    root = ConnectFour.from_moves(DATABASE_ROOT)
    assert DatabaseMinimax(database).score(root) == solve(root).score
    book = build([DATABASE_ROOT], plies=12, database=database)
    reached = own_turns(book, DATABASE_ROOT)
    assert len(reached) == len(book.entries) == 1
    for position in reached:
        entry = book.lookup(position)
        assert entry is not None
        assert_best(position, entry)
    with pytest.raises(ValueError, match="up to 12 stones, not 13"):
        build([DATABASE_ROOT], plies=13, database=database)


def test_the_minimax_scores_a_position_with_no_safe_move_as_the_solver_does() -> None:
    # The first player's three in a row on the bottom row is open at both ends: whatever the second
    # player blocks, the first wins with its fourth stone (-(22 - 4) for the second, to move).
    cornered = ConnectFour.from_moves("27374")
    assert cornered.non_losing_moves() == 0
    assert DatabaseMinimax(ScoreDatabase({})).score(cornered) == solve(cornered).score == -18


def positions_at(root: ConnectFour, ply: int) -> list[ConnectFour]:
    """The unfinished positions ``ply`` stones deep below ``root``."""
    layer = [root]
    while layer and layer[0].ply < ply:
        children = (position.play(move) for position in layer for move in position.legal_moves())
        layer = [child for child in children if child.outcome() is None]
    return layer


def own_turns(book: Book, root: str) -> list[ConnectFour]:
    """Every position the book's side meets in the book, playing the book against anything.

    Before ``plies`` stones each must be in the book (the book is closed under the
    opponent's replies). Each keeps at least the score of the position it came from:
    the opponent can only make its own position worse.
    """
    found: dict[int, ConnectFour] = {}
    stack = [(ConnectFour.from_moves(root), -100)]
    while stack:
        position, floor = stack.pop()
        if position.outcome() is not None or position.key() in found or position.ply >= book.plies:
            continue
        entry = book.lookup(position)
        assert entry is not None, f"{position.key():#x}: reached while playing the book, not in it"
        assert entry.score >= floor, f"{position.key():#x}: the score fell from {floor} to {entry.score}"
        found[position.key()] = position
        after = position.play(entry.move)
        if after.outcome() is None:
            stack.extend((after.play(reply), entry.score) for reply in after.legal_moves())
    return list(found.values())


SHIPPED = shipped_book()


@cache
def shipped_own_turns() -> list[ConnectFour]:
    """:func:`own_turns` of the shipped book, from each of its roots."""
    assert SHIPPED is not None
    return [position for root in SHIPPED.roots for position in own_turns(SHIPPED, root)]


def test_the_shipped_book_covers_both_players_to_twelve_stones() -> None:
    assert SHIPPED is not None and SHIPPED.complete
    assert SHIPPED.plies == 12 and set(SHIPPED.roots) == set(DEFAULT_ROOTS)
    # Connect Four's known values: the first player wins with the centre column only, with its last
    # stone; against openings in columns 3 and 5 the second player draws, against the others it wins,
    # and against the centre it loses (and holds out to the first player's last stone).
    expected = {"": (3, 1), "1": (3, 1), "2": (2, 1), "3": (3, 0), "4": (3, -1)}
    for moves, (move, value) in expected.items():
        entry = SHIPPED.lookup(ConnectFour.from_moves(moves))
        assert entry is not None and entry.value == value and entry.move == move, moves
    assert SHIPPED.lookup(ConnectFour()) == BookMove(3, 1)
    assert SHIPPED.lookup(ConnectFour.from_moves("4")) == BookMove(3, -1)


def test_the_shipped_book_is_closed_under_every_reply() -> None:
    assert SHIPPED is not None
    reached = {canonical(position) for position in shipped_own_turns()}
    assert reached == set(SHIPPED.entries)


@needs_compiled_solver
def test_late_entries_of_the_shipped_book_agree_with_the_solver() -> None:
    """Entries 10 and 11 stones in, where the exact solver is cheap enough for a test: a fixed sample."""
    assert SHIPPED is not None
    late = sorted((position for position in shipped_own_turns() if position.ply >= 10), key=ConnectFour.key)
    checked = 0
    for position in random.Random(7).sample(late, 24):
        entry = SHIPPED.lookup(position)
        assert entry is not None
        try:
            solved = solve(position, max_nodes=2_000_000).score
        except SolverBudgetExceeded:
            continue  # too costly for a quick test: `plyarena book --check` and the build checked them
        assert entry.score == solved, f"{position.key():#x}"
        checked += 1
    assert checked >= 12


def test_where_the_shipped_book_ends_the_solver_takes_over() -> None:
    assert SHIPPED is not None
    ends = book_ends(SHIPPED, "")
    assert ends and all(
        position.ply >= SHIPPED.plies and SHIPPED.lookup(position) is None for position in ends
    )


def test_level_8_plays_the_book_with_its_exact_score_and_no_search_figures() -> None:
    move, result = choose_move(ConnectFour(), level("connect4", 8), random.Random(0))
    assert move == 3 and (result.source, result.depth, result.nodes) == ("book", None, None)  # looked up
    assert result.score == perfect.score_from_pons(1, 0)  # a win with the first player's last stone
    lost = ConnectFour.from_moves("4")
    assert choose_move(lost, level("connect4", 8), random.Random(0))[1].score == perfect.score_from_pons(
        -1, 1
    )


def test_a_game_without_a_book_has_no_book_move() -> None:
    othello = get_game("othello")
    assert perfect.book_for("othello") is None
    assert perfect.from_book("othello", othello.start()) is None
    # Four moves in, off the first player's own line from its root two moves in.
    assert SHIPPED is not None
    after_two = ConnectFour.from_moves("11")
    book_move = SHIPPED.lookup(after_two)
    assert book_move is not None
    other = next(column for column in after_two.legal_moves() if column != book_move.move)
    assert perfect.from_book("connect4", after_two.play(other).play(0)) is None


def test_book_command_builds_resumes_and_checks_a_book(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "book.json.gz"
    plies = len(LATE_ROOT) + 2
    command = ["book", "connect4", "--plies", str(plies), "--root", LATE_ROOT, "--out", str(out)]
    assert main([*command, "--seconds", "0"]) == 0
    assert "stopped before the end" in capsys.readouterr().out and not load(out).complete
    assert main([*command, "--resume"]) == 0
    book = load(out)
    assert book.complete and book.roots == (LATE_ROOT,) and book.plies == plies
    assert book.entries == build([LATE_ROOT], plies=plies).entries
    assert f"to ply {plies} from 1 root(s)" in capsys.readouterr().out
    assert main(["book", "connect4", "--check", "2", "--out", str(out)]) == 0
    report = capsys.readouterr().out
    assert "where the book ends" in report and LATE_ROOT in report
    assert main(["book", "connect4", "--plies", "4", "--root", "48"]) == 1
    assert "bad root '48'" in capsys.readouterr().err
    assert main(["book", "connect4", "--root", LATE_ROOT]) == 1
    assert "--plies is needed" in capsys.readouterr().err
    assert main([*command, "--database", str(tmp_path / "missing.dat")]) == 1
    assert "cannot read the database" in capsys.readouterr().err
