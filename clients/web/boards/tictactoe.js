/** Tic-tac-toe: cells a1-c3 (column from the left, row from the top); seat 0 plays O and moves first. */

import { svg } from "../dom.js";
import { letterSquare, lineCells, parseLetterSquare, pieceName, seatOf, square } from "./pieces.js";

function drawMark(piece, size) {
  const pad = size * 0.24;
  if (seatOf(piece) === 0) {
    return svg("circle", { class: "piece mark seat0", cx: size / 2, cy: size / 2, r: size / 2 - pad });
  }
  const far = size - pad;
  return svg(
    "g",
    { class: "piece mark seat1" },
    svg("line", { x1: pad, y1: pad, x2: far, y2: far }),
    svg("line", { x1: far, y1: pad, x2: pad, y2: far }),
  );
}

export default {
  name: "tictactoe",
  title: "Tic-tac-toe",
  coordinates: { column: (col) => "abc"[col], row: (row) => String(row + 1) },
  cellName: letterSquare,
  pathOf(move) {
    const cell = parseLetterSquare(move, 3);
    return cell ? [cell] : [];
  },
  /** The three in a row that won (two lines at once when the last mark made both), marked on the board. */
  winningCells: (grid) => lineCells(grid, 3),
  attempt: (path) => (path.length === 1 ? letterSquare(...path[0]) : null),
  drawCell: (row, col, size) => square(size),
  drawPiece: drawMark,
  pieceName: (piece, sides) => pieceName(piece, sides, "mark"),
};
