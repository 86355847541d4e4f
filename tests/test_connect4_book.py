"""The Connect Four opening book: its format, its builder, the shipped book, and level 8 playing it."""

from __future__ import annotations

import gzip
import random
from functools import cache
from pathlib import Path

import pytest

from bots import perfect
from bots.connect4_book import (
    Book,
    BookMove,
    ValueTable,
    book_ends,
    build,
    canonical,
    check_edges,
    huffman_code,
    load,
    mirror_key,
    read_settled,
    record_settled,
    settled_path,
    settles_live,
    shipped_book,
)
from bots.connect4_solver import SolverBudgetExceeded, WeakSolver, solve
from bots.levels import choose_move, level
from games import get_game
from games.connect4 import ConnectFour
from plyarena.cli import main
from plyarena.commands.book import DEFAULT_ROOTS

LATE_ROOT = "4533217613545135"
"""A middle-game position (Red to move) that the exact solver settles in a blink."""


def mirrored(moves: str) -> str:
    return "".join(str(8 - int(column)) for column in moves)


def sign(score: int) -> int:
    return (score > 0) - (score < 0)


def exact_value(position: ConnectFour) -> int:
    return sign(solve(position).score)


def test_mirroring_a_key_reflects_the_board() -> None:
    moves = "1234556"
    position, reflected = ConnectFour.from_moves(moves), ConnectFour.from_moves(mirrored(moves))
    assert mirror_key(position.key()) == reflected.key()
    assert mirror_key(mirror_key(position.key())) == position.key()
    assert canonical(position) == canonical(reflected) == min(position.key(), reflected.key())
    symmetric = ConnectFour.from_moves("4444")
    assert mirror_key(symmetric.key()) == symmetric.key()


def test_a_book_built_by_the_solver_keeps_every_value() -> None:
    book = build([LATE_ROOT], plies=len(LATE_ROOT) + 4)
    assert book.entries and book.nodes > 0
    root = ConnectFour.from_moves(LATE_ROOT)
    assert book.lookup(root) is not None
    for position in own_turns(book, LATE_ROOT):
        entry = book.lookup(position)
        assert entry is not None
        assert entry.value == exact_value(position)
        after = position.play(entry.move)
        assert after.outcome() is not None or -exact_value(after) == entry.value


def test_past_its_plies_a_book_goes_on_where_the_live_level_would_run_out_of_budget() -> None:
    plies, budget = len(LATE_ROOT) + 2, 2_000
    book = build([LATE_ROOT], plies=plies, solver_nodes=budget)
    assert book.extended == (LATE_ROOT,)
    reached = own_turns(book, LATE_ROOT)
    past = [position for position in reached if position.ply >= plies]
    assert past, "this root needs more than the budget somewhere past the plies"
    assert {canonical(position) for position in reached} == set(book.entries)
    for position in past:
        assert not settles_live(position, budget)
        entry = book.lookup(position)
        assert entry is not None and entry.value == exact_value(position)
    # Everywhere the book ends past its plies, the live level's budget suffices.
    for position in reached:
        entry = book.lookup(position)
        assert entry is not None
        after = position.play(entry.move)
        for reply in after.legal_moves() if after.outcome() is None else []:
            child = after.play(reply)
            if child.outcome() is None and child.ply >= plies and book.lookup(child) is None:
                assert settles_live(child, budget)
    out_of_time = build([LATE_ROOT], plies=plies, solver_nodes=budget, seconds=0)
    assert out_of_time.extended == ()


def test_an_interrupted_extension_goes_on_where_it_stopped_and_ends_with_the_same_book(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plies, budget = len(LATE_ROOT) + 2, 2_000
    whole = build([LATE_ROOT], plies=plies, solver_nodes=budget)
    out = tmp_path / "book.json.gz"
    settled_file = settled_path(out)
    command = ["book", "connect4", "--plies", str(plies), "--root", LATE_ROOT, "--out", str(out)]
    command += ["--solver-nodes", str(budget)]
    # Out of time at once: the book to its plies is saved whole, nothing past it is settled yet.
    assert main([*command, "--seconds", "0"]) == 0
    assert load(out).extended == () and read_settled(settled_file) == set()
    assert load(out).entries == build([LATE_ROOT], plies=plies).entries
    # Part of the way: checkpoints record what was settled, as a kill would leave them.
    checkpoints: list[tuple[Book, list[int]]] = []
    partial = build(
        [LATE_ROOT],
        plies=plies,
        solver_nodes=budget,
        checkpoint=lambda book, keys: checkpoints.append((book, keys)),
        checkpoint_seconds=0,
    )
    assert len(checkpoints) > 2 and partial.extended == (LATE_ROOT,)
    halfway = checkpoints[len(checkpoints) // 2][0]
    halfway.save(out)
    record_settled(settled_file, [key for _, keys in checkpoints[: len(checkpoints) // 2] for key in keys])
    known = read_settled(settled_file)
    assert known and known < read_settled_all(checkpoints)
    capsys.readouterr()
    assert main([*command, "--resume"]) == 0
    assert f"{len(known):,} positions settled live" in capsys.readouterr().out
    resumed = load(out)
    assert resumed.extended == (LATE_ROOT,) and resumed.entries == whole.entries
    assert read_settled(settled_file) == read_settled_all(checkpoints)
    # A resume needs the same plies and budget, and an extension pass to go on with.
    assert main([*command[:-1], str(budget + 1), "--resume"]) == 1
    assert "cannot resume" in capsys.readouterr().err
    assert main([*command[:-2], "--resume"]) == 1
    assert "give --solver-nodes" in capsys.readouterr().err


def test_an_extension_stopped_by_hand_keeps_what_it_knows() -> None:
    plies, budget = len(LATE_ROOT) + 2, 2_000
    saved: list[Book] = []

    def stop_by_hand(line: str) -> None:
        if "where the book ends" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build(
            [LATE_ROOT],
            plies=plies,
            solver_nodes=budget,
            progress=stop_by_hand,
            checkpoint=lambda book, _: saved.append(book),
        )
    assert [book.entries for book in saved] == [build([LATE_ROOT], plies=plies).entries]


def read_settled_all(checkpoints: list[tuple[Book, list[int]]]) -> set[int]:
    return {key for _, keys in checkpoints for key in keys}


def test_in_a_lost_position_the_book_plays_on_and_keeps_what_mistakes_give_away() -> None:
    lost_root = LATE_ROOT + "4"
    position = ConnectFour.from_moves(lost_root)
    assert exact_value(position) == -1
    book = build([lost_root], plies=len(lost_root) + 4)
    entry = book.lookup(position)
    assert entry is not None and entry.value == -1
    after = position.play(entry.move)
    assert not any(after.is_winning_move(reply) for reply in after.legal_moves())  # no loss at once
    mistakes = [after.play(reply) for reply in after.legal_moves()]
    mistakes = [child for child in mistakes if exact_value(child) >= 0]
    assert mistakes, "some reply gives the game away"
    for child in mistakes:
        kept = book.lookup(child)
        assert kept is not None and kept.value == exact_value(child) >= 0


def test_where_an_extended_book_ends_the_live_level_settles_every_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plies, budget = len(LATE_ROOT) + 2, 2_000
    short = build([LATE_ROOT], plies=plies)
    ends = book_ends(short, LATE_ROOT)
    assert ends and all(position.ply >= plies and short.lookup(position) is None for position in ends)
    assert not all(settles_live(position, budget) for position in ends)  # so the extension has work

    extended = build([LATE_ROOT], plies=plies, solver_nodes=budget)
    checked = check_edges(extended, LATE_ROOT, 1_000, random.Random(1), budget)
    assert checked.sampled == checked.ends == len(book_ends(extended, LATE_ROOT)) > 0
    assert checked.settled == checked.sampled
    assert 0 <= checked.deeper_settled <= checked.deeper <= checked.settled

    out = tmp_path / "book.json.gz"
    extended.save(out)
    command = ["book", "connect4", "--check", "3", "--out", str(out)]
    assert main(command) == 0
    report = capsys.readouterr().out
    assert "Where the book ends" in report and f"{budget:,} solver nodes" in report
    assert LATE_ROOT in report and "yes" in report  # the root, extended
    short.save(out)
    assert main(command) == 1
    assert "give --solver-nodes" in capsys.readouterr().err
    assert main(["book", "connect4", "--root", LATE_ROOT]) == 1
    assert "--plies is needed" in capsys.readouterr().err


def test_a_lookup_mirrors_the_move_of_a_mirrored_position() -> None:
    book = build([LATE_ROOT], plies=len(LATE_ROOT) + 1)
    entry = book.lookup(ConnectFour.from_moves(LATE_ROOT))
    reflected = book.lookup(ConnectFour.from_moves(mirrored(LATE_ROOT)))
    assert entry is not None and reflected is not None
    assert reflected.move == 6 - entry.move and reflected.value == entry.value


def test_a_book_survives_saving_and_loading(tmp_path: Path) -> None:
    book = build([LATE_ROOT], plies=len(LATE_ROOT) + 4)
    path = tmp_path / "book.json.gz"
    book.save(path)
    assert load(path) == Book(book.entries, book.plies, book.roots, book.nodes, round(book.seconds, 1))
    extended = build([LATE_ROOT], plies=len(LATE_ROOT) + 1, solver_nodes=2_000)
    extended.save(path)
    assert load(path).solver_nodes == 2_000 and load(path).extended == (LATE_ROOT,)
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
    twelve = ConnectFour.from_moves("545112556251")
    assert huffman_code(twelve.stones(0), twelve.mask).bit_length() <= 32


def test_a_value_table_reads_draws_losses_and_missing_wins(tmp_path: Path) -> None:
    draw, loss, win = (
        ConnectFour.from_moves(moves) for moves in ("145242233444", "545112556251", "444224441515")
    )
    records = sorted([huffman_code(draw.stones(0), draw.mask), huffman_code(loss.stones(0), loss.mask) | 1])
    path = tmp_path / "book_12ply.dat"
    path.write_bytes(b"".join(record.to_bytes(4, "big") for record in records))
    table = ValueTable.read(path)
    assert table.plies == 12
    assert table.value(draw) == 0 and table.value(loss) == -1 and table.value(win) == 1
    assert table.value(ConnectFour.from_moves(mirrored("545112556251"))) == -1  # stored once for both
    with pytest.raises(ValueError, match="12 stones, not 11"):
        table.value(ConnectFour.from_moves("54511255625"))
    (tmp_path / "odd.dat").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ValueError, match="4-byte records"):
        ValueTable.read(tmp_path / "odd.dat")


def test_a_book_from_a_value_table_matches_the_solver() -> None:
    # The exact values of every position 3 stones past the root, stored as the database stores them.
    root = ConnectFour.from_moves(LATE_ROOT)
    depth = root.ply + 3
    solver = WeakSolver(1 << 22)  # one table for every position here: they share most of their lines
    codes = {}
    for position in positions_at(root, depth):
        value = solver.value(position)
        if value < 1:
            codes[huffman_code(position.stones(0), position.mask)] = -value
    book = build([LATE_ROOT], plies=depth, values=ValueTable(depth, codes))
    reached = own_turns(book, LATE_ROOT)
    assert len(reached) == len(book.entries) > 1
    for position in reached:
        entry = book.lookup(position)
        assert entry is not None and entry.value == exact_value(position)
        after = position.play(entry.move)
        assert after.outcome() is not None or -exact_value(after) == entry.value
    with pytest.raises(ValueError, match="values at"):
        build([LATE_ROOT], plies=depth + 1, values=ValueTable(depth, codes))


def positions_at(root: ConnectFour, ply: int) -> list[ConnectFour]:
    """The unfinished positions ``ply`` stones deep below ``root``."""
    layer = [root]
    while layer and layer[0].ply < ply:
        children = (position.play(move) for position in layer for move in position.legal_moves())
        layer = [child for child in children if child.outcome() is None]
    return layer


@cache
def shipped_own_turns() -> list[ConnectFour]:
    """:func:`own_turns` of the shipped book, from each of its roots."""
    assert SHIPPED is not None
    return [position for root in SHIPPED.roots for position in own_turns(SHIPPED, root)]


def own_turns(book: Book, root: str) -> list[ConnectFour]:
    """Every position the book's side meets in the book, playing the book against anything.

    Before ``plies`` stones each must be in the book (the book is closed under the
    opponent's replies); past them the book goes on where it has entries. Each
    keeps at least the value of the position it came from: the opponent can only
    make its own position worse.
    """
    found: dict[int, ConnectFour] = {}
    stack = [(ConnectFour.from_moves(root), -1)]
    while stack:
        position, floor = stack.pop()
        if position.outcome() is not None or position.key() in found:
            continue
        entry = book.lookup(position)
        if entry is None and position.ply >= book.plies:
            continue  # left to the live solver
        assert entry is not None, f"{position.key():#x}: reached while playing the book, not in it"
        assert entry.value >= floor, f"{position.key():#x}: the value fell from {floor} to {entry.value}"
        found[position.key()] = position
        after = position.play(entry.move)
        if after.outcome() is None:
            stack.extend((after.play(reply), entry.value) for reply in after.legal_moves())
    return list(found.values())


SHIPPED = shipped_book()


def test_the_shipped_book_covers_both_players_to_twelve_stones() -> None:
    assert SHIPPED is not None
    assert SHIPPED.plies == 12 and set(SHIPPED.roots) == set(DEFAULT_ROOTS)
    assert SHIPPED.solver_nodes == level("connect4", 8).solver_nodes  # went on past 12 for this budget
    # The known values of Connect Four's openings: the first player wins with the centre column only;
    # against openings in columns 3 and 5 the second player draws, against the others it wins, and
    # against the centre it loses (the book plays on there, for the first player's mistakes).
    expected = {"": (3, 1), "1": (3, 1), "2": (2, 1), "3": (3, 0), "4": (3, -1)}
    for moves, (move, value) in expected.items():
        assert SHIPPED.lookup(ConnectFour.from_moves(moves)) == BookMove(move, value)
        assert SHIPPED.lookup(ConnectFour.from_moves(mirrored(moves))) == BookMove(6 - move, value)


def test_where_the_shipped_book_ends_the_live_level_settles_for_every_extended_root() -> None:
    """What the extension pass checked, re-checked on a sample: the first player's root must be among them,
    since from the empty board level 8 always wins."""
    assert SHIPPED is not None and SHIPPED.solver_nodes is not None
    assert "" in SHIPPED.extended
    for root in SHIPPED.extended:
        checked = check_edges(SHIPPED, root, 3, random.Random(5), SHIPPED.solver_nodes)
        assert checked.settled == checked.sampled == 3, root


def test_the_shipped_book_is_closed_under_every_reply() -> None:
    assert SHIPPED is not None
    reached = {canonical(position) for position in shipped_own_turns()}
    assert reached == set(SHIPPED.entries)


def test_late_entries_of_the_shipped_book_agree_with_the_solver() -> None:
    """Entries 10 and 11 stones in, where the exact solver is cheap enough for a test: a fixed sample."""
    assert SHIPPED is not None
    late = sorted(
        (position for position in shipped_own_turns() if 10 <= position.ply < SHIPPED.plies),
        key=ConnectFour.key,
    )
    checked = 0
    for position in random.Random(7).sample(late, 40):
        entry = SHIPPED.lookup(position)
        assert entry is not None
        after = position.play(entry.move)
        try:
            kept = after.outcome() is not None or WeakSolver(max_nodes=20_000).value(after) <= -entry.value
        except SolverBudgetExceeded:
            continue  # too costly for a quick test; the generator's values were checked offline
        assert kept, f"{position.key():#x}: column {entry.move + 1} does not keep the value {entry.value}"
        checked += 1
    assert checked >= 12


@pytest.mark.parametrize(("opponent", "seed"), [(None, 0), (None, 1), (None, 2), (3, 0), (7, 0)])
def test_level_8_as_first_player_wins_every_game(opponent: int | None, seed: int) -> None:
    """``None`` is a random mover; level 3 is noisy, level 7 the strongest search below the solver."""
    rng = random.Random(seed)
    top = level("connect4", 8)
    position = ConnectFour()
    while position.outcome() is None:
        if position.ply % 2 == 0:
            move, _ = choose_move(position, top, rng)
        elif opponent is None:
            move = rng.choice(position.legal_moves())
        else:
            move, _ = choose_move(position, level("connect4", opponent), rng)
        position = position.play(move)
    outcome = position.outcome()
    assert outcome is not None and outcome.winner == 0, position


def test_level_8_plays_the_book_with_the_value_as_its_score() -> None:
    move, result = choose_move(ConnectFour(), level("connect4", 8), random.Random(0))
    assert move == 3 and (result.source, result.depth, result.nodes) == ("book", None, None)  # looked up
    assert result.score == perfect.score_from_pons(1, 0) > 0  # the least a win promises
    drawn = ConnectFour.from_moves("3")
    assert choose_move(drawn, level("connect4", 8), random.Random(0))[1].score == 0


def test_a_game_without_a_book_has_no_book_move() -> None:
    othello = get_game("othello")
    assert perfect.book_for("othello") is None
    assert perfect.from_book("othello", othello.start()) is None
    assert perfect.from_book("connect4", ConnectFour.from_moves("11")) is None  # not the book's opening


def test_book_command_builds_a_book_from_given_roots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "book.json.gz"
    plies = len(LATE_ROOT) + 2
    assert main(["book", "connect4", "--plies", str(plies), "--root", LATE_ROOT, "--out", str(out)]) == 0
    book = load(out)
    assert book.roots == (LATE_ROOT,) and book.plies == plies
    assert book.entries == build([LATE_ROOT], plies=plies).entries
    assert f"to ply {plies} from 1 root(s)" in capsys.readouterr().out
    assert main(["book", "connect4", "--plies", "4", "--root", "48"]) == 1
    assert "bad root '48'" in capsys.readouterr().err
