/**
 * One SVG board view for every game.
 *
 * A game module (boards/<game>.js) says how its grid looks and how a move in its
 * notation maps to the cells a person clicks; this view draws the grid the server
 * sent, highlights the legal moves the server sent, and turns clicks and keys into
 * moves. It never decides legality: a sequence of clicks that matches no legal move
 * is handed back as an attempt in notation, so the server can explain why it is
 * illegal.
 *
 * Moves are entered as paths of cells. A move of one cell (tic-tac-toe, Connect
 * Four, Othello) is sent on the first click; a checkers move is a path from the
 * piece through each landing square, a chess move from the piece to its square,
 * chosen one click at a time, or by dragging the piece. Legal moves that share a
 * path (a pawn's four promotions) are told apart by a picker on the board.
 */

import { svg } from "../dom.js";
import { seatOf } from "./pieces.js";

const CELL = 100;
const LABEL_MARGIN = 34;
const EDGE = 16;
/** How far the pointer goes, in CSS pixels, before a press on a piece becomes a drag rather than a click. */
const DRAG_THRESHOLD_PX = 6;

const sameCell = (a, b) => a[0] === b[0] && a[1] === b[1];
const startsWith = (path, prefix) => prefix.every((cell, i) => path[i] && sameCell(path[i], cell));

export class BoardView {
  /**
   * @param {object} game the board module of the game (boards/<game>.js)
   * @param {{onMove?: (move: string) => void, onAttempt?: (text: string) => void,
   *          onHint?: (text: string) => void, onSelect?: () => void, onInactive?: () => void,
   *          sides?: string[], readOnly?: boolean}} handlers
   *   `onMove` gets a legal move; `onAttempt` what clicks tried when no legal move matched (for the
   *   server to explain); `onHint` a local hint; `onSelect` a piece picked up, which makes an earlier
   *   hint moot; `onInactive` a click while the viewer may not move.
   *   A `readOnly` board (a replay's) only shows: its cells are no buttons and no tab stops, and it
   *   leaves clicks and keys to the page.
   */
  constructor(game, handlers) {
    this.game = game;
    this.handlers = handlers;
    this.state = { grid: [], legal: [], lastMove: null, seat: null, interactive: false };
    this.selection = [];
    this.choice = null; // the legal moves that share the selected path, while the picker asks which
    this.drag = null; // a press on a piece: where it started, and the piece under the pointer once it moves
    this.dragEnded = false; // a drag just dropped: the click that may follow it is not a click
    this.focus = null;
    this.turned = false; // turned round by the viewer, from the side the seat gives
    this.element = svg("svg", {
      class: `board board-${game.name}`,
      role: "group",
      "aria-label": `${game.title} board`,
      "aria-roledescription": "board",
    });
    if (!handlers.readOnly) {
      this.element.addEventListener("keydown", (event) => this.#onKey(event));
      this.element.addEventListener("pointerdown", (event) => this.#onPointerDown(event));
      this.element.addEventListener("pointermove", (event) => this.#onPointerMove(event));
      this.element.addEventListener("pointerup", (event) => this.#onPointerUp(event));
      this.element.addEventListener("pointercancel", () => this.#cancelDrag());
    }
  }

  /**
   * Draws a new state.
   * @param {{grid: string[], legal?: string[], lastMove?: string|null, lastMoveDisplay?: string|null,
   *          seat?: number|null, interactive?: boolean}} state `lastMoveDisplay` is the last move as
   *          the server writes it for people (SAN in chess, which says check); `seat` is the viewer's
   *          seat (for orientation and which pieces are theirs); `interactive` whether the viewer may
   *          move now.
   */
  update(state) {
    const gridChanged = state.grid.join("/") !== this.state.grid.join("/");
    const defaults = { legal: [], lastMove: null, lastMoveDisplay: null, seat: null, interactive: false };
    this.state = { ...defaults, ...state };
    if (gridChanged || !this.state.interactive) {
      this.selection = [];
      this.choice = null;
      this.drag = null;
    }
    this.#draw();
  }

  /** Clears a half-entered move (after the server refused it, or on Escape). */
  clearSelection() {
    this.selection = [];
    this.choice = null;
    this.#draw();
  }

  /** Width over height of the drawing, for views that size the board to fit the screen. */
  get aspect() {
    if (!this.rows || !this.cols) return 1;
    const width = this.left + this.cols * CELL + EDGE;
    const height = this.top + this.rows * CELL + EDGE;
    return width / height;
  }

  get rows() {
    return this.state.grid.length;
  }

  get cols() {
    return this.state.grid[0]?.length ?? 0;
  }

  /** Room left of the board: row labels, or just a frame. */
  get left() {
    return this.game.coordinates?.row ? LABEL_MARGIN : EDGE;
  }

  /** Room above the board: column labels, or just a frame. */
  get top() {
    return this.game.coordinates?.column ? LABEL_MARGIN : EDGE;
  }

  /** Whether the board is drawn upside down: the seat's side at the bottom, unless turned round. */
  get flipped() {
    return (this.game.flippedFor?.(this.state.seat) ?? false) !== this.turned;
  }

  /** Turns the board round (or back), whoever is looking; the flip button's action. */
  flip() {
    this.turned = !this.turned;
    this.#draw();
  }

  /** The seat whose piece a grid character is (null for none), as the game reads its characters. */
  #ownerOf(piece) {
    return (this.game.ownerOf ?? seatOf)(piece);
  }

  /** Legal moves with the cells that enter them, computed on the current grid. */
  #legalPaths() {
    if (!this.state.interactive) return [];
    return this.state.legal
      .map((move) => ({ move, path: this.game.pathOf(move, this.state.grid) }))
      .filter(({ path }) => path.length > 0);
  }

  #screen(row, col) {
    return this.flipped ? [this.rows - 1 - row, this.cols - 1 - col] : [row, col];
  }

  #draw() {
    const { grid } = this.state;
    const width = this.left + this.cols * CELL + EDGE;
    const height = this.top + this.rows * CELL + EDGE;
    this.element.setAttribute("viewBox", `0 0 ${width} ${height}`);
    this.element.dataset.flipped = String(this.flipped);
    const hadFocus = this.element.contains(document.activeElement);
    const focusedChoice = document.activeElement?.closest?.(".choice-option")?.dataset.choice;
    const legalPaths = this.#legalPaths();
    const candidates = legalPaths.filter(({ path }) => startsWith(path, this.selection));
    const next = candidates.map(({ path }) => path[this.selection.length]).filter(Boolean);
    const { lastMove, lastMoveDisplay } = this.state;
    const lastCells = lastMove ? (this.game.lastMoveCells ?? this.game.pathOf)(lastMove, grid) : [];
    const checkCells = lastMove ? (this.game.checkedCells?.(grid, lastMove, lastMoveDisplay) ?? []) : [];
    const winCells = this.game.winningCells?.(grid) ?? [];
    // Keyboard focus goes to a cell that can be played, unless the person has put it on the board.
    if (!hadFocus && next.length && !next.some((cell) => this.focus && sameCell(cell, this.focus))) {
      this.focus = next[0];
    }
    this.focus ??= this.#firstPlayable();

    const layers = [svg("rect", { class: "board-frame", x: 0, y: 0, width, height, rx: 12 })];
    layers.push(...this.#coordinates());
    for (let row = 0; row < this.rows; row++) {
      for (let col = 0; col < this.cols; col++) {
        layers.push(this.#cell(row, col, { next, lastCells, checkCells, winCells }));
      }
    }
    if (this.choice) layers.push(this.#choiceLayer(width, height));
    if (this.drag?.ghost) layers.push(this.drag.ghost);
    this.element.replaceChildren(...layers);
    // A piece can be dragged: a touch on the board moves it rather than scrolling the page.
    this.element.classList.toggle("can-drag", legalPaths.some(({ path }) => path.length > 1));
    if (!hadFocus) return;
    if (this.choice) this.#choiceElement(focusedChoice)?.focus();
    else this.#cellElement(this.focus)?.focus();
  }

  /** The picker's button for `move`, or its first when `move` is not offered. */
  #choiceElement(move) {
    const options = [...this.element.querySelectorAll(".choice-option")];
    return options.find((option) => option.dataset.choice === move) ?? options[0] ?? null;
  }

  #firstPlayable() {
    for (let row = 0; row < this.rows; row++) {
      for (let col = 0; col < this.cols; col++) if (this.#playable(row, col)) return [row, col];
    }
    return [0, 0];
  }

  #playable(row, col) {
    return this.state.grid[row]?.[col] !== undefined && this.state.grid[row][col] !== " ";
  }

  #coordinates() {
    const labels = [];
    const coords = this.game.coordinates;
    if (!coords) return labels;
    for (let col = 0; col < this.cols; col++) {
      const text = coords.column?.(col);
      if (!text) continue;
      const x = this.left + this.#screen(0, col)[1] * CELL + CELL / 2;
      labels.push(svg("text", { class: "coord", x, y: this.top - 10, "text-anchor": "middle" }, text));
    }
    for (let row = 0; row < this.rows; row++) {
      const text = coords.row?.(row);
      if (!text) continue;
      const y = this.top + this.#screen(row, 0)[0] * CELL + CELL / 2 + 7;
      labels.push(svg("text", { class: "coord", x: this.left / 2 + 2, y, "text-anchor": "middle" }, text));
    }
    return labels;
  }

  #cell(row, col, { next, lastCells, checkCells, winCells }) {
    const [screenRow, screenCol] = this.#screen(row, col);
    const x = this.left + screenCol * CELL;
    const y = this.top + screenRow * CELL;
    const piece = this.state.grid[row][col];
    const playable = piece !== " ";
    const isNext = next.some((cell) => sameCell(cell, [row, col]));
    const isSelected = this.selection.some((cell) => sameCell(cell, [row, col]));
    const isLast = lastCells.some((cell) => sameCell(cell, [row, col]));
    const isCheck = checkCells.some((cell) => sameCell(cell, [row, col]));
    const isWin = winCells.some((cell) => sameCell(cell, [row, col]));
    const classes = ["cell"];
    if (isNext) classes.push(this.selection.length === 0 && piece !== "." ? "movable" : "target");
    if (isSelected) classes.push("selected");
    if (isLast) classes.push("last");
    if (isCheck) classes.push("check");
    if (isWin) classes.push("win");
    if (this.drag?.ghost && sameCell(this.drag.from, [row, col])) classes.push("drag-origin");

    const group = svg("g", {
      class: classes.join(" "),
      "data-cell": this.game.cellName(row, col, this.state.grid),
      transform: `translate(${x} ${y})`,
    });
    group.append(this.game.drawCell(row, col, CELL, this.state.grid));
    if (isLast)
      group.append(svg("rect", { class: "last-mark", x: 3, y: 3, width: CELL - 6, height: CELL - 6 }));
    if (isCheck) {
      group.append(svg("circle", { class: "check-mark", cx: CELL / 2, cy: CELL / 2, r: CELL * 0.47 }));
    }
    if (piece !== "." && playable) group.append(this.game.drawPiece(piece, CELL));
    if (isWin) group.append(svg("circle", { class: "win-mark", cx: CELL / 2, cy: CELL / 2, r: CELL * 0.2 }));
    if (isNext) {
      group.append(
        piece === "."
          ? svg("circle", { class: "hint-dot", cx: CELL / 2, cy: CELL / 2, r: CELL * 0.14 })
          : svg("circle", { class: "hint-ring", cx: CELL / 2, cy: CELL / 2, r: CELL * 0.44 }),
      );
    }
    if (isSelected) {
      group.append(
        svg("rect", { class: "select-mark", x: 4, y: 4, width: CELL - 8, height: CELL - 8, rx: 8 }),
      );
    }
    // A cell's label (checkers' square number) goes over every mark, so no ring or piece hides it.
    const label = this.game.drawLabel?.(row, col, CELL, this.state.grid);
    if (label) group.append(label);
    if (!playable) return group;
    const marks = { isNext, isSelected, isLast, isCheck, isWin };
    if (this.handlers.readOnly) {
      // Still described, square by square, for a screen reader; but nothing here can be pressed.
      group.setAttribute("role", "img");
      group.setAttribute("aria-label", this.#describe(row, col, marks));
      return group;
    }

    const isFocus = this.focus && sameCell(this.focus, [row, col]);
    group.setAttribute("role", "button");
    group.setAttribute("tabindex", isFocus ? "0" : "-1");
    group.setAttribute("aria-label", this.#describe(row, col, marks));
    if (!this.state.interactive) group.setAttribute("aria-disabled", "true");
    group.addEventListener("click", () => {
      if (this.dragEnded) this.dragEnded = false;
      else this.#activate(row, col);
    });
    group.addEventListener("focus", () => {
      this.focus = [row, col];
    });
    return group;
  }

  #describe(row, col, { isNext, isSelected, isLast, isCheck, isWin }) {
    const piece = this.state.grid[row][col];
    const parts = [this.game.cellName(row, col, this.state.grid)];
    parts.push(piece === "." ? "empty" : this.game.pieceName(piece, this.handlers.sides ?? []));
    if (isSelected) parts.push("selected");
    if (isNext) parts.push(this.selection.length === 0 && piece !== "." ? "can move" : "legal move");
    if (isLast) parts.push("last move");
    if (isCheck) parts.push("in check");
    if (isWin) parts.push("winning line");
    return parts.join(", ");
  }

  /**
   * The picker of the moves that share the selected path, on the board over a veil: one square each,
   * from the path's last cell towards the middle (a promotion's pieces stand down the pawn's file).
   */
  #choiceLayer(width, height) {
    const [screenRow, screenCol] = this.#screen(...this.selection.at(-1));
    const step = screenRow < this.rows / 2 ? 1 : -1;
    const title = this.game.choiceTitle ?? "Choose the move";
    const layer = svg("g", { class: "choice", role: "group", "aria-label": title });
    const veil = svg("rect", { class: "choice-veil", x: 0, y: 0, width, height });
    veil.addEventListener("click", () => this.clearSelection());
    layer.append(veil);
    this.choice.forEach((move, index) => {
      const { piece, label } = this.game.choiceOf?.(move, this.state.grid) ?? { piece: null, label: move };
      const x = this.left + screenCol * CELL;
      const y = this.top + (screenRow + step * index) * CELL;
      const option = svg("g", {
        class: "choice-option",
        role: "button",
        tabindex: 0,
        "aria-label": label,
        "data-choice": move,
        transform: `translate(${x} ${y})`,
      });
      option.append(svg("rect", { class: "choice-square", width: CELL, height: CELL, rx: CELL / 2 }));
      option.append(piece ? this.game.drawPiece(piece, CELL) : svg("text", { x: 8, y: CELL / 2 }, label));
      option.addEventListener("click", () => this.#choose(move));
      layer.append(option);
    });
    return layer;
  }

  #choose(move) {
    this.selection = [];
    this.choice = null;
    this.handlers.onMove(move);
    this.#draw();
  }

  #cellElement(cell) {
    if (!cell) return null;
    const name = this.game.cellName(cell[0], cell[1], this.state.grid);
    return this.element.querySelector(`[data-cell="${CSS.escape(name)}"][role="button"]`);
  }

  /** A click or key press on a cell: extend the half-entered move, send it, or explain. */
  #activate(row, col) {
    const { grid, seat } = this.state;
    if (!this.state.interactive) {
      this.handlers.onInactive?.();
      return;
    }
    this.focus = [row, col];
    const target = this.game.clickTarget ? this.game.clickTarget(row, col, grid) : [row, col];
    if (this.selection.length && sameCell(this.selection.at(-1), target) && this.selection.length === 1) {
      this.clearSelection();
      return;
    }
    const legalPaths = this.#legalPaths();
    const extended = [...this.selection, target];
    const matches = legalPaths.filter(({ path }) => startsWith(path, extended));
    const complete = matches.filter(({ path }) => path.length === extended.length);
    if (complete.length === 1) {
      this.#choose(complete[0].move);
      return;
    }
    if (complete.length > 1) {
      // One path, several moves (a promotion): the picker asks which, with the focus on its first button.
      this.selection = extended;
      this.choice = complete.map(({ move }) => move);
      this.#draw();
      this.#choiceElement(null)?.focus();
      return;
    }
    if (matches.length) {
      this.selection = extended;
      this.handlers.onSelect?.();
      this.#draw();
      return;
    }
    // Clicking another piece that can move starts a new move from it.
    if (this.selection.length && legalPaths.some(({ path }) => sameCell(path[0], target))) {
      this.selection = [target];
      this.handlers.onSelect?.();
      this.#draw();
      return;
    }
    const own = seat !== null && this.#ownerOf(grid[target[0]]?.[target[1]]) === seat;
    if (own && this.game.movesPieces) {
      // A piece of the player's with no legal move is not selected: the pieces that can move stay marked.
      this.selection = [];
      this.#draw();
      this.handlers.onHint?.(this.game.stuckHint?.(this.state.legal) ?? "That piece cannot move.");
      return;
    }
    const attempt = this.game.attempt(extended, grid);
    this.selection = [];
    this.#draw();
    if (attempt) this.handlers.onAttempt(attempt);
    else this.handlers.onHint?.(this.game.selectHint ?? "That is not a legal move.");
  }

  #onKey(event) {
    if (this.choice) {
      this.#onChoiceKey(event);
      return;
    }
    const steps = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (event.key in steps) {
      event.preventDefault();
      let [dRow, dCol] = steps[event.key];
      if (this.flipped) [dRow, dCol] = [-dRow, -dCol];
      this.#moveFocus(dRow, dCol);
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      if (this.focus) this.#activate(...this.focus);
    } else if (event.key === "Escape" && this.selection.length) {
      event.preventDefault();
      this.clearSelection();
    }
  }

  /** In the picker: Enter or Space takes the focused move, the arrows go along it, Escape drops it. */
  #onChoiceKey(event) {
    const options = [...this.element.querySelectorAll(".choice-option")];
    const index = options.indexOf(event.target.closest?.(".choice-option"));
    if (event.key === "Escape") {
      event.preventDefault();
      this.clearSelection();
    } else if ((event.key === "Enter" || event.key === " ") && index >= 0) {
      event.preventDefault();
      this.#choose(options[index].dataset.choice);
    } else if (["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].includes(event.key)) {
      event.preventDefault();
      const forward = event.key === "ArrowDown" || event.key === "ArrowRight";
      const next = (Math.max(index, 0) + (forward ? 1 : options.length - 1)) % options.length;
      options[next]?.focus();
    }
  }

  /** The cell under a pointer event, or null off the board. */
  #cellAt(event) {
    const matrix = this.element.getScreenCTM();
    if (!matrix) return null;
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(matrix.inverse());
    const screenRow = Math.floor((point.y - this.top) / CELL);
    const screenCol = Math.floor((point.x - this.left) / CELL);
    if (screenRow < 0 || screenCol < 0 || screenRow >= this.rows || screenCol >= this.cols) return null;
    return this.#screen(screenRow, screenCol); // turning the board round is its own inverse
  }

  /** A press on a piece that begins a legal move of more than one cell may become a drag. */
  #onPointerDown(event) {
    this.dragEnded = false;
    if (event.button !== 0 || !this.state.interactive || this.choice || this.selection.length > 1) return;
    const cell = this.#cellAt(event);
    const starts = cell && this.#legalPaths().some(({ path }) => path.length > 1 && sameCell(path[0], cell));
    if (starts) this.drag = { from: cell, pointerId: event.pointerId, x: event.clientX, y: event.clientY };
  }

  #onPointerMove(event) {
    const drag = this.drag;
    if (!drag || event.pointerId !== drag.pointerId) return;
    if (!drag.ghost) {
      if (Math.hypot(event.clientX - drag.x, event.clientY - drag.y) < DRAG_THRESHOLD_PX) return;
      // Now a drag: the piece follows the pointer, its square's targets marked as for a click.
      this.element.setPointerCapture(event.pointerId);
      const piece = this.state.grid[drag.from[0]][drag.from[1]];
      drag.ghost = svg("g", { class: "drag-ghost" }, this.game.drawPiece(piece, CELL));
      this.selection = [drag.from];
      this.handlers.onSelect?.();
      this.#draw();
    }
    const matrix = this.element.getScreenCTM();
    if (!matrix) return;
    const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(matrix.inverse());
    drag.ghost.setAttribute("transform", `translate(${point.x - CELL / 2} ${point.y - CELL / 2})`);
  }

  /** Dropping the piece on another square enters that square as a click would; elsewhere it goes back. */
  #onPointerUp(event) {
    const drag = this.drag;
    if (!drag || event.pointerId !== drag.pointerId) return;
    this.drag = null;
    if (!drag.ghost) return; // no drag: a click, which the square's own listener takes
    this.dragEnded = true;
    const cell = this.#cellAt(event);
    if (cell && !sameCell(cell, drag.from)) this.#activate(...cell);
    else this.#draw();
  }

  #cancelDrag() {
    if (!this.drag) return;
    this.drag = null;
    this.#draw();
  }

  /** Moves keyboard focus one step, skipping cells no piece can use (checkers' light squares). */
  #moveFocus(dRow, dCol) {
    let [row, col] = this.focus ?? this.#firstPlayable();
    for (let step = 0; step < Math.max(this.rows, this.cols); step++) {
      row += dRow;
      col += dCol;
      if (row < 0 || col < 0 || row >= this.rows || col >= this.cols) return;
      if (this.#playable(row, col)) break;
      if (dRow === 0) continue;
      // Diagonal boards: a light square above or below is skipped sideways onto a dark one.
      if (this.#playable(row, col + 1)) {
        col += 1;
        break;
      }
      if (this.#playable(row, col - 1)) {
        col -= 1;
        break;
      }
    }
    if (!this.#playable(row, col)) return;
    this.focus = [row, col];
    this.#draw();
    this.#cellElement(this.focus)?.focus();
  }
}
