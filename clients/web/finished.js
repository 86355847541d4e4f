/** Finished games, newest first, filtered by game, outcome and player, a page at a time. */

import { api } from "./api.js";
import { loadCatalog } from "./catalog.js";
import { h, replaceChildren, timeAgo } from "./dom.js";
import { resultText, seatNames } from "./replay.js";

const PAGE_SIZE = 20;

export function mount(container, app) {
  let catalog = null;
  let nextBefore = null;
  let loads = 0;
  const params = new URLSearchParams(location.search);

  const game = h("select", { id: "filter-game", name: "game" });
  const status = h(
    "select",
    { id: "filter-status", name: "status" },
    h("option", { value: "finished" }, "Finished"),
    h("option", { value: "aborted" }, "Aborted"),
  );
  const mine = h("input", { type: "checkbox", id: "filter-mine", name: "mine" });
  const list = h("ul", { class: "match-list finished-list", "aria-live": "polite" });
  const more = h("button", { type: "button", hidden: true, onclick: () => load(false) }, "Older games");
  const form = h(
    "form",
    {
      class: "filters",
      role: "search",
      "aria-label": "Filter finished games",
      onchange: () => applyFilters(),
    },
    h("div", { class: "field" }, h("label", { for: "filter-game" }, "Game"), game),
    h("div", { class: "field" }, h("label", { for: "filter-status" }, "Status"), status),
    h("div", { class: "field check" }, mine, h("label", { for: "filter-mine" }, "Only my games")),
  );
  form.addEventListener("submit", (event) => event.preventDefault());

  replaceChildren(
    container,
    h("section", { class: "panel finished" }, h("h1", {}, "Finished games"), form, list, more),
  );

  function filters() {
    const me = app.identity?.playerId;
    return {
      game: game.value || undefined,
      status: status.value,
      player: mine.checked && me ? me : undefined,
      limit: PAGE_SIZE,
    };
  }

  function applyFilters() {
    const query = new URLSearchParams();
    if (game.value) query.set("game", game.value);
    if (status.value !== "finished") query.set("status", status.value);
    if (mine.checked) query.set("mine", "1");
    history.replaceState(null, "", `/finished${query.size ? `?${query}` : ""}`);
    load(true);
  }

  function item(record) {
    const info = catalog.byName[record.game];
    const sides = info?.sides ?? ["First", "Second"];
    const names = seatNames(record, sides);
    const href = `/replay/${encodeURIComponent(record.id)}`;
    return h(
      "li",
      { class: "match-entry", "data-match": record.id },
      h("span", { class: `game-badge game-${record.game}` }, info?.title ?? record.game),
      h("span", { class: "players" }, `${names[0]} vs ${names[1]}`),
      h(
        "span",
        { class: "meta" },
        resultText(record, names),
        " · ",
        timeAgo(record.finished_at ?? record.created_at),
      ),
      h(
        "span",
        { class: "entry-actions" },
        h(
          "a",
          {
            class: "button",
            href,
            "data-link": true,
            "aria-label": `Replay ${info?.title ?? ""} ${names[0]} vs ${names[1]}`,
          },
          "Replay",
        ),
      ),
    );
  }

  /** Loads the first page (`fresh`) or the next one; a newer load makes an older answer moot. */
  async function load(fresh) {
    const ticket = ++loads;
    list.setAttribute("aria-busy", "true");
    try {
      const page = await api.matches({ ...filters(), before: fresh ? undefined : nextBefore });
      if (ticket !== loads) return;
      if (fresh) replaceChildren(list);
      list.append(...page.matches.map(item));
      if (!list.children.length)
        list.append(h("li", { class: "empty" }, "No games match these filters yet."));
      nextBefore = page.next_before;
      more.hidden = !nextBefore;
    } catch (error) {
      app.toast(`Could not load games: ${error.message}`, "error");
    } finally {
      if (ticket === loads) list.setAttribute("aria-busy", "false");
    }
  }

  (async () => {
    catalog = await loadCatalog();
    replaceChildren(
      game,
      h("option", { value: "" }, "All games"),
      catalog.games.map((g) => h("option", { value: g.name }, g.title)),
    );
    game.value = params.get("game") ?? "";
    status.value = params.get("status") ?? "finished";
    mine.checked = params.get("mine") === "1";
    mine.disabled = !app.identity?.playerId;
    load(true);
  })();
  document.title = "Finished games · Ply Arena";
  return () => {
    document.title = "Ply Arena";
  };
}
