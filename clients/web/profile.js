/**
 * A player's profile at `/@/{name}` (or `/@/id:{player id}`): ratings per game with their history
 * plotted, wins, draws and losses, and the game history with filters, each game linking to its replay.
 * It reads `GET /api/players/{name}` (docs/protocol.md); docs/player-ratings.md says how ratings work.
 */

import { api } from "./api.js";
import { h, replaceChildren, svg, timeAgo } from "./dom.js";
import { botBadge } from "./icons.js";

/** The path of a player's profile: by id, which names one player for good (names are not unique). */
export function profilePath(player) {
  return `/@/id:${encodeURIComponent(player.id)}`;
}

/** A player's name as a link to their profile. */
export function profileLink(player, ...extra) {
  return h(
    "a",
    { class: "profile-link", href: profilePath(player), "data-link": true, title: `${player.name}'s profile` },
    player.name,
    ...extra,
  );
}

const RESULT_TEXT = { win: "Won", draw: "Draw", loss: "Lost" };
const PLOT = { width: 320, height: 120, pad: 8 };

/** The rating history as an SVG line, oldest at the left, with the first (1500) as its start. */
function historyPlot(title, rating) {
  const points = [1500, ...rating.history.map((point) => point.rating)];
  const low = Math.min(...points) - 20;
  const high = Math.max(...points) + 20;
  const x = (i) => PLOT.pad + (i * (PLOT.width - 2 * PLOT.pad)) / Math.max(1, points.length - 1);
  const y = (value) => PLOT.height - PLOT.pad - ((value - low) * (PLOT.height - 2 * PLOT.pad)) / (high - low);
  const line = points.map((value, i) => `${x(i).toFixed(1)},${y(value).toFixed(1)}`).join(" ");
  return svg(
    "svg",
    {
      class: "rating-plot",
      viewBox: `0 0 ${PLOT.width} ${PLOT.height}`,
      role: "img",
      "aria-label": `${title} rating history: ${points.join(", ")}`,
    },
    svg("polyline", { points: line, fill: "none", stroke: "currentColor", "stroke-width": 2 }),
    points.map((value, i) => svg("circle", { cx: x(i), cy: y(value), r: 3, fill: "currentColor" })),
  );
}

function ratingCard(game, rating) {
  const title = game?.title ?? "";
  return h(
    "li",
    { class: "rating-card", "data-game": game?.name },
    h("h3", {}, title),
    h(
      "p",
      { class: "rating-value" },
      h("strong", {}, `${rating.rating}${rating.provisional ? "?" : ""}`),
      ` ±${rating.deviation * 2}`,
      rating.provisional ? h("span", { class: "meta" }, " provisional") : null,
    ),
    h("p", { class: "meta" }, `${rating.games} rated ${rating.games === 1 ? "game" : "games"}`),
    historyPlot(title, rating),
  );
}

function countsTable(catalog, counts) {
  const games = Object.keys(counts);
  if (!games.length) return h("p", { class: "meta" }, "No finished games yet.");
  return h(
    "table",
    { class: "counts" },
    h("thead", {}, h("tr", {}, h("th", {}, "Game"), h("th", {}, "Won"), h("th", {}, "Drawn"), h("th", {}, "Lost"))),
    h(
      "tbody",
      {},
      games.map((name) =>
        h(
          "tr",
          { "data-game": name },
          h("td", {}, catalog[name]?.title ?? name),
          h("td", {}, counts[name].wins),
          h("td", {}, counts[name].draws),
          h("td", {}, counts[name].losses),
        ),
      ),
    ),
  );
}

function gameRow(catalog, game) {
  const change = game.rating ? `${game.rating.before} → ${game.rating.after}` : null;
  return h(
    "li",
    { class: "match-entry", "data-match": game.match_id },
    h("span", { class: `game-badge game-${game.game}` }, catalog[game.game]?.title ?? game.game),
    h(
      "span",
      { class: "players" },
      game.opponent
        ? ["against ", profileLink(game.opponent, game.opponent.bot ? botBadge() : null)]
        : "no opponent",
    ),
    h(
      "span",
      { class: `meta result result-${game.result ?? "aborted"}` },
      [RESULT_TEXT[game.result] ?? "Aborted", game.rated ? "rated" : "casual", change, timeAgo(game.created_at)]
        .filter(Boolean)
        .join(" · "),
    ),
    h(
      "span",
      { class: "entry-actions" },
      h("a", { class: "button", href: `/replay/${encodeURIComponent(game.match_id)}`, "data-link": true }, "Replay"),
    ),
  );
}

function filterSelect(name, label, options, onchange) {
  const id = `profile-filter-${name}`;
  const control = h(
    "select",
    { id, name, onchange },
    options.map(([value, text]) => h("option", { value }, text)),
  );
  return [h("div", { class: "field" }, h("label", { for: id }, label), control), control];
}

export function mount(container, app, [name]) {
  let stopped = false;
  const filters = {};
  const list = h("ul", { class: "match-list", id: "profile-games" });
  const more = h("button", { type: "button", hidden: true }, "More games");
  let nextBefore = null;
  let catalog = {};

  let latest = 0;
  /** Shows the games the filters select; of loads that overlap (filters changed quickly) only the last. */
  async function loadGames(append) {
    const asked = ++latest;
    const page = await api.profile(name, { ...filters, before: append ? nextBefore : undefined });
    if (stopped || asked !== latest) return;
    nextBefore = page.next_before;
    more.hidden = !nextBefore;
    const rows = page.games.map((game) => gameRow(catalog, game));
    if (append) list.append(...rows);
    else replaceChildren(list, rows.length ? rows : h("li", { class: "meta" }, "No games match."));
  }

  async function show() {
    const [profile, games] = await Promise.all([api.profile(name), api.games()]);
    if (stopped) return;
    catalog = Object.fromEntries(games.games.map((game) => [game.name, game]));
    const player = profile.player;
    const change = (key) => (event) => {
      filters[key] = event.target.value || undefined;
      loadGames(false).catch((error) => app.toast(error.message, "error"));
    };
    const [gameFilter] = filterSelect(
      "game",
      "Game",
      [["", "All games"], ...games.games.map((game) => [game.name, game.title])],
      change("game"),
    );
    const [resultFilter] = filterSelect(
      "result",
      "Result",
      [["", "Any result"], ["win", "Won"], ["draw", "Drawn"], ["loss", "Lost"]],
      change("result"),
    );
    const [ratedFilter] = filterSelect(
      "rated",
      "Rated",
      [["", "Rated and casual"], ["true", "Rated"], ["false", "Casual"]],
      change("rated"),
    );
    more.onclick = () => loadGames(true).catch((error) => app.toast(error.message, "error"));
    const ratings = Object.entries(profile.ratings);
    replaceChildren(
      container,
      h(
        "section",
        { class: "panel profile", "data-player": player.id },
        h("h1", {}, player.name, player.bot ? botBadge() : null),
        h("p", { class: "meta" }, `Playing since ${new Date(player.created_at).toLocaleDateString()}`),
        h("h2", {}, "Ratings"),
        ratings.length
          ? h("ul", { class: "rating-cards" }, ratings.map(([game, rating]) => ratingCard(catalog[game], rating)))
          : h("p", { class: "meta" }, player.bot ? "A bot keeps its ladder rating." : "No rated games yet."),
        h("h2", {}, "Results"),
        countsTable(catalog, profile.counts),
        h("h2", {}, "Games"),
        h("div", { class: "field-row profile-filters" }, gameFilter, resultFilter, ratedFilter),
        list,
        more,
      ),
    );
    await loadGames(false);
  }

  show().catch((error) => {
    if (stopped) return;
    if (error.status === 404) app.showProblem(container, "No such player", error.message);
    else app.showProblem(container, "The profile did not load", error.message);
  });
  return () => {
    stopped = true;
  };
}
