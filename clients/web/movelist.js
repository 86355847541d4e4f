/** A game's moves in notation, numbered in pairs, optionally clickable to jump to a ply. */

import { h, replaceChildren } from "./dom.js";

/**
 * Fills `list` (an `<ol>`) with the moves, one `<li>` per move pair.
 * @param {HTMLOListElement} list
 * @param {string[]} moves
 * @param {{current?: number, onSelect?: (ply: number) => void, sides: string[]}} options
 *   `current` is the ply shown (moves played), marking the move that led there.
 */
export function renderMoveList(list, moves, { current = moves.length, onSelect, sides }) {
  const pairs = [];
  for (let index = 0; index < moves.length; index += 2) pairs.push(index);
  replaceChildren(
    list,
    pairs.map((index) =>
      h(
        "li",
        {},
        [index, index + 1]
          .filter((ply) => ply < moves.length)
          .map((ply) => {
            const label = `move ${ply + 1}, ${sides[ply % 2] ?? ""} ${moves[ply]}`;
            const isCurrent = ply + 1 === current;
            if (!onSelect) {
              return h(
                "span",
                { class: isCurrent ? "move current" : "move", "aria-label": label },
                moves[ply],
              );
            }
            return h(
              "button",
              {
                type: "button",
                class: isCurrent ? "move current" : "move",
                "aria-label": label,
                "aria-current": isCurrent ? "step" : null,
                onclick: () => onSelect(ply + 1),
              },
              moves[ply],
            );
          }),
      ),
    ),
  );
  // Scroll the list itself (never the page) so the current move stays in view.
  const marked = list.querySelector(".current");
  if (marked) list.scrollTop = Math.max(0, marked.offsetTop - list.clientHeight / 2);
}
