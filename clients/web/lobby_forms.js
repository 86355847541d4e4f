/** The lobby's two forms that open a match: against a bot, or against a person. */

import { h, replaceChildren } from "./dom.js";

const TIME_CONTROLS = [
  ["untimed", "Untimed"],
  ["1+0", "1 min"],
  ["3+2", "3 min + 2 s"],
  ["5+3", "5 min + 3 s"],
  ["10+5", "10 min + 5 s"],
  ["15+10", "15 min + 10 s"],
];

let formCount = 0;

/** A labelled control: `<label>` then the control, tied by id. */
function field(labelText, control) {
  control.id ||= `field-${++formCount}`;
  return h("div", { class: "field" }, h("label", { for: control.id }, labelText), control);
}

/** How sure a bot's rating is; the level the scale is anchored at is not measured, so has no interval. */
function ratingNote({ ci_low: low, ci_high: high, games }) {
  const interval = low === high ? "the scale's fixed point" : `95% interval ${low}–${high}`;
  return `${interval}, from ${games} bot games`;
}

/** What a game's bot ratings are measured against: a level of its own ladder held fixed, or, with no
 * level fixed, the outside engines the levels played (chess's are Stockfish's `UCI_Elo`). */
function scaleNote(rows) {
  const fixed = rows.find((row) => row.rating && row.rating.ci_low === row.rating.ci_high);
  return fixed
    ? `Elo of this game's bot ladder, level ${fixed.level} held at ${fixed.rating.elo}`
    : "Elo on the scale of the outside engines the levels were measured against (for chess, Stockfish's UCI_Elo)";
}

function select(name, options, value) {
  return h(
    "select",
    { name },
    options.map(([optionValue, text]) =>
      h("option", { value: optionValue, selected: String(optionValue) === String(value) }, text),
    ),
  );
}

/** Casual or rated: whether the result changes the players' ratings (docs/player-ratings.md). */
function ratedSelect() {
  return select(
    "rated",
    [
      ["false", "Casual"],
      ["true", "Rated"],
    ],
    "false",
  );
}

function seatOptions(game) {
  return [
    ["random", "Random"],
    ["0", `${game.sides[0]} (moves first)`],
    ["1", game.sides[1]],
  ];
}

/**
 * "Play a bot": game, level (with the level's description and measured Elo from the bots on offer),
 * time and side.
 * @param {Awaited<ReturnType<typeof import("./catalog.js").loadCatalog>>} catalog
 * @param {(request: object, button: HTMLButtonElement) => void} create sends `match.create`
 */
export function botForm(catalog, create) {
  const game = select(
    "game",
    catalog.games.map((g) => [g.name, g.title]),
    catalog.games[0]?.name,
  );
  const level = h("select", { name: "level" });
  const description = h("p", {
    class: "level-description",
    id: "bot-level-description",
    "aria-live": "polite",
  });
  level.setAttribute("aria-describedby", description.id);
  const time = select("time_control", TIME_CONTROLS, "untimed");
  const seat = h("select", { name: "seat" });
  const rated = ratedSelect();
  const submit = h("button", { type: "submit", class: "primary" }, "Play the bot");

  const unknownLevels = Array.from({ length: 8 }, (_, i) => ({
    level: i + 1,
    style: null,
    name: `Level ${i + 1}`,
    description: "",
    available: true,
  }));
  const key = (row) => `${row.level}|${row.style ?? ""}`;
  function levelsOf(name) {
    const offered = catalog.levels?.[name] ?? [];
    return offered.length ? offered : unknownLevels;
  }
  function chosenLevel() {
    return levelsOf(game.value).find((row) => key(row) === level.value);
  }
  function showLevel() {
    const chosen = chosenLevel();
    if (catalog.levels && !catalog.levels[game.value]?.length) {
      description.textContent =
        "No bot is on offer for this game right now: the match will wait until a bot fleet comes online.";
      return;
    }
    const busy =
      chosen && !chosen.available ? " Every such bot is busy: the match waits for a free one." : "";
    const measured = chosen?.rating;
    const rating = measured
      ? ` Rated ${measured.elo} Elo (${ratingNote(measured)}; ${scaleNote(levelsOf(game.value))}).`
      : "";
    description.textContent = `${chosen?.description ?? ""}${rating}${busy}`;
    // A game against a bot can be rated only at a rating its fleet announces.
    rated.querySelector('option[value="true"]').disabled = !measured;
    if (!measured) rated.value = "false";
  }
  function showGame() {
    const rows = levelsOf(game.value);
    const previous = chosenLevel()?.level ?? 1;
    const severalStyles = new Set(rows.map((row) => row.level)).size < rows.length;
    const label = (row) =>
      `${row.level} · ${row.name}${severalStyles ? ` (${row.style})` : ""}` +
      `${row.rating ? ` · ${row.rating.elo} Elo` : ""}${row.available ? "" : " (busy)"}`;
    replaceChildren(
      level,
      rows.map((row) => h("option", { value: key(row), selected: row.level === previous }, label(row))),
    );
    replaceChildren(
      seat,
      seatOptions(catalog.byName[game.value]).map(([v, t]) => h("option", { value: v }, t)),
    );
    showLevel();
  }
  game.addEventListener("change", showGame);
  level.addEventListener("change", showLevel);
  showGame();
  return h(
    "form",
    {
      class: "panel create-form",
      "aria-labelledby": "play-bot-title",
      onsubmit: (event) => {
        event.preventDefault();
        create(
          {
            game: game.value,
            time_control: time.value,
            seat: seat.value === "random" ? "random" : Number(seat.value),
            visibility: "public",
            bot: { level: chosenLevel().level, style: chosenLevel().style },
            rated: rated.value === "true",
          },
          submit,
        );
      },
    },
    h("h2", { id: "play-bot-title" }, "Play a bot"),
    field("Game", game),
    field("Bot level", level),
    description,
    h("div", { class: "field-row" }, field("Time", time), field("Your side", seat)),
    field("Rating", rated),
    submit,
  );
}

/** "Play a person": game, time, side and who can join (public in the lobby, or private by link). */
export function peopleForm(catalog, create) {
  const game = select(
    "game",
    catalog.games.map((g) => [g.name, g.title]),
    catalog.games[0]?.name,
  );
  const time = select("time_control", TIME_CONTROLS, "5+3");
  const seat = h("select", { name: "seat" });
  const visibility = select(
    "visibility",
    [
      ["public", "Public: listed in the lobby"],
      ["private", "Private: by link only"],
    ],
    "public",
  );
  const rated = ratedSelect();
  const submit = h("button", { type: "submit" }, "Open the match");
  const showSeats = () =>
    replaceChildren(
      seat,
      seatOptions(catalog.byName[game.value]).map(([v, t]) => h("option", { value: v }, t)),
    );
  game.addEventListener("change", showSeats);
  showSeats();
  return h(
    "form",
    {
      class: "panel create-form",
      "aria-labelledby": "play-people-title",
      onsubmit: (event) => {
        event.preventDefault();
        create(
          {
            game: game.value,
            time_control: time.value,
            seat: seat.value === "random" ? "random" : Number(seat.value),
            visibility: visibility.value,
            rated: rated.value === "true",
          },
          submit,
        );
      },
    },
    h("h2", { id: "play-people-title" }, "Play a person"),
    field("Game", game),
    h("div", { class: "field-row" }, field("Time", time), field("Your side", seat)),
    field("Who can join", visibility),
    field("Rating", rated),
    submit,
  );
}
