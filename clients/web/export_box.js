/**
 * The export box of the replay page: the exported game text, wrapped to the box's width only
 * between moves (and between tag words), never inside one, so "O-O-O" or "11-15" stay whole.
 */

import { h } from "./dom.js";

/**
 * A `<pre>` of `text` whose runs of non-space characters each go in a span that does not break;
 * the spaces and line ends between them stay as text, so selecting and copying gives `text` as is.
 */
export function exportBox(text) {
  const parts = String(text)
    .split(/(\s+)/)
    .filter(Boolean)
    .map((part) => (/^\s+$/.test(part) ? part : h("span", { class: "export-token" }, part)));
  return h("pre", { class: "export", tabindex: 0, "aria-label": "Exported game text" }, parts);
}
