"""Tournaments between bot levels: who plays whom, one game per process-pool task, and the results file.

A tournament measures the levels of one game against each other, so that
ratings (:mod:`bots.ratings`) come from games, not from labels:

- every pair of levels (or, with ``span``, every pair at most that many levels
  apart: neighbours carry the information a ladder needs, and 1 against 8 only
  confirms the obvious) plays ``games_per_pair`` games; or, with anchors
  (:mod:`bots.anchors`: an outside engine at a fixed ``UCI_Elo``), every level
  plays every anchor instead, to tie the ladder to the engine's scale;
- games come in colour-swapped twins that start from the same few random
  opening plies, so the first mover's advantage cancels within a pair and
  levels without noise (which play the same game from the same position)
  still meet in varied games;
- one game is one task in a :class:`concurrent.futures.ProcessPoolExecutor`;
  what crosses the process boundary is a :class:`GameSpec` (levels, opening in
  notation, a seed) and a :class:`GameRecord` back, so a tournament replays
  exactly from its seed as long as the levels are depth-bound, not time-bound
  (an outside engine thinks for a time, and its weakened play draws on its own
  randomness, so games against it do not replay).

The results file has one JSON object per line, a :class:`GameRecord` each, written
as games finish; an interrupted tournament keeps the games it played. The files
behind the shipped ratings are kept gzipped under ``docs/ratings/``.
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
import random
import signal
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import TextIO

import msgspec

from bots.anchors import DEFAULT_ANCHOR_MS, Player, anchor_elo, anchor_level
from bots.engine import BlockingEngines
from bots.levels import LEVEL_COUNT, Level, choose_move, level
from bots.pool import ThinkRequest
from bots.result import is_decisive
from games import Position, get_game

DEFAULT_OPENING_PLIES = {"tictactoe": 1, "connect4": 2, "othello": 4, "checkers": 4, "chess": 4}
"""Random plies before the bots take over: enough to vary the games, too few to decide them."""
OPENING_ATTEMPTS = 50
"""Draws of a random opening before a pair settles for one it has already played."""
WORKER_NICE = 5
"""Tournament workers yield the CPU to servers and fleets on the same machine."""

RESULTS = {0: "1-0", 1: "0-1", None: "1/2-1/2"}


class GameSpec(msgspec.Struct, frozen=True):
    """One game to play: the players (levels or anchors) at seat 0 (moves first) and seat 1, and where it
    starts."""

    game: str
    first: Player
    second: Player
    opening: tuple[str, ...]
    """Random plies played before the bots take over, in notation; both games of a twin share them."""
    seed: int
    """Seeds the bots' noise and their choice between equal moves."""
    time_ms: int | None = None
    """Caps each move's time budget (on top of the level's own), or ``None``."""
    engines: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The outside engines' commands by name, for engine levels and anchors (``plyarena bots --engine``)."""
    anchor_ms: int = DEFAULT_ANCHOR_MS
    """An anchor's time a move."""
    untimed: bool = False
    """Levels with a depth play to it (and an exact solver to the end) without their own time budgets."""


class GameRecord(msgspec.Struct, frozen=True):
    """One finished game: a line of the results file."""

    game: str
    first: Player
    """The level (or anchor) at seat 0, which moved first."""
    second: Player
    opening_plies: int
    """How many of ``moves`` were the random opening rather than the bots' choice."""
    moves: list[str]
    result: str
    """``1-0`` (seat 0 won), ``0-1`` or ``1/2-1/2``."""
    reason: str
    seed: int
    time_ms: int | None
    think_ms: tuple[int, int]
    """Total thinking time per seat."""
    short_searches: tuple[int, int]
    """Per seat, searches that completed fewer plies than the level's depth under a time budget.

    Usually the clock stopped them (so the game depended on the machine's load); rarely a
    search saw the end of the game before its depth without a decisive score. An outside
    engine thinks for its time by design, and is not counted.
    """
    anchor_ms: int | None = None
    """An anchor's time a move, if an anchor played."""
    untimed: bool = False
    """Whether the levels played without their time budgets (:attr:`GameSpec.untimed`)."""

    @property
    def first_points(self) -> float:
        """What the first mover scored: 1, ½ or 0."""
        return {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[self.result]

    def points_of(self, player: Player) -> float:
        """What ``player`` scored in this game (a player never plays itself here)."""
        if player == self.first:
            return self.first_points
        if player == self.second:
            return 1.0 - self.first_points
        raise ValueError(f"{player} did not play in this game ({self.first} vs {self.second})")


_record_encoder = msgspec.json.Encoder()
_record_decoder = msgspec.json.Decoder(GameRecord)


def parse_levels(text: str, minimum: int = 2) -> tuple[int, ...]:
    """Level numbers from ``1-8``, ``2,4,6`` or ``1-3,7``, at least ``minimum`` of them (two play each
    other; one can play anchors); raises ``ValueError`` naming the bad item."""
    numbers: set[int] = set()
    for item in text.split(","):
        first_text, _, last_text = item.strip().partition("-")
        try:
            first = int(first_text)
            last = int(last_text) if last_text else first
        except ValueError:
            raise ValueError(f"levels {text!r}: {item!r} is not a level or a range like 1-8") from None
        if not 1 <= first <= last <= LEVEL_COUNT:
            raise ValueError(f"levels {text!r}: {item!r} is outside 1-{LEVEL_COUNT} or runs backwards")
        numbers.update(range(first, last + 1))
    if len(numbers) < minimum:
        needed = "one level" if minimum == 1 else "two levels" if minimum == 2 else f"{minimum} levels"
        raise ValueError(f"levels {text!r}: a tournament needs at least {needed}")
    return tuple(sorted(numbers))


def pairings(
    levels: Sequence[int], span: int | None = None, involving: int | None = None
) -> list[tuple[int, int]]:
    """Every pair of ``levels`` (lower first), or only those at most ``span`` levels apart in the list.

    With ``involving``, only the pairs that include that level: after a level changes,
    its old games no longer describe it, and these are the pairs to play again.
    """
    ordered = sorted(set(levels))
    if span is not None and span < 1:
        raise ValueError(f"span must be at least 1, got {span}")
    if involving is not None and involving not in ordered:
        raise ValueError(f"level {involving} is not among the levels that play ({ordered})")
    return [
        (low, high)
        for (i, low), (j, high) in combinations(enumerate(ordered), 2)
        if (span is None or j - i <= span) and involving in (None, low, high)
    ]


def random_opening(game: str, plies: int, rng: random.Random) -> tuple[str, ...]:
    """``plies`` uniformly random legal moves from the start, in notation, that leave the game open."""
    for _ in range(OPENING_ATTEMPTS):
        position = get_game(game).start()
        moves = []
        for _ in range(plies):
            move = rng.choice(position.legal_moves())
            moves.append(position.format_move(move))
            position = position.play(move)
            if position.outcome() is not None:
                break
        else:
            return tuple(moves)
    raise ValueError(f"{game}: {plies} random plies keep ending the game; use fewer opening plies")


def schedule(
    game: str,
    levels: Sequence[int],
    games_per_pair: int,
    *,
    seed: int,
    span: int | None = None,
    involving: int | None = None,
    opening_plies: int | None = None,
    time_ms: int | None = None,
    anchors: Sequence[str] = (),
    engines: Mapping[str, Sequence[str]] | None = None,
    anchor_ms: int = DEFAULT_ANCHOR_MS,
    untimed: bool = False,
) -> list[GameSpec]:
    """Every game of a tournament, in colour-swapped twins sharing an opening (see the module docstring).

    With ``anchors``, each level plays each anchor, and not the other levels (``span`` and
    ``involving`` choose between levels, so they do not apply). ``engines`` gives the commands
    of the outside engines that anchors and engine levels need. With an odd ``games_per_pair``
    the last game of each pair is a single, its colours alternating from pair to pair.
    Openings differ within a pair while there are enough.
    """
    get_game(game)  # an unknown game fails here, by name
    if games_per_pair < 1:
        raise ValueError(f"games per pair must be at least 1, got {games_per_pair}")
    plies = DEFAULT_OPENING_PLIES.get(game, 2) if opening_plies is None else opening_plies
    if plies < 0:
        raise ValueError(f"opening plies must be 0 or more, got {plies}")
    if time_ms is not None and time_ms < 1:  # else every game fails in its worker, one by one
        raise ValueError(f"a move's time budget must be at least 1 ms, got {time_ms}")
    commands = {name: tuple(command) for name, command in (engines or {}).items()}
    pairs: list[tuple[Player, Player]]
    if anchors:
        if span is not None or involving is not None:
            raise ValueError("levels play every anchor: span and involving choose between levels only")
        if anchor_ms < 1:
            raise ValueError(f"an anchor's time a move must be at least 1 ms, got {anchor_ms}")
        pairs = [(number, anchor) for number in sorted(set(levels)) for anchor in anchors]
    else:
        pairs = list(pairings(levels, span, involving))
    players = [anchor_level(game, player) if isinstance(player, str) else level(game, player)
               for pair in pairs for player in pair]  # fmt: skip
    for row in players:
        if row.engine is not None and row.engine.name not in commands:
            raise ValueError(
                f"{row.name} is played by the outside engine {row.engine.name!r}: give its command"
            )
    rng = random.Random(seed)
    specs = []
    for index, (low, high) in enumerate(pairs):
        used: set[tuple[str, ...]] = set()
        for twin in range(0, games_per_pair, 2):
            opening = random_opening(game, plies, rng)
            for _ in range(OPENING_ATTEMPTS):
                if opening not in used:
                    break
                opening = random_opening(game, plies, rng)
            used.add(opening)
            seats = [(low, high), (high, low)]
            if twin + 1 == games_per_pair:  # the odd one out
                seats = [seats[index % 2]]
            for first, second in seats:
                seed_of_game = rng.randrange(2**32)
                engine_commands = tuple(commands.items())
                specs.append(
                    GameSpec(
                        game,
                        first,
                        second,
                        opening,
                        seed_of_game,
                        time_ms,
                        engine_commands,
                        anchor_ms,
                        untimed,
                    )
                )
    return specs


def play_game(spec: GameSpec) -> GameRecord:
    """Play one game of ``spec`` to the end (the task a worker runs)."""
    game = get_game(spec.game)
    position: Position = game.replay(spec.opening)
    rows = (_player_level(spec, spec.first), _player_level(spec, spec.second))
    if spec.untimed:
        rows = (_untimed(rows[0]), _untimed(rows[1]))
    rngs = (random.Random(spec.seed), random.Random(spec.seed + 1))
    moves = list(spec.opening)
    think_ms = [0.0, 0.0]
    short = [0, 0]
    with BlockingEngines(dict(spec.engines)) as engines:
        while (outcome := position.outcome()) is None:
            seat = position.turn
            row = rows[seat]
            if row.engine is not None:
                request = ThinkRequest(
                    spec.game, tuple(moves), row.number, _tighter(row.time_ms, spec.time_ms)
                )
                thought = engines.think(row, request)
                move = position.parse_move(thought.move)
                think_ms[seat] += thought.think_ms
            else:
                move, result = choose_move(position, row, rngs[seat], spec.time_ms)
                think_ms[seat] += result.time_ms
                timed = row.time_ms is not None or spec.time_ms is not None
                shallow = result.depth is not None and row.depth is not None and result.depth < row.depth
                if timed and shallow and not is_decisive(result.score):
                    short[seat] += 1
            moves.append(position.format_move(move))
            position = position.play(move)
    anchored = any(isinstance(player, str) for player in (spec.first, spec.second))
    return GameRecord(
        game=spec.game,
        first=spec.first,
        second=spec.second,
        opening_plies=len(spec.opening),
        moves=moves,
        result=RESULTS[outcome.winner],
        reason=outcome.reason,
        seed=spec.seed,
        time_ms=spec.time_ms,
        think_ms=(round(think_ms[0]), round(think_ms[1])),
        short_searches=(short[0], short[1]),
        anchor_ms=spec.anchor_ms if anchored else None,
        untimed=spec.untimed,
    )


def _player_level(spec: GameSpec, player: Player) -> Level:
    """The level row ``player`` plays as: its row of the level table, or an anchor's engine level."""
    if isinstance(player, str):
        return anchor_level(spec.game, player, spec.anchor_ms)
    return level(spec.game, player)


def _untimed(row: Level) -> Level:
    """``row`` without its time budget where it has a depth or a solver to bound it instead (not an engine's:
    an outside engine plays by its time)."""
    if row.engine is None and (row.depth is not None or row.solver):
        return replace(row, time_ms=None)
    return row


def _tighter(own_ms: int | None, cap_ms: int | None) -> int | None:
    return own_ms if cap_ms is None else cap_ms if own_ms is None else min(own_ms, cap_ms)


def _start_worker() -> None:
    """Worker initializer: leave Ctrl-C to the parent, and run below the machine's servers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(WORKER_NICE)


def play_all(
    specs: Sequence[GameSpec], workers: int, on_result: Callable[[GameRecord], None]
) -> list[GameRecord]:
    """Play ``specs`` in a pool of ``workers`` processes; ``on_result`` sees each game as it ends.

    Results come in the order games finish. On an interrupt (or an error in a game),
    games not started are cancelled, the games in progress are played out and reported,
    and the exception propagates once the pool has stopped.
    """
    if workers < 1:
        raise ValueError(f"a tournament needs at least 1 worker, got {workers}")
    records = []
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker) as executor:
        pending: set[Future[GameRecord]] = {executor.submit(play_game, spec) for spec in specs}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    record = future.result()
                    records.append(record)
                    on_result(record)
        except BaseException:
            for future in pending:
                future.cancel()
            for future in pending:
                if not future.cancelled() and future.exception() is None:
                    record = future.result()
                    records.append(record)
                    on_result(record)
            raise
    return records


def write_record(stream: TextIO, record: GameRecord) -> None:
    """Append ``record`` to an open text stream as one line, and flush it to disk."""
    stream.write(_record_encoder.encode(record).decode() + "\n")
    stream.flush()


def read_records(path: Path) -> list[GameRecord]:
    """The games of a results file (gzipped if it ends in ``.gz``, as the shipped ones are).

    Raises ``ValueError`` naming the file, and the line of a bad record.
    """
    data = path.read_bytes()
    try:
        text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
    except (OSError, EOFError, zlib.error):  # gzip's ways of saying the file is not gzip, or is cut short
        raise ValueError(f"{path}: not a whole gzip file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text, so not a results file") from None
    return list(_read_lines(path, text.splitlines()))


def _read_lines(path: Path, lines: Iterable[str]) -> Iterator[GameRecord]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = _record_decoder.decode(line)
        except msgspec.DecodeError as error:
            raise ValueError(f"{path}, line {number}: not a game record: {error}") from None
        if record.result not in ("1-0", "0-1", "1/2-1/2"):
            raise ValueError(f"{path}, line {number}: unknown result {record.result!r}")
        if record.first == record.second:
            raise ValueError(f"{path}, line {number}: {record.first} played itself")
        for player in (record.first, record.second):
            if isinstance(player, str):
                try:
                    anchor_elo(player)
                except ValueError as error:
                    raise ValueError(f"{path}, line {number}: {error}") from None
        yield record
