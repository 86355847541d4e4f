/**
 * English draughts: the dark squares (the grid's non-space cells) are numbered 1-32
 * left to right, top to bottom, as in PDN. A move is "11-15", a capture lists every
 * landing square ("22x15x8"). Seat 0 (Black) starts on squares 1-12 at the top, so a
 * Black player sees the board turned round, their pieces nearest to them.
 */

import { svg } from "../dom.js";
import { disc, isKing, pieceName, seatOf, square } from "./pieces.js";

let cached = { key: null, value: null };

/** Square number of every dark cell, and the cell of every number, read from the grid itself. */
function numbering(grid) {
  const key = grid.join("/");
  if (cached.key !== key) cached = { key, value: computeNumbering(grid) };
  return cached.value;
}

function computeNumbering(grid) {
  const numbers = new Map();
  const cells = [null];
  grid.forEach((line, row) => {
    [...line].forEach((char, col) => {
      if (char === " ") return;
      cells.push([row, col]);
      numbers.set(`${row},${col}`, cells.length - 1);
    });
  });
  return { numbers, cells };
}

const squareNumber = (grid, row, col) => numbering(grid).numbers.get(`${row},${col}`);

function crown(size) {
  const c = size / 2;
  const w = size * 0.2;
  const points = [
    [c - w, c + w * 0.55],
    [c - w, c - w * 0.35],
    [c - w * 0.5, c + w * 0.1],
    [c, c - w * 0.6],
    [c + w * 0.5, c + w * 0.1],
    [c + w, c - w * 0.35],
    [c + w, c + w * 0.55],
  ];
  return svg("polygon", { class: "crown", points: points.map((p) => p.join(",")).join(" ") });
}

export default {
  name: "checkers",
  title: "Checkers",
  countNoun: "pieces",
  movesPieces: true,
  selectHint: "Select one of your pieces, then where it goes.",
  /** Why one of the player's pieces cannot be selected: it has no legal move, given `legal`. */
  stuckHint: (legal) =>
    legal.some((move) => move.includes("x"))
      ? "A capture is compulsory: use a ringed piece."
      : "That piece cannot move: pick a ringed one.",
  coordinates: null,
  flippedFor: (seat) => seat === 0,
  /** A spectator sees the board unturned, Black at the top: so White's player strip goes below it. */
  spectatorBottomSeat: 1,
  cellName(row, col, grid) {
    const number = squareNumber(grid, row, col);
    return number ? `square ${number}` : `light square ${row},${col}`;
  },
  pathOf(move, grid) {
    const { cells } = numbering(grid);
    const path = String(move)
      .split(/[-x]/)
      .map((part) => cells[Number(part)]);
    return path.length >= 2 && path.every(Boolean) ? path : [];
  },
  /** A path of two or more squares in PDN: "x" between squares two rows apart (a jump), else "-". */
  attempt(path, grid) {
    if (path.length < 2) return null;
    const numbers = path.map(([row, col]) => squareNumber(grid, row, col));
    const jump = Math.abs(path[1][0] - path[0][0]) === 2;
    return numbers.join(jump ? "x" : "-");
  },
  drawCell: (row, col, size, grid) => square(size, grid[row][col] !== " " ? "square dark" : "square light"),
  /** A dark square's number in its corner, drawn over the pieces and the rings of the legal moves. */
  drawLabel(row, col, size, grid) {
    if (grid[row][col] === " ") return null;
    return svg("text", { class: "square-number", x: 5, y: 19 }, String(squareNumber(grid, row, col)));
  },
  drawPiece(piece, size) {
    const group = svg("g", { class: `piece man seat${seatOf(piece)}` });
    group.append(disc(piece, size, 0.38));
    group.append(svg("circle", { class: "rim", cx: size / 2, cy: size / 2, r: size * 0.27 }));
    if (isKing(piece)) group.append(crown(size));
    return group;
  },
  pieceName: (piece, sides) => pieceName(piece, sides, "man"),
};
