/**
 * The lobby: play a person now (quick_pair.js), play a bot, open a match for people, and the live list
 * of open and live public matches per game, with your own unfinished games first.
 */

import { api } from "./api.js";
import { shownName, shownPlayer } from "./bot_names.js";
import { loadCatalog } from "./catalog.js";
import { h, replaceChildren } from "./dom.js";
import { botBadge } from "./icons.js";
import { botForm, peopleForm } from "./lobby_forms.js";
import { profileLink } from "./profile.js";
import { quickPairing } from "./quick_pair.js";

/** A seat of a lobby entry: its player (a bot by its level's name, from `levels`), or "open seat". */
function playerLabel(player, game, levels) {
  if (!player) return h("span", { class: "open-seat" }, "open seat");
  return h(
    "span",
    { class: player.bot ? "player bot" : "player" },
    profileLink(shownPlayer(player, game, levels), player.bot ? botBadge() : null),
  );
}

/** The unfinished matches (open or live) on this server in which the connection's player holds a seat. */
async function unfinishedMatchesOf(connection) {
  const player = connection.player.id;
  const pages = await Promise.all(
    ["live", "open"].map((status) => api.matches({ player, status, limit: 50 })),
  );
  const here = connection.welcome?.instance;
  // Matches hosted by another instance sharing the database are played there, not through this page.
  return pages.flatMap((page) => page.matches).filter((record) => !here || record.host === here);
}

/** The web address of the server whose WebSocket endpoint is `url` (`ws://host:port/ws`). */
function pageBase(url) {
  const address = new URL(url);
  address.protocol = address.protocol === "wss:" ? "https:" : "http:";
  return address.origin;
}

export function mount(container, app) {
  let catalog = null;
  let connection = null;
  const entries = new Map();
  // How many entries of each kind the last snapshot left out (the server bounds it: docs/protocol.md).
  // Kept as the snapshot said until the next one: a later lobby.update or lobby.remove does not say
  // whether its match was one of those, so the counts cannot follow them exactly.
  let omitted = { bot_requests: 0, open: 0, live: 0 };
  const cleanups = [];
  let filter = "all";
  let mineRequests = 0;
  let mineTimer = null;
  let shownMine = new Set();
  let mineRecords = [];
  const endedHere = new Set(); // matches this page saw end: the match list may lag behind the event
  let mounted = true;

  const actions = h("div", { class: "lobby-actions" });
  const mine = h("section", {
    class: "panel your-games",
    "aria-labelledby": "your-games-title",
    hidden: true,
  });
  const tabs = h("div", { class: "tabs", role: "toolbar", "aria-label": "Show matches of" });
  const list = h("ul", { class: "match-list", "aria-live": "polite", "aria-busy": "true" });
  const listPanel = h(
    "section",
    { class: "panel", "aria-labelledby": "lobby-list-title" },
    h("h2", { id: "lobby-list-title" }, "Open and live matches"),
    tabs,
    list,
  );
  replaceChildren(container, h("div", { class: "lobby" }, actions, mine, listPanel));

  async function create(request, button) {
    button.disabled = true;
    try {
      const state = await connection.request({ type: "match.create", ...request });
      app.navigate(`/match/${encodeURIComponent(state.match_id)}`);
    } catch (error) {
      app.toast(`Could not create the match: ${error.message}`, "error");
      button.disabled = false;
    }
  }

  function renderTabs() {
    const options = [["all", "All games"], ...catalog.games.map((g) => [g.name, g.title])];
    replaceChildren(
      tabs,
      options.map(([value, text]) =>
        h(
          "button",
          {
            type: "button",
            class: "tab",
            "aria-pressed": String(filter === value),
            onclick: () => {
              filter = value;
              renderTabs();
              renderList();
            },
          },
          text,
          " ",
          h(
            "span",
            { class: "count" },
            String([...entries.values()].filter((e) => value === "all" || e.game === value).length),
          ),
        ),
      ),
    );
  }

  function entryItem(entry) {
    const game = catalog.byName[entry.game];
    const me = connection?.player?.id;
    const mySeat = entry.seats.findIndex((player) => player?.id === me);
    const free = entry.seats.findIndex((player) => !player);
    const href = `/match/${encodeURIComponent(entry.match_id)}`;
    const buttons = [];
    const here = connection?.welcome?.instance;
    if (here && entry.host && entry.host !== here) {
      // Hosted by another instance sharing the broker: played there, through that server's own page
      // (this connection cannot join it), where one signs in and takes the seat.
      buttons.push(
        h(
          "a",
          {
            class: "button",
            href: `${pageBase(entry.url)}${href}`,
            "aria-label": `Open ${game?.title} match on its server, ${entry.host}`,
          },
          "Open on its server",
        ),
      );
    } else if (mySeat >= 0) {
      buttons.push(
        h(
          "a",
          { class: "button primary", href, "data-link": true, "aria-label": `Resume ${game?.title} match` },
          "Resume",
        ),
      );
    } else if (entry.status === "open" && free >= 0 && !entry.bot) {
      buttons.push(
        h(
          "button",
          {
            type: "button",
            class: "primary",
            "aria-label": `Join ${game?.title} match as ${game?.sides[free]}`,
            onclick: async (event) => {
              event.target.disabled = true;
              try {
                await connection.request({ type: "match.join", match_id: entry.match_id });
                app.navigate(href);
              } catch (error) {
                app.toast(`Could not join: ${error.message}`, "error");
                event.target.disabled = false;
              }
            },
          },
          "Join",
        ),
      );
    }
    if (mySeat < 0) {
      buttons.push(
        h(
          "a",
          { class: "button", href, "data-link": true, "aria-label": `Watch ${game?.title} match` },
          "Watch",
        ),
      );
    }
    const waiting =
      entry.status === "open" && entry.bot ? ` · waiting for a level ${entry.bot.level} bot` : "";
    return h(
      "li",
      { class: `match-entry status-${entry.status}`, "data-match": entry.match_id },
      h("span", { class: `game-badge game-${entry.game}` }, game?.title ?? entry.game),
      h(
        "span",
        { class: "players" },
        playerLabel(entry.seats[0], entry.game, catalog.levels),
        h("span", { class: "vs" }, " vs "),
        playerLabel(entry.seats[1], entry.game, catalog.levels),
      ),
      h(
        "span",
        { class: "meta" },
        `${entry.time_control === "untimed" ? "untimed" : entry.time_control} · ${entry.rated ? "rated" : "casual"} · ` +
          `${entry.status}${waiting}`,
      ),
      entry.status === "open" && entry.bot_status
        ? h("span", { class: "meta bot-status" }, entry.bot_status.reason)
        : null,
      h("span", { class: "entry-actions" }, buttons),
    );
  }

  /** "and 1,234 more open matches not shown", under the entries of a kind the snapshot left some out of. */
  function moreItem(count, singular, plural) {
    if (!count) return null;
    // The counts are of every game: the snapshot does not say which games the matches it left out are of.
    const ofAll = filter === "all" ? "" : " (of all games)";
    const what = count === 1 ? singular : plural;
    return h("li", { class: "more" }, `and ${count.toLocaleString()} more ${what}${ofAll} not shown`);
  }

  function renderList() {
    const shown = [...entries.values()]
      .filter((entry) => filter === "all" || entry.game === filter)
      .sort((a, b) =>
        a.status === b.status ? b.created_at.localeCompare(a.created_at) : a.status === "open" ? -1 : 1,
      );
    const firstLive = shown.findIndex((entry) => entry.status !== "open");
    const cut = firstLive < 0 ? shown.length : firstLive;
    const items = [
      ...shown.slice(0, cut).map(entryItem),
      moreItem(omitted.bot_requests, "match waiting for a bot", "matches waiting for a bot"),
      moreItem(omitted.open, "open match", "open matches"),
      ...shown.slice(cut).map(entryItem),
      moreItem(omitted.live, "live match", "live matches"),
    ].filter(Boolean);
    list.setAttribute("aria-busy", "false");
    replaceChildren(
      list,
      items.length
        ? items
        : h("li", { class: "empty" }, "No open or live matches right now. Open one, or play a bot."),
    );
  }

  /**
   * Asks the server afresh which unfinished matches hold a seat of ours (welcome.matches is as old as
   * the connection: a game finished since would still be listed, and one begun since missing).
   */
  async function refreshMine() {
    const asked = ++mineRequests;
    mine.setAttribute("aria-busy", "true");
    let records;
    try {
      records = await unfinishedMatchesOf(connection);
    } catch (error) {
      console.warn("could not list your games in progress", error);
      records = [];
    }
    if (asked !== mineRequests || !mounted) return; // a newer answer is on its way, or the page went
    mine.setAttribute("aria-busy", "false");
    records = records.filter((record) => !endedHere.has(record.id));
    // One opened or joined since on another connection (another tab) is followed from here too: the
    // connection itself follows those that its welcome listed (net.js).
    connection.follow(records.map((record) => record.id));
    renderMine(records);
  }

  /** Refreshes the list soon (once for a burst of events). */
  function refreshMineSoon() {
    clearTimeout(mineTimer);
    mineTimer = setTimeout(refreshMine, 200);
  }

  /** A game of ours ended: it leaves the list now, without waiting for the match list to say so. */
  function mineEnded({ match_id: matchId }) {
    endedHere.add(matchId);
    if (!shownMine.has(matchId)) return;
    renderMine(mineRecords.filter((record) => record.id !== matchId));
    refreshMineSoon(); // a rematch may have begun with it
  }

  function renderMine(records) {
    mineRecords = records;
    shownMine = new Set(records.map((record) => record.id));
    mine.hidden = !records.length;
    const me = connection.player?.id;
    replaceChildren(
      mine,
      h("h2", { id: "your-games-title" }, "Your games in progress"),
      h(
        "ul",
        { class: "match-list" },
        records.map((record) => {
          const game = catalog.byName[record.game];
          const opponent = (record.seats ?? [])
            .map((seat) => seat.player)
            .find((player) => player && player.id !== me);
          const against = opponent && shownName(opponent, record.game, catalog.levels);
          const label = opponent ? `against ${against}` : "waiting for an opponent";
          return h(
            "li",
            { class: "match-entry", "data-match": record.id },
            h("span", { class: `game-badge game-${record.game}` }, game?.title ?? "Match"),
            h("span", { class: "players" }, label),
            h("span", { class: "meta" }, `${record.options?.time_control ?? ""} · ${record.status ?? ""}`),
            h(
              "span",
              { class: "entry-actions" },
              h(
                "a",
                {
                  class: "button primary",
                  href: `/match/${encodeURIComponent(record.id)}`,
                  "data-link": true,
                  "aria-label": `Resume ${game?.title ?? ""} match ${label}`,
                },
                "Resume",
              ),
            ),
          );
        }),
      ),
    );
  }

  async function start() {
    try {
      catalog = await loadCatalog();
    } catch (error) {
      app.showProblem(container, "The server did not answer", error.message);
      return;
    }
    if (!mounted) return;
    connection = await app.connectionReady(container);
    if (!mounted) return;
    replaceChildren(container, h("div", { class: "lobby" }, actions, mine, listPanel));
    const quick = quickPairing(catalog, connection, app);
    replaceChildren(actions, quick.element, botForm(catalog, create), peopleForm(catalog, create));
    renderTabs();
    cleanups.push(
      quick.cleanup,
      connection.on("lobby.update", ({ entry }) => {
        entries.set(entry.match_id, entry);
        renderTabs();
        renderList();
      }),
      connection.on("lobby.remove", ({ match_id: matchId }) => {
        entries.delete(matchId);
        renderTabs();
        renderList();
      }),
      // This connection follows the player's matches: one may end, be joined, or go on as a rematch.
      connection.on("ended", mineEnded),
      connection.on("seated", ({ match_id: matchId }) => shownMine.has(matchId) && refreshMineSoon()),
      connection.on("rematch.started", refreshMineSoon),
      connection.onResume(() => {
        refreshMine(); // not awaited: the lobby subscription need not wait for the HTTP API
      }),
      connection.onResume(async () => {
        const snapshot = await connection.request({ type: "lobby.subscribe" });
        entries.clear();
        for (const entry of snapshot.matches) entries.set(entry.match_id, entry);
        omitted = snapshot.omitted;
        renderTabs();
        renderList();
      }),
    );
  }

  start();
  // Leaving the lobby leaves no match: the player's games stay followed (a match page follows its own
  // anyway), so that going from one page to the other starts no grace period.
  return () => {
    mounted = false;
    for (const cleanup of cleanups) cleanup();
    clearTimeout(mineTimer);
    if (connection?.ready) connection.request({ type: "lobby.unsubscribe" }).catch(() => {});
  };
}
