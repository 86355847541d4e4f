/** Drawing helpers the board modules share: squares, discs and which seat a grid character is. */

import { svg } from "../dom.js";

/** The seat owning a grid character (`x`/`X` seat 0, `o`/`O` seat 1), or null for an empty square. */
export function seatOf(piece) {
  if (piece === "x" || piece === "X") return 0;
  if (piece === "o" || piece === "O") return 1;
  return null;
}

export const isKing = (piece) => piece === "X" || piece === "O";

/** "Black king", "Red disc": a piece as a screen reader should say it. */
export function pieceName(piece, sides, noun) {
  const seat = seatOf(piece);
  const side = sides[seat] ?? `seat ${seat}`;
  return `${side} ${isKing(piece) ? "king" : noun}`;
}

export function square(size, className = "square") {
  return svg("rect", { class: className, width: size, height: size });
}

export function disc(piece, size, radius = 0.4) {
  return svg("circle", {
    class: `piece disc seat${seatOf(piece)}`,
    cx: size / 2,
    cy: size / 2,
    r: size * radius,
  });
}

/**
 * The cell named like Othello and tic-tac-toe squares: a column letter from the left,
 * then a row number from the top ("a1" is the top-left corner).
 */
export function letterSquare(row, col) {
  return `${"abcdefgh"[col]}${row + 1}`;
}

/** The cell of a letter-and-number square name, or null if `text` is not one on a board of `size`. */
export function parseLetterSquare(text, size) {
  const match = /^([a-h])([1-8])$/.exec(String(text).trim().toLowerCase());
  if (!match) return null;
  const col = match[1].charCodeAt(0) - 97;
  const row = Number(match[2]) - 1;
  return row < size && col < size ? [row, col] : null;
}

/** How many pieces each seat has on `grid`: [seat 0, seat 1]. */
export function pieceCounts(grid) {
  const counts = [0, 0];
  for (const char of grid.join("")) {
    const seat = seatOf(char);
    if (seat !== null) counts[seat] += 1;
  }
  return counts;
}

/**
 * The cells of every line of `length` pieces of one seat in a row, a column or a diagonal: the
 * winning line of tic-tac-toe and Connect Four, read from the final grid (a game ends at its first).
 */
export function lineCells(grid, length) {
  const rows = grid.length;
  const cols = grid[0]?.length ?? 0;
  const found = new Map();
  for (let row = 0; row < rows; row++) {
    for (let col = 0; col < cols; col++) {
      const seat = seatOf(grid[row][col]);
      if (seat === null) continue;
      for (const [dRow, dCol] of [
        [0, 1],
        [1, 0],
        [1, 1],
        [1, -1],
      ]) {
        const cells = Array.from({ length }, (_, step) => [row + dRow * step, col + dCol * step]);
        if (cells.every(([r, c]) => seatOf(grid[r]?.[c]) === seat)) {
          for (const cell of cells) found.set(cell.join(","), cell);
        }
      }
    }
  }
  return [...found.values()];
}
