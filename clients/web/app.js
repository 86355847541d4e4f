/**
 * The browser client's entry point: identity, the connection, the status bar and routing.
 *
 * Routes are real paths (`/`, `/match/{id}`, `/replay/{id}`, `/finished`, `/@/{name}`) so every
 * page can be shared and reloaded; the server answers all of them with this app.
 * Each view module exports `mount(container, app, params)` and returns a function
 * that tears the view down.
 */

import { accountPanel, logIn, loginForm } from "./account.js";
import { h, replaceChildren } from "./dom.js";
import { forgetIdentity, loadIdentity, saveIdentity } from "./identity.js";
import { Connection } from "./net.js";
import * as finished from "./finished.js";
import * as lobby from "./lobby.js";
import * as match from "./match.js";
import * as profile from "./profile.js";
import * as replay from "./replay.js";

/** The WebSocket endpoint (docs/protocol.md). */
const WS_PATH = "/ws";

const ROUTES = [
  [/^\/$/, lobby],
  [/^\/match\/([^/]+)\/?$/, match],
  [/^\/replay\/([^/]+)\/?$/, replay],
  [/^\/finished\/?$/, finished],
  [/^\/@\/([^/]+)\/?$/, profile],
];

const STATUS_TEXT = {
  connecting: "Connecting…",
  online: "Online",
  reconnecting: "Reconnecting…",
  offline: "Offline",
  error: "Connection refused",
  anonymous: "Not signed in",
  watching: "Watching",
};

class App {
  constructor() {
    this.view = document.getElementById("view");
    this.connectionBadge = document.getElementById("connection");
    this.who = document.getElementById("who");
    this.toastElement = document.getElementById("toast");
    this.identity = loadIdentity();
    this.connection = null;
    this.watcher = null; // a connection without a name, for watching only (until the person picks one)
    this.unmount = null;
    this.waitingForName = [];
    this.nameRefused = null; // why the server refused the name last asked for, shown with the name form
  }

  start() {
    document.addEventListener("click", (event) => this.#followLink(event));
    window.addEventListener("popstate", () => this.route());
    if (this.identity) this.#connect();
    else this.#showStatus("anonymous");
    this.#showWho();
    this.route();
  }

  /** The open connection, once the person has a name; asks for one in `container` first if needed. */
  connectionReady(container) {
    if (this.connection) return Promise.resolve(this.connection);
    return new Promise((resolve) => {
      this.waitingForName.push(resolve);
      replaceChildren(container, this.#nameForm(), h("section", { class: "panel name-form" }, loginForm(this)));
    });
  }

  /** A connection to watch on: the person's own, or, before they pick a name, one without a name. */
  watchConnection() {
    if (this.connection) return this.connection;
    if (!this.watcher) {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      const watcher = new Connection(`${scheme}://${location.host}${WS_PATH}`, null);
      const current = () => this.watcher === watcher;
      watcher.on("connection", ({ status, detail }) => current() && this.#showStatus(status, detail));
      this.watcher = watcher;
      watcher.connect();
    }
    return this.watcher;
  }

  /** Asks for a name in `container` (to play, to chat), then shows the page again under it. */
  async signIn(container) {
    await this.connectionReady(container);
    this.route();
  }

  /** Replaces `container` with a problem and the ways on: try the page again, or go to the lobby. */
  showProblem(container, title, detail) {
    replaceChildren(
      container,
      h(
        "section",
        { class: "panel problem", role: "alert" },
        h("h1", {}, title),
        h("p", {}, detail),
        h(
          "p",
          { class: "row" },
          h("button", { type: "button", class: "primary", onclick: () => this.route() }, "Try again"),
          h("a", { class: "button", href: "/", "data-link": true }, "Lobby"),
        ),
      ),
    );
  }

  navigate(path, { replace = false } = {}) {
    if (replace) history.replaceState(null, "", path);
    else history.pushState(null, "", path);
    this.route();
  }

  route() {
    this.unmount?.();
    this.unmount = null;
    const path = location.pathname;
    for (const [pattern, module] of ROUTES) {
      const found = pattern.exec(path);
      if (!found) continue;
      replaceChildren(this.view);
      this.unmount = module.mount(this.view, this, found.slice(1).map(decodeURIComponent)) ?? null;
      this.#markCurrentNav(path);
      return;
    }
    this.showProblem(this.view, "Not found", `Nothing lives at ${path}.`);
  }

  /** A short message at the bottom of the screen, read out by screen readers. */
  toast(text, kind = "info") {
    const toast = this.toastElement;
    toast.textContent = text;
    toast.dataset.kind = kind;
    toast.hidden = false;
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(
      () => {
        toast.hidden = true;
      },
      kind === "error" ? 6000 : 3500,
    );
  }

  #connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const connection = new Connection(`${scheme}://${location.host}${WS_PATH}`, this.identity);
    this.connection = connection;
    const watcher = this.watcher; // watching goes on under the name, on this connection
    this.watcher = null;
    watcher?.close();
    const current = () => this.connection === connection;
    connection.on("connection", ({ status, detail }) => current() && this.#showStatus(status, detail));
    connection.on("welcome", () => {
      if (!current()) return;
      this.nameRefused = null;
      this.identity = connection.identity;
      this.#showWho();
    });
    connection.on("identity.lost", () =>
      this.toast("The server no longer knew you, so you have a new identity under the same name.", "error"),
    );
    connection.on("hello.refused", ({ message }) => current() && this.#nameRefusedBy(message));
    connection.on("account.logged_out", ({ id, everywhere }) => {
      if (current() && id === undefined) this.#signedOut(everywhere ? "You were logged out everywhere." : "Logged out.");
    });
    connection.connect();
    for (const resolve of this.waitingForName.splice(0)) resolve(connection);
  }

  /** Claims `name` (this player's, or a new one) with `password`; rejects with the server's error. */
  async claimName(name, password) {
    const reply = await this.connection.request({ type: "account.register", name, password });
    this.identity = { ...this.connection.identity, name: reply.player.name };
    this.connection.identity = this.identity;
    this.connection.welcome = { ...this.connection.welcome, player: reply.player, claimed: true };
    saveIdentity(this.identity);
    this.#showWho();
    this.toast(`The name ${reply.player.name} is yours: log in with it from any browser.`);
  }

  /** Logs in as a claimed name, then connects again as that player; rejects with the server's error. */
  async logIn(name, password) {
    const welcome = await logIn(name, password);
    const switching = this.connection !== null; // (else the page waits for a connection: #connect gives it)
    this.#dropConnection();
    this.identity = { name: welcome.player.name, token: welcome.token, playerId: welcome.player.id };
    saveIdentity(this.identity);
    this.#connect();
    this.#showWho();
    if (switching) this.route();
  }

  /** Ends this browser's token (with `everywhere`, every token of the player), then forgets it here. */
  async logOut(everywhere) {
    try {
      await this.connection.request({ type: "account.logout", everywhere });
    } catch (error) {
      this.toast(`Could not log out: ${error.message}`, "error");
      return;
    }
    this.#signedOut(everywhere ? "Logged out everywhere." : "Logged out.");
  }

  /** The server ended this browser's token: forget it, and ask for a name again. */
  #signedOut(message) {
    this.#dropConnection();
    this.identity = null;
    forgetIdentity();
    this.#showWho();
    this.#showStatus("anonymous");
    this.toast(message);
    this.route();
  }

  /** Closes the connection for good, first marking it not ready, so that views torn down after send nothing
   * on it (their goodbyes, such as `lobby.unsubscribe`, would go to a closing socket). */
  #dropConnection() {
    const connection = this.connection;
    this.connection = null;
    if (!connection) return;
    connection.ready = false;
    connection.close();
  }

  /**
   * The server will not take the name (it holds a character that does not show, say): forget it, so a
   * reload does not try it again, and ask for another, saying why, in place of the page.
   */
  #nameRefusedBy(reason) {
    this.connection = null;
    this.identity = null;
    this.nameRefused = reason;
    forgetIdentity();
    this.#showWho();
    this.#showStatus("anonymous");
    this.route(); // the page asks for the connection again, so for a name first
  }

  #nameForm() {
    const refused = this.nameRefused;
    const problem = refused
      ? h(
          "p",
          { class: "name-problem", id: "player-name-problem", role: "alert" },
          `The server refused that name: ${refused}. Please pick another.`,
        )
      : null;
    const input = h("input", {
      id: "player-name",
      name: "name",
      required: true,
      maxlength: 32,
      autocomplete: "nickname",
      value: `Guest ${Math.floor(1000 + Math.random() * 9000)}`,
      "aria-invalid": refused ? "true" : null,
      "aria-describedby": refused ? "player-name-problem" : null,
    });
    const form = h(
      "form",
      {
        class: "panel name-form",
        onsubmit: (event) => {
          event.preventDefault();
          const name = input.value.trim();
          if (!name) return;
          this.identity = { name };
          saveIdentity(this.identity);
          this.#showWho();
          this.#connect();
        },
      },
      h("h1", {}, "Welcome to Ply Arena"),
      h("p", {}, "Pick a name to play and chat. This browser remembers it, and your games, across reloads."),
      h("label", { for: "player-name" }, "Your name"),
      h("div", { class: "row" }, input, h("button", { type: "submit", class: "primary" }, "Continue")),
      problem,
    );
    queueMicrotask(() => input.select());
    return form;
  }

  #showStatus(status, detail = "") {
    this.connectionBadge.dataset.status = status;
    const text = STATUS_TEXT[status] ?? status;
    this.connectionBadge.querySelector(".label").textContent = detail ? `${text} (${detail})` : text;
    this.connectionBadge.title = detail || text;
  }

  #showWho() {
    if (!this.identity) {
      replaceChildren(this.who);
      return;
    }
    const claimed = Boolean(this.connection?.welcome?.claimed);
    replaceChildren(
      this.who,
      h("span", { class: "me", title: claimed ? "Your claimed name" : "Your name" }, this.identity.name),
      accountPanel(this),
    );
  }

  /** Forgets this browser's guest, after asking, and starts again under a new name. */
  startOver() {
    const sure = confirm("Start again under a new name? Games in progress stay with your old name.");
    if (!sure) return;
    forgetIdentity();
    location.assign("/");
  }

  #followLink(event) {
    const link = event.target.closest?.("a[data-link]");
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    this.navigate(link.getAttribute("href"));
  }

  #markCurrentNav(path) {
    for (const link of document.querySelectorAll("header nav a")) {
      const current = link.getAttribute("href") === path;
      if (current) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }
}

new App().start();
