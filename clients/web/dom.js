/**
 * Tiny element builders, so views read like the markup they make without a framework.
 *
 * `h("button", {class: "primary", onclick: go}, "Play")` builds an HTML element;
 * `svg("circle", {cx: 1, cy: 1, r: 1})` builds an SVG one. Attributes that are
 * `null`, `undefined` or `false` are left out; `true` sets an empty attribute;
 * an `on…` attribute holding a function becomes an event listener. Children may be
 * strings, nodes, arrays of them, or nothing.
 */

const SVG_NS = "http://www.w3.org/2000/svg";

function build(element, attrs, children) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "value" && "value" in element) {
      element.value = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

/** Appends children (strings, nodes, nested arrays; nulls skipped) to `parent`. */
export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replaces everything inside `parent` with `children`. */
export function replaceChildren(parent, ...children) {
  parent.replaceChildren();
  return append(parent, children);
}

/** A short human duration such as "3 min ago", for lists of matches. */
export function timeAgo(isoTime, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - Date.parse(isoTime)) / 1000));
  if (Number.isNaN(seconds)) return "";
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(isoTime).toLocaleDateString();
}
