/**
 * The "Flip board" button of the match and replay pages: turns the board round for whoever looks,
 * player or spectator, and moves the player strips above and below it along with the board.
 */

import { h } from "./dom.js";

/**
 * A toggle that flips `board` (a BoardView); on a page with a strip on each side of the board's
 * holder, the two strips change places too, so each stays on its own side's edge.
 */
export function flipButton(board) {
  const button = h("button", {
    type: "button",
    class: "flip-board",
    "aria-pressed": "false",
    onclick: () => {
      board.flip();
      button.setAttribute("aria-pressed", String(board.turned));
      swapStrips(board.element.closest(".board-holder"));
    },
  });
  button.textContent = "Flip board";
  return button;
}

/** The player strips just above and below `holder` change places (none there: nothing changes). */
function swapStrips(holder) {
  const above = holder?.previousElementSibling;
  const below = holder?.nextElementSibling;
  if (!above?.classList.contains("player-strip") || !below?.classList.contains("player-strip")) return;
  holder.before(below);
  holder.after(above);
}
