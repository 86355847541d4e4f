/**
 * Chess: squares named as players name them, a1 at White's bottom left; the grid is FEN's letters,
 * rank 8 first. A move is UCI: "e2e4", "e1g1" to castle (the king's two squares), "e7e8q" to promote,
 * so the four promotions of a pawn share their two squares and the board asks which piece. White
 * (seat 0) moves first; Black's player sees the board turned round.
 *
 * The pieces are Colin M. L. Burnett's set (chess-pieces/, under the BSD licence: see its LICENSE.md).
 */

import { svg } from "../dom.js";
import { square } from "./pieces.js";

const FILES = "abcdefgh";
const KINDS = { p: "pawn", n: "knight", b: "bishop", r: "rook", q: "queen", k: "king" };
const UCI = /^([a-h])([1-8])([a-h])([1-8])([qrbn]?)$/;

/** The seat owning a grid letter: capitals are White's (seat 0), small letters Black's; null for none. */
function ownerOf(piece) {
  if (!(piece?.toLowerCase() in KINDS)) return null;
  return piece === piece.toUpperCase() ? 0 : 1;
}

/** Each piece's drawing, beside this module wherever the client is served from ("N" is wN.svg). */
const IMAGES = Object.fromEntries(
  [..."PNBRQKpnbrqk"].map((piece) => {
    const file = `${ownerOf(piece) === 0 ? "w" : "b"}${piece.toUpperCase()}.svg`;
    return [piece, new URL(`./chess-pieces/${file}`, import.meta.url).href];
  }),
);

const squareName = (row, col) => `${FILES[col]}${8 - row}`;
const cellOf = (file, rank) => [8 - Number(rank), FILES.indexOf(file)];

/** The cells of a UCI move's two squares, or null if `move` is no UCI move. */
function squaresOf(move) {
  const match = UCI.exec(String(move).trim().toLowerCase());
  return match ? [cellOf(match[1], match[2]), cellOf(match[3], match[4])] : null;
}

function drawPiece(piece, size) {
  return svg("image", {
    class: `piece chess-piece seat${ownerOf(piece)}`,
    href: IMAGES[piece],
    width: size,
    height: size,
  });
}

export default {
  name: "chess",
  title: "Chess",
  movesPieces: true,
  selectHint: "Select one of your pieces, then where it goes.",
  stuckHint: () => "That piece has no legal move now: pick another.",
  coordinates: { column: (col) => FILES[col], row: (row) => String(8 - row) },
  flippedFor: (seat) => seat === 1,
  /** A king stands beside each player's name: White's for seat 0, Black's for seat 1. */
  swatchPieces: ["K", "k"],
  ownerOf,
  cellName: squareName,
  pathOf: (move) => squaresOf(move) ?? [],
  attempt: (path) => (path.length === 2 ? path.map(([row, col]) => squareName(row, col)).join("") : null),
  /**
   * What tells apart the legal moves that share one path (a pawn's four promotions): the piece to draw
   * and the button's name, from the promoting pawn's side.
   */
  choiceOf(move, grid) {
    const cells = squaresOf(move);
    const letter = String(move).trim().toLowerCase()[4];
    if (!cells || !letter) return null;
    const [row, col] = cells[0];
    const piece = ownerOf(grid[row]?.[col]) === 0 ? letter.toUpperCase() : letter;
    return { piece, label: `Promote to ${KINDS[letter]}` };
  },
  choiceTitle: "Promote the pawn",
  /**
   * The king in check after `lastMove`, as its SAN says (`+`, or `#` for mate): the king of the side
   * that did not make the move, whose piece now stands on the move's target square.
   */
  checkedCells(grid, lastMove, display) {
    const cells = squaresOf(lastMove);
    if (!cells || !/[+#]$/.test(display ?? "")) return [];
    const [row, col] = cells[1];
    const mover = ownerOf(grid[row]?.[col]);
    if (mover === null) return [];
    const king = mover === 0 ? "k" : "K";
    const kingRow = grid.findIndex((line) => line.includes(king));
    return kingRow < 0 ? [] : [[kingRow, grid[kingRow].indexOf(king)]];
  },
  drawCell: (row, col, size) => square(size, (row + col) % 2 ? "square dark" : "square light"),
  drawPiece,
  pieceName(piece, sides) {
    const seat = ownerOf(piece);
    return `${sides[seat] ?? `seat ${seat}`} ${KINDS[piece.toLowerCase()]}`;
  },
};
