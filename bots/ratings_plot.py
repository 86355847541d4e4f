"""A PNG of a ladder: each level's rating with its confidence interval as an error bar.

matplotlib is an optional dependency (the ``plot`` extra); it is imported only
when a plot is drawn, with the non-interactive Agg backend, so the rest of
:mod:`bots` never needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bots.ratings import Ladder


class PlottingUnavailableError(RuntimeError):
    """matplotlib is not installed."""

    def __init__(self) -> None:
        super().__init__("drawing a plot needs matplotlib: pip install -e '.[plot]'")


def plot_ladder(ladder: Ladder, path: Path, *, title: str, names: Mapping[int, str] | None = None) -> None:
    """Draw ``ladder`` to the PNG ``path``: levels along x, ratings up y, intervals as error bars.

    ``names`` (level number to name) labels the levels; adjacent levels whose gap is
    not measurably above zero are joined by a dotted red line, so a merged tier shows.
    Anchors (held at their Elo, :mod:`bots.anchors`) are grey horizontal lines at their rating.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise PlottingUnavailableError() from None
    names = names or {}
    rows = [row for row in ladder.ratings if isinstance(row.level, int)]
    numbers = [row.level for row in rows]
    ratings = [row.rating for row in rows]
    below = [row.rating - row.ci_low for row in rows]
    above = [row.ci_high - row.rating for row in rows]
    figure, axes = pyplot.subplots(figsize=(8, 4.5), dpi=100)
    try:
        anchors = ladder.anchors
        for index, anchor in enumerate(anchors):
            label = "anchors, held at their Elo: " + ", ".join(str(a.level) for a in anchors)
            axes.axhline(
                anchor.rating, color="#888888", lw=1, ls="--", zorder=1, label=None if index else label
            )
        axes.errorbar(numbers, ratings, yerr=[below, above], fmt="o", capsize=5, color="#1f5fa8", zorder=3)
        labelled = set()
        for step in ladder.steps():
            low, high = ladder.rating(step.lower), ladder.rating(step.upper)
            line, colour, label = (
                ("-", "#1f5fa8", "stronger than the level below (gap's interval above 0)")
                if step.distinct
                else (":", "#c0392b", "not measurably stronger: same tier")
            )
            axes.plot(
                [low.level, high.level], [low.rating, high.rating], line, color=colour, lw=1.5,
                label=None if label in labelled else label,
            )  # fmt: skip
            labelled.add(label)
        axes.legend(loc="lower right", fontsize=8, frameon=False)
        for row in rows:
            axes.annotate(
                f"{row.rating:.0f}", (row.level, row.ci_high), textcoords="offset points", xytext=(0, 6),
                ha="center", fontsize=8,
            )  # fmt: skip
        axes.set_xticks(numbers, [f"{n}\n{names[n]}" if n in names else str(n) for n in numbers], fontsize=8)
        axes.set_xlabel("level")
        held = "on the anchors' scale" if ladder.anchors else ladder.scale
        axes.set_ylabel(f"Elo ({held})")
        confidence = f"{ladder.confidence:.0%}"
        axes.set_title(f"{title}: {ladder.games} games, {confidence} intervals", fontsize=11)
        axes.grid(axis="y", alpha=0.3)
        axes.margins(y=0.12)
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, format="png")
    finally:
        pyplot.close(figure)
