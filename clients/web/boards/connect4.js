/**
 * Connect Four: a move is a column digit "1"-"7" from the left; seat 0 Red moves first.
 * Grid row 0 is the top, so a stone lands on the lowest empty cell of its column.
 */

import { svg } from "../dom.js";
import { disc, lineCells, pieceName } from "./pieces.js";

/** The lowest empty row of a column, or -1 when the column is full. */
function landingRow(grid, col) {
  for (let row = grid.length - 1; row >= 0; row--) if (grid[row][col] === ".") return row;
  return -1;
}

/** The highest stone of a column (the last one dropped there), or -1 when it is empty. */
function topRow(grid, col) {
  for (let row = 0; row < grid.length; row++) if (grid[row][col] !== ".") return row;
  return -1;
}

function columnOf(move) {
  const col = Number(move) - 1;
  return /^[1-9]$/.test(String(move).trim()) ? col : -1;
}

export default {
  name: "connect4",
  title: "Connect Four",
  coordinates: { column: (col) => String(col + 1) },
  cellName: (row, col, grid) => `column ${col + 1}, row ${grid.length - row}`,
  pathOf(move, grid) {
    const col = columnOf(move);
    const row = col < 0 ? -1 : landingRow(grid, col);
    return row < 0 ? [] : [[row, col]];
  },
  lastMoveCells(move, grid) {
    const col = columnOf(move);
    const row = col < 0 ? -1 : topRow(grid, col);
    return row < 0 ? [] : [[row, col]];
  },
  /** The four (or more) in a row that won, marked on the board. */
  winningCells: (grid) => lineCells(grid, 4),
  /** Any cell of a column drops into it; a full column aims at its top so the server can say so. */
  clickTarget(row, col, grid) {
    const landing = landingRow(grid, col);
    return [landing < 0 ? 0 : landing, col];
  },
  attempt: (path) => (path.length === 1 ? String(path[0][1] + 1) : null),
  drawCell(row, col, size) {
    return svg(
      "g",
      {},
      svg("rect", { class: "square", width: size, height: size }),
      svg("circle", { class: "hole", cx: size / 2, cy: size / 2, r: size * 0.4 }),
    );
  },
  drawPiece: (piece, size) => disc(piece, size, 0.4),
  pieceName: (piece, sides) => pieceName(piece, sides, "disc"),
};
