/** The board module of every game, by the game's name on the wire. */

import checkers from "./checkers.js";
import chess from "./chess.js";
import connect4 from "./connect4.js";
import othello from "./othello.js";
import tictactoe from "./tictactoe.js";

export const BOARDS = { tictactoe, connect4, othello, checkers, chess };

/** The board module for `game`; throws naming the games there are if it is unknown. */
export function boardFor(game) {
  const board = BOARDS[game];
  if (!board) throw new Error(`no board for game "${game}"; known: ${Object.keys(BOARDS).join(", ")}`);
  return board;
}
