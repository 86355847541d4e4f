"""easyAI's Negamax on Connect Four, for the side-by-side benchmark only.

easyAI (an optional bench dependency) searches any ``TwoPlayerGame``. It runs
here on two games: its own ``ConnectFour`` example (numpy boards), and
:class:`EasyAIConnectFour`, our bitboard rules behind easyAI's interface, so the
benchmark can tell the cost of easyAI's search from the cost of its rules. Both
score a finished game as easyAI's examples do: -100 for the side that lost.
"""

from __future__ import annotations

from easyAI import Negamax, TwoPlayerGame
from easyAI.games.ConnectFour import ConnectFour

from games import get_game
from games.connect4 import ConnectFour as OurConnectFour

LOSS = -100


class CountingConnectFour(ConnectFour):
    """easyAI's own Connect Four, counting the moves its search makes (its nodes).

    easyAI's search copies the game before each move, so the count lives in the
    class, shared by the copies; one search at a time.
    """

    moves_made = 0

    def __init__(self) -> None:
        super().__init__(players=[None, None])

    @property
    def nodes(self) -> int:
        return CountingConnectFour.moves_made

    def make_move(self, column: int) -> None:
        CountingConnectFour.moves_made += 1
        super().make_move(column)


class EasyAIConnectFour(TwoPlayerGame):
    """Our Connect Four position presented as an easyAI game; moves are undone from a stack."""

    def __init__(self, position: OurConnectFour) -> None:
        self.players = [None, None]
        self.current_player = 1
        self.position = position
        self.history: list[OurConnectFour] = []
        self.nodes = 0

    def possible_moves(self) -> list[int]:
        return self.position.legal_moves()

    def make_move(self, column: int) -> None:
        self.nodes += 1
        self.history.append(self.position)
        self.position = self.position.play(column)

    def unmake_move(self, column: int) -> None:
        self.position = self.history.pop()

    def is_over(self) -> bool:
        return self.position.outcome() is not None

    def lose(self) -> bool:
        outcome = self.position.outcome()
        return outcome is not None and outcome.winner is not None and outcome.winner != self.position.turn


def _lost(game: CountingConnectFour | EasyAIConnectFour) -> int:
    return LOSS if game.lose() else 0


def _value_sign(game: CountingConnectFour | EasyAIConnectFour, depth: int) -> tuple[int, int]:
    """Search ``game`` to ``depth`` with easyAI's Negamax: (sign of its value, nodes)."""
    ai = Negamax(depth, _lost)
    ai(game)
    return (ai.alpha > 0) - (ai.alpha < 0), game.nodes


def solve_with_easyai_board(moves: str, depth: int) -> tuple[int, int]:
    """easyAI on its own ConnectFour after ``moves`` (Pons digits)."""
    game = CountingConnectFour()
    for digit in moves:
        game.make_move(int(digit) - 1)
        game.switch_player()
    CountingConnectFour.moves_made = 0
    return _value_sign(game, depth)


def solve_with_our_rules(moves: str, depth: int) -> tuple[int, int]:
    """easyAI on our bitboard rules after ``moves`` (Pons digits)."""
    return _value_sign(EasyAIConnectFour(get_game("connect4").replay(list(moves))), depth)
