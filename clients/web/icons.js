/**
 * The few icons the client draws, as inline SVG (no icon font, no emoji: both depend on
 * fonts a browser may not have). Icons are decorative: the control around one names it.
 */

import { h, svg } from "./dom.js";

const PATHS = {
  first: "M5 4h2v16H5zM19 4v16L8 12z",
  previous: "M17 4v16L6 12z",
  next: "M7 4v16l11-8z",
  last: "M17 4h2v16h-2zM5 4v16l11-8z",
  play: "M7 4v16l13-8z",
  pause: "M6 4h4v16H6zM14 4h4v16h-4z",
};

export function icon(name) {
  return svg(
    "svg",
    { class: "icon", viewBox: "0 0 24 24", "aria-hidden": "true", focusable: "false" },
    svg("path", { d: PATHS[name] }),
  );
}

/** The small "bot" tag after a computer player's name. */
export function botBadge() {
  return h("span", { class: "bot-badge", title: "a computer player" }, "bot");
}
