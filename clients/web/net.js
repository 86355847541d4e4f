/**
 * The one WebSocket to the server: hello, requests and replies, reconnection.
 *
 * Views never touch the socket. They send requests (`request` resolves with the
 * reply carrying the same `id`, or rejects with the server's `error`), listen for
 * message types, and register resume hooks: after every (re)connection and
 * `welcome`, the hooks run in order (subscribe to the lobby again, watch each
 * match again from the last seq seen) before any request queued while offline is
 * sent. So a move made during a drop is sent once the match has caught up, and the
 * ply it carries lets the server refuse it if it is stale rather than replay it.
 *
 * After the hooks the connection follows every other unfinished match of the player
 * that `welcome` lists: a seated player is present while one of their connections
 * follows the match (docs/protocol.md, Absence), so a reload on any page (a new
 * connection) must not leave their games to run out the grace period.
 *
 * Reconnecting backs off: each attempt waits about twice as long as the one before
 * (with jitter, so clients dropped together do not come back together), up to a cap.
 * A welcome alone does not reset the backoff, since a server that welcomes and then
 * drops every connection would be hammered: only a connection that stays up for
 * `STABLE_MS` does. The browser's `online` event retries at once; while the page is
 * hidden, retries wait at least `HIDDEN_RETRY_MS`, and showing it retries at once.
 */

import { saveIdentity } from "./identity.js";

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 30_000;
/** How long a connection must stay up before the next drop starts the backoff over. */
const STABLE_MS = 10_000;
/** The shortest wait between attempts while the page is hidden (nobody is looking at it). */
const HIDDEN_RETRY_MS = 30_000;

/**
 * How long to wait before reconnection attempt `attempt` (0 first): doubling from `FIRST_RETRY_MS` up to
 * `MAX_RETRY_MS`, the upper half of that drawn at random ("equal jitter").
 */
export function retryDelay(attempt, random = Math.random) {
  const ceiling = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempt, 20));
  return ceiling / 2 + (random() * ceiling) / 2;
}

/** An `error` reply from the server, or a request that could not be delivered. */
export class ServerError extends Error {
  constructor(code, message, requestId = null, url = null) {
    super(message);
    this.code = code;
    this.requestId = requestId;
    /** With "hosted_elsewhere": the WebSocket URL of the instance that hosts the match. */
    this.url = url;
  }
}

export class Connection {
  /**
   * @param {string} url the WebSocket URL
   * @param {{name: string, token?: string} | null} identity who to say hello as; null to watch only
   */
  constructor(url, identity) {
    this.url = url;
    this.identity = identity;
    this.player = null;
    this.welcome = null;
    this.status = "connecting";
    this.socket = null;
    this.ready = false;
    this.nextId = 1;
    this.pending = new Map();
    this.queue = [];
    this.listeners = new Map();
    this.resumeHooks = new Set();
    this.attempt = 0;
    this.closed = false;
    this.retryTimer = null;
    /** Resets the backoff once the connection has stayed up for `STABLE_MS`. */
    this.stableTimer = null;
    /** Removes the window and document listeners (`online`, `visibilitychange`) on close. */
    this.browserEvents = null;
    /**
     * The matches this socket follows (whose events it receives): those it created, joined or watched,
     * and the rematches they led to, until it leaves them. A new socket follows nothing until it watches.
     */
    this.following = new Set();
  }

  /** Calls `handler(message)` for every server message of `type` ("*" for all); returns an unsubscribe. */
  on(type, handler) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(handler);
    return () => this.listeners.get(type)?.delete(handler);
  }

  /** Runs `hook()` (which may be async) after every welcome, and now if already online. */
  onResume(hook) {
    this.resumeHooks.add(hook);
    if (this.ready) hook();
    return () => this.resumeHooks.delete(hook);
  }

  /**
   * Sends `message` with a fresh `id`; resolves with the reply to it. Queued while offline.
   *
   * A request already sent when the socket drops fails with code "disconnected", since
   * the server may or may not have acted on it, unless `resend` says sending it twice
   * is harmless (a move carries its ply, so the server refuses a second copy).
   */
  request(message, { resend = false } = {}) {
    const id = this.nextId++;
    const frame = { ...message, id };
    return new Promise((resolve, reject) => {
      const answered =
        message.type === "match.leave"
          ? (reply) => {
              this.following.delete(message.match_id);
              resolve(reply);
            }
          : resolve;
      this.pending.set(id, { resolve: answered, reject, frame, resend });
      if (this.ready) this.#send(frame);
      else this.queue.push(frame);
    });
  }

  /**
   * Watches each match (by id) this socket does not follow yet, so that the player stays present in it.
   * The replies are not waited for: the views that show a match follow it themselves.
   */
  follow(matchIds) {
    for (const matchId of matchIds) {
      if (this.following.has(matchId)) continue;
      this.following.add(matchId); // at once: a second call before the reply must not ask again
      this.request({ type: "match.watch", match_id: matchId }).catch((error) => {
        if (error.code !== "disconnected") console.warn(`could not follow match ${matchId}`, error);
      });
    }
  }

  connect() {
    this.closed = false;
    this.#listenToBrowser();
    clearTimeout(this.retryTimer);
    this.#setStatus(this.attempt === 0 ? "connecting" : "reconnecting");
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener("open", () => this.#hello());
    socket.addEventListener("message", (event) => this.#receive(event.data));
    socket.addEventListener("close", () => {
      if (this.socket === socket) this.#lost();
    });
  }

  /** Closes for good (used when the identity changes). */
  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.stableTimer);
    this.browserEvents?.abort();
    this.browserEvents = null;
    this.socket?.close();
    this.#setStatus("offline");
  }

  /** Retry at once when the browser says it is back online, or when the page is shown again. */
  #listenToBrowser() {
    if (this.browserEvents || typeof window === "undefined") return;
    this.browserEvents = new AbortController();
    const { signal } = this.browserEvents;
    window.addEventListener("online", () => this.#retryNow(), { signal });
    document.addEventListener(
      "visibilitychange",
      () => {
        if (!document.hidden) this.#retryNow();
      },
      { signal },
    );
  }

  /** Connects now if the socket is closed and a retry waits (not while one is tried, nor while closing). */
  #retryNow() {
    if (this.closed || (this.socket && this.socket.readyState !== WebSocket.CLOSED)) return;
    this.connect();
  }

  #setStatus(status, detail = "") {
    this.status = status;
    this.#emit({ type: "connection", status, detail });
  }

  #send(frame) {
    this.socket.send(JSON.stringify(frame));
  }

  async #hello() {
    if (!this.identity) return this.#watchWithoutName();
    const { name, token } = this.identity;
    const id = this.nextId++;
    const hello = token ? { type: "hello", id, token } : { type: "hello", id, name };
    this.pending.set(id, {
      resolve: (welcome) => this.#welcomed(welcome),
      reject: (error) => (error.code === "disconnected" ? null : this.#helloRefused(error)),
      frame: null,
    });
    this.#send(hello);
  }

  async #welcomed(welcome) {
    this.welcome = welcome;
    this.player = welcome.player;
    this.identity = { name: welcome.player.name, token: welcome.token, playerId: welcome.player.id };
    saveIdentity(this.identity);
    const socket = this.socket;
    clearTimeout(this.stableTimer);
    this.stableTimer = setTimeout(() => {
      if (this.socket === socket && this.ready) this.attempt = 0;
    }, STABLE_MS);
    this.following = new Set();
    this.ready = true;
    this.#setStatus("online");
    this.#emit({ type: "welcome", ...welcome });
    for (const hook of [...this.resumeHooks]) {
      try {
        await hook();
      } catch (error) {
        console.warn("resume hook failed", error);
      }
    }
    if (this.ready) this.follow(welcome.matches ?? []); // those no view followed again just now
    const queued = this.queue.splice(0);
    for (const frame of queued) if (this.ready) this.#send(frame);
  }

  /** No name yet: watching needs no hello (docs/protocol.md), so the socket is ready as it opens. */
  async #watchWithoutName() {
    this.attempt = 0;
    this.following = new Set();
    this.ready = true;
    this.#setStatus("watching");
    for (const hook of [...this.resumeHooks]) {
      try {
        await hook();
      } catch (error) {
        console.warn("resume hook failed", error);
      }
    }
    const queued = this.queue.splice(0);
    for (const frame of queued) if (this.ready) this.#send(frame);
  }

  #helloRefused(error) {
    const { name, token } = this.identity;
    if (error.code === "bad_token" || (token && error.code === "bad_field")) {
      // The server does not know this token (a reset database), or cannot read it: start again under
      // the same name.
      this.identity = { name };
      saveIdentity(this.identity);
      this.#emit({ type: "identity.lost", name });
      this.#hello();
      return;
    }
    if (error.code === "bad_field") {
      // The name itself is refused (an invisible or control character, say): saying hello again
      // would be refused again, so this connection ends and the person picks another name.
      this.close();
      this.#setStatus("error", error.message);
      this.#emit({ type: "hello.refused", code: error.code, message: error.message });
      return;
    }
    // Storage down, a bug, too many requests: nothing about us is wrong, so try again after a pause.
    this.#setStatus("error", error.message);
    this.socket?.close();
  }

  #receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      console.warn("unreadable frame from server", data);
      return;
    }
    if (message.type === "match.state" || message.type === "match.catchup") {
      this.following.add(message.match_id); // a reply to create, join or watch, or a rematch begun
    }
    const waiting = message.id !== undefined && message.id !== null ? this.pending.get(message.id) : null;
    if (waiting) {
      this.pending.delete(message.id);
      if (message.type === "error")
        waiting.reject(new ServerError(message.code, message.message, message.id, message.url ?? null));
      else waiting.resolve(message);
    }
    this.#emit(message);
  }

  #emit(message) {
    for (const type of [message.type, "*"]) {
      for (const handler of this.listeners.get(type) ?? []) handler(message);
    }
  }

  /** The socket closed: requests sent on it are queued again, and a new socket is tried after a pause. */
  #lost() {
    this.ready = false;
    clearTimeout(this.stableTimer);
    for (const [id, waiting] of this.pending) {
      if (this.queue.includes(waiting.frame)) continue;
      if (waiting.frame && waiting.resend) {
        this.queue.push(waiting.frame);
        continue;
      }
      this.pending.delete(id);
      waiting.reject(
        new ServerError("disconnected", "the connection dropped before the server answered", id),
      );
    }
    this.queue.sort((a, b) => a.id - b.id);
    if (this.closed) return;
    let delay = retryDelay(this.attempt);
    if (document.hidden) delay = Math.max(delay, HIDDEN_RETRY_MS);
    this.attempt += 1;
    this.#setStatus("reconnecting", `retrying in ${(delay / 1000).toFixed(1)} s`);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}
