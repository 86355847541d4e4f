/**
 * "Play a person now": wait in the pool of a game and time control until the server pairs you with a
 * person of about your rating (docs/protocol.md, "Quick pairing"), or take the bot it offers after a while.
 */

import { h, replaceChildren } from "./dom.js";

const TIME_CONTROLS = [
  ["1+0", "1 min"],
  ["3+2", "3 min + 2 s"],
  ["5+3", "5 min + 3 s"],
  ["10+5", "10 min + 5 s"],
  ["untimed", "Untimed"],
];

function select(name, label, options, value) {
  const control = h(
    "select",
    { name, id: `quick-${name}` },
    options.map(([optionValue, text]) =>
      h("option", { value: optionValue, selected: optionValue === value }, text),
    ),
  );
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control);
}

function seconds(ms) {
  const total = Math.floor(ms / 1000);
  return total < 60 ? `${total} s` : `${Math.floor(total / 60)} min ${total % 60} s`;
}

/**
 * The form and, while waiting, what the pool looks like. `connection` is the lobby's; `app.navigate`
 * opens the match once paired. Returns `{ element, cleanup }`: the cleanup leaves the pool.
 */
export function quickPairing(catalog, connection, app) {
  const game = select(
    "game",
    "Game",
    catalog.games.map((g) => [g.name, g.title]),
    catalog.games[0]?.name,
  );
  const time = select("time_control", "Time", TIME_CONTROLS, "5+3");
  const rated = h("input", { type: "checkbox", name: "rated", id: "quick-rated", checked: true });
  const submit = h("button", { type: "submit", class: "primary" }, "Find an opponent");
  const status = h("p", { class: "pool-status", role: "status", "aria-live": "polite" });
  const offer = h("div", { class: "pool-offer" });
  const cancel = h("button", { type: "button", hidden: true, onclick: () => leave() }, "Stop waiting");
  let waiting = null; // the last pool.waiting, and when it came
  let timer = null;

  function show() {
    if (!waiting) {
      status.textContent = "";
      replaceChildren(offer);
      return;
    }
    const { message, at } = waiting;
    const waited = message.waited_ms + (Date.now() - at);
    const others = message.waiting - 1;
    status.textContent =
      `Looking for an opponent rated ${message.range[0]}–${message.range[1]} ` +
      `(you: ${message.rating}) · waiting ${seconds(waited)} · ` +
      `${others === 1 ? "1 other player" : `${others} other players`} in this pool`;
    const bot = message.bot;
    replaceChildren(
      offer,
      bot
        ? h(
            "p",
            {},
            `No one yet? ${bot.name} (level ${bot.level}, rated ${bot.rating}) can play you now. `,
            h("button", { type: "button", onclick: acceptBot }, `Play ${bot.name} instead`),
          )
        : null,
    );
  }

  function setWaiting(message) {
    waiting = message ? { message, at: Date.now() } : null;
    submit.disabled = Boolean(message);
    cancel.hidden = !message;
    clearInterval(timer);
    timer = message ? setInterval(show, 1000) : null;
    show();
  }

  async function join(event) {
    event.preventDefault();
    submit.disabled = true;
    try {
      asked = {
        type: "pool.join",
        game: game.querySelector("select").value,
        time_control: time.querySelector("select").value,
        rated: rated.checked,
      };
      setWaiting(await connection.request(asked));
    } catch (error) {
      app.toast(`Could not join the pool: ${error.message}`, "error");
      setWaiting(null);
    }
  }

  async function leave() {
    if (!waiting) return;
    setWaiting(null);
    await connection.request({ type: "pool.leave" }).catch(() => {});
  }

  async function acceptBot() {
    try {
      const state = await connection.request({ type: "pool.accept_bot" });
      setWaiting(null);
      app.navigate(`/match/${encodeURIComponent(state.match_id)}`);
    } catch (error) {
      app.toast(`Could not start the bot game: ${error.message}`, "error");
    }
  }

  function paired(message) {
    setWaiting(null);
    const here = connection.welcome?.instance;
    const path = `/match/${encodeURIComponent(message.match_id)}`;
    if (!here || message.host === here) {
      app.navigate(path);
    } else {
      // Hosted by another instance: its page, with this browser's identity, plays it there.
      const address = new URL(message.url);
      address.protocol = address.protocol === "wss:" ? "https:" : "http:";
      window.location.assign(`${address.origin}${path}`);
    }
  }

  let asked = null; // the pool.join last sent, to send again after a reconnect (the place is kept)

  const unsubscribe = [
    connection.onResume(() => {
      if (waiting && asked) connection.request(asked).then(setWaiting, () => setWaiting(null));
    }),
    connection.on("pool.waiting", (message) => waiting && setWaiting(message)),
    connection.on("paired", paired),
    connection.on("pool.left", (message) => {
      setWaiting(null);
      app.toast(`You left the pool: ${message.reason}.`, "info");
    }),
  ];

  const element = h(
    "form",
    { class: "panel create-form quick-pairing", "aria-labelledby": "play-now-title", onsubmit: join },
    h("h2", { id: "play-now-title" }, "Play a person now"),
    game,
    h(
      "div",
      { class: "field-row" },
      time,
      h("div", { class: "field" }, h("label", { for: rated.id }, rated, " Rated")),
    ),
    h("div", { class: "field-row" }, submit, cancel),
    status,
    offer,
  );
  return {
    element,
    cleanup() {
      for (const off of unsubscribe) off();
      clearInterval(timer);
      if (waiting && connection.ready) connection.request({ type: "pool.leave" }).catch(() => {});
    },
  };
}
