/** Othello: squares a1-h8 (column from the left, row from the top) and "pass"; seat 0 Black moves first. */

import { disc, letterSquare, parseLetterSquare, pieceName, square } from "./pieces.js";

export default {
  name: "othello",
  title: "Othello",
  countNoun: "discs",
  coordinates: { column: (col) => "abcdefgh"[col], row: (row) => String(row + 1) },
  cellName: letterSquare,
  /** "pass" enters no cell: the match view offers it as a button. */
  pathOf(move) {
    const cell = parseLetterSquare(move, 8);
    return cell ? [cell] : [];
  },
  attempt: (path) => (path.length === 1 ? letterSquare(...path[0]) : null),
  drawCell: (row, col, size) => square(size),
  drawPiece: (piece, size) => disc(piece, size, 0.41),
  pieceName: (piece, sides) => pieceName(piece, sides, "disc"),
};
