"""The compiled kernel of the search, where it was built; the pure-Python code everywhere else.

``bots._kernel`` is C (``bots/kernel/``), built by ``pip install`` when a compiler is there (setup.py), in
the pattern of websockets' ``speedups.c``: for Connect Four, Othello and checkers it holds the rules on
bitboards, the evaluation of ``bots/evaluation/<game>.py``, perft, and :class:`bots.negamax.AlphaBeta`'s
search; for Othello also the exact endgame of :mod:`bots.othello_endgame`. The Python code stays the
reference: the kernel reproduces it number for number (scores, moves, principal variations and node counts;
``tests/test_kernel.py``), so nothing that calls a search can tell which one ran, except by the clock (the
endgame gives the same scores and best moves, ``tests/test_othello_endgame.py``). Without the kernel, or
with ``PLYARENA_NO_SPEEDUPS=1`` in the environment of the process, everything runs in Python.

The kernel takes a position as a *state*, a tuple of plain ints read off the game's public fields by
:func:`state_of`, and gives moves back as the Python rules write them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple, Protocol

from bots.deadline import Deadline
from bots.evaluation import Evaluator, evaluator_for
from games import Move, Position
from games import perft as python_perft
from games.checkers import Checkers
from games.connect4 import ConnectFour
from games.othello import Othello

NO_SPEEDUPS_VARIABLE = "PLYARENA_NO_SPEEDUPS"
"""Set to ``1``, the kernel is not loaded: every search and perft of the process runs in Python."""

State = tuple[Any, ...]
RootLine = tuple[Move, int, tuple[Move, ...]]
"""One root move as the kernel returns it: the move, its score and its principal variation."""


class CompiledSearcher(Protocol):
    """What ``bots._kernel.<Game>(size_log2)`` offers :class:`bots.negamax.AlphaBeta`.

    Its table (``2**size_log2`` slots, indexed as :class:`bots.transposition.TranspositionTable` does) and
    its move ordering's memory live in C, kept between calls as AlphaBeta keeps its own.
    """

    nodes: int
    heuristic_leaves: int

    def search_root(
        self,
        state: State,
        depth: int,
        exact: bool,
        deadline: Deadline | None,
        ties: bool = False,
    ) -> list[RootLine]:
        """One iteration of the deepening from the root: ``AlphaBeta._search_root``, counting on from
        ``nodes`` and ``heuristic_leaves``; with ``ties``, every move that ties for the best comes back.
        Raises what ``deadline.check()`` raises."""
        ...

    def table_move(self, state: State) -> Move | None:
        """The best move the table holds for the position, if it holds the position."""
        ...

    def forget_ordering(self) -> None:
        """Clear the killer moves and the history, as a new search's MoveOrderer starts empty."""
        ...


class CompiledSearch(NamedTuple):
    """A compiled searcher and how to hand it a position of its game."""

    searcher: CompiledSearcher
    state_of: Callable[[Any], State]


def connect4_state(position: ConnectFour) -> State:
    """``(current, mask)``: the side to move's stones and every stone."""
    return position.current, position.mask


def othello_state(position: Othello) -> State:
    """``(black, white, turn)``: the discs by colour, and the seat to move (the position's key)."""
    return position.discs[0], position.discs[1], position.turn


def checkers_state(position: Checkers) -> State:
    """``(Black's men, White's men, Black's kings, White's kings, turn, quiet plies, earlier keys)``: the
    pieces, and what the draw rules read (see :class:`games.checkers.Checkers`)."""
    men, kings = position.men, position.kings
    return men[0], men[1], kings[0], kings[1], position.turn, position.quiet_plies, position.earlier_keys


@dataclass(frozen=True, slots=True)
class _Binding:
    """How one game meets the kernel: the name of its type in ``bots._kernel``, and its states."""

    game: str
    type_name: str
    position_type: type
    state_of: Callable[[Any], State]

    def kernel_type(self) -> Any:
        """The game's type in the kernel, or ``None`` without a kernel."""
        return None if KERNEL is None else getattr(KERNEL, self.type_name, None)


_BINDINGS = (
    _Binding("connect4", "Connect4", ConnectFour, connect4_state),
    _Binding("othello", "Othello", Othello, othello_state),
    _Binding("checkers", "Checkers", Checkers, checkers_state),
)
_BY_GAME = {binding.game: binding for binding in _BINDINGS}
_BY_POSITION_TYPE = {binding.position_type: binding for binding in _BINDINGS}


def _load_kernel() -> ModuleType | None:
    """``bots._kernel``, unless the environment says no or it was not built."""
    if os.environ.get(NO_SPEEDUPS_VARIABLE) == "1":
        return None
    try:
        return importlib.import_module("bots._kernel")
    except ImportError:
        return None


KERNEL = _load_kernel()
"""The compiled kernel, or ``None``: then every search runs in Python."""


def compiled_games() -> list[str]:
    """The games whose searches and perft run compiled in this process."""
    return sorted(binding.game for binding in _BINDINGS if binding.kernel_type() is not None)


def kernel_type(game: str) -> Any:
    """``game``'s type in the kernel, or ``None``: a searcher class (see :class:`CompiledSearcher`) whose
    static methods give the compiled ``perft``, ``evaluate``, ``order_keys`` and ``key_hash`` of a state,
    for the tests and the benchmarks, and Othello's ``solve_endgame`` (:mod:`bots.othello_endgame`)."""
    binding = _BY_GAME.get(game)
    return None if binding is None else binding.kernel_type()


def state_of(position: Position) -> State | None:
    """The kernel's state of ``position``, or ``None`` if its game has no kernel."""
    binding = _BY_POSITION_TYPE.get(type(position))
    return None if binding is None else binding.state_of(position)


def compiled_search(evaluator: Evaluator, size_log2: int) -> CompiledSearch | None:
    """A compiled searcher for ``evaluator``'s game, or ``None`` where the search must run in Python.

    Only the game's own evaluation is compiled: a search with any other evaluator (a test's, a tuned
    one) runs in Python.
    """
    binding = _BY_GAME.get(evaluator.game)
    kernel_type = None if binding is None else binding.kernel_type()
    if binding is None or kernel_type is None or evaluator != evaluator_for(evaluator.game):
        return None
    return CompiledSearch(kernel_type(size_log2), binding.state_of)


def perft(position: Position, depth: int) -> int:
    """:func:`games.perft`, compiled where the position's game has a kernel."""
    binding = _BY_POSITION_TYPE.get(type(position))
    kernel_type = None if binding is None else binding.kernel_type()
    if binding is None or kernel_type is None:
        return python_perft(position, depth)
    return kernel_type.perft(binding.state_of(position), depth)
