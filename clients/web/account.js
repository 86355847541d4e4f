/**
 * The account panel in the top bar: sign up (claim this name with a password), log in from any
 * browser, log out here or everywhere (docs/protocol.md, "Accounts").
 *
 * Signing up and logging out are requests on the app's connection. Logging in is a `hello` with a name
 * and a password, which only a new connection may say: a short-lived socket of its own does it, and the
 * app then connects again with the token it was given. Passwords go only into those two messages.
 */

import { h } from "./dom.js";

/** The WebSocket endpoint, as app.js connects to it. */
function socketUrl() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/ws`;
}

/**
 * Says `hello` with `name` and `password` on a socket of its own; resolves with the `welcome` (whose
 * token is the new login's), rejects with the server's `{code, message}`.
 */
export function logIn(name, password) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(socketUrl());
    let settled = false;
    const settle = (done, value) => {
      if (settled) return;
      settled = true;
      socket.close();
      done(value);
    };
    socket.addEventListener("open", () => socket.send(JSON.stringify({ type: "hello", id: 1, name, password })));
    socket.addEventListener("message", (event) => {
      const reply = JSON.parse(event.data);
      if (reply.id !== 1) return;
      if (reply.type === "welcome") settle(resolve, reply);
      else settle(reject, { code: reply.code, message: reply.message });
    });
    socket.addEventListener("close", () =>
      settle(reject, { code: "disconnected", message: "the connection dropped before the server answered" }),
    );
  });
}

function passwordField(id, label, autocomplete) {
  return [
    h("label", { for: id }, label),
    h("input", { id, name: "password", type: "password", required: true, minlength: 8, maxlength: 256, autocomplete }),
  ];
}

/** A form whose submit runs `action(fields)`, showing what went wrong in the form itself. */
function accountForm(title, button, fields, action) {
  const problem = h("p", { class: "account-problem", role: "alert", hidden: true });
  const form = h(
    "form",
    {
      class: "account-form",
      "aria-label": title,
      onsubmit: async (event) => {
        event.preventDefault();
        problem.hidden = true;
        const values = Object.fromEntries(new FormData(form).entries());
        const submit = form.querySelector("button[type=submit]");
        submit.disabled = true;
        try {
          await action(values);
        } catch (error) {
          problem.textContent = error.message ?? String(error);
          problem.hidden = false;
        } finally {
          submit.disabled = false;
        }
      },
    },
    h("h2", {}, title),
    fields,
    h("button", { type: "submit", class: "primary" }, button),
    problem,
  );
  return form;
}

/** Logging in as a claimed name: in the account panel, and under the name form of a first visit. */
export function loginForm(app) {
  return accountForm(
    "Log in",
    "Log in",
    [
      h("label", { for: "account-login-name" }, "Name"),
      h("input", { id: "account-login-name", name: "name", required: true, maxlength: 32, autocomplete: "username" }),
      passwordField("account-login-password", "Password", "current-password"),
    ],
    ({ name, password }) => app.logIn(name, password),
  );
}

/**
 * The panel for `app`'s current identity: for a guest, sign up (once connected), log in as another
 * player, or start again under a new name; for a player whose name is claimed, log out here or everywhere.
 */
export function accountPanel(app) {
  const claimed = Boolean(app.connection?.welcome?.claimed);
  const forms = [];
  if (claimed) {
    forms.push(
      h("p", {}, `Your name is claimed: log in with it and your password from any browser.`),
      h("button", { type: "button", onclick: () => app.logOut(false) }, "Log out"),
      h("button", { type: "button", onclick: () => app.logOut(true) }, "Log out everywhere"),
    );
  } else {
    if (app.connection && app.identity) {
      forms.push(
        accountForm(
          "Sign up",
          "Claim this name",
          [
            h("label", { for: "account-signup-name" }, "Name"),
            h("input", { id: "account-signup-name", name: "name", required: true, maxlength: 32, value: app.identity.name }),
            passwordField("account-signup-password", "New password", "new-password"),
          ],
          ({ name, password }) => app.claimName(name, password),
        ),
      );
    }
    forms.push(
      loginForm(app),
      h(
        "button",
        { type: "button", class: "link", "aria-label": "Play under a new name", onclick: () => app.startOver() },
        "Play under a new name",
      ),
    );
  }
  return h(
    "details",
    { class: "account" },
    h("summary", {}, "Account"),
    h("div", { class: "account-panel" }, forms),
  );
}
