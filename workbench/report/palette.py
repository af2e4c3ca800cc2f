"""One colour per drafting method and one shade of it per N, the same in every chart, on the Live
page, in the report and in every export (Qt-free, so the report uses it too).

Hues are Okabe–Ito's colour-blind-safe set; the baseline is grey. A shade depends on N alone (not
on which other N a chart shows), so "ngram N=2" has one colour everywhere."""

from __future__ import annotations

BASELINE = "#6e6e6e"
HUES = {
    "ngram": "#0072B2",        # blue
    "draft_model": "#E69F00",  # orange
    "suffix": "#009E73",       # bluish green
    "mtp": "#D55E00",          # vermillion
    "eagle3": "#CC79A7",       # reddish purple
    "dflash": "#56B4E9",       # sky blue
    "dspark": "#8C6D00",       # dark yellow (Okabe–Ito's yellow is unreadable on white)
}
OTHER = ["#444444", "#999999", "#1b9e77", "#7570b3", "#a6761d", "#e7298a"]
# N -> how far the method's hue is pushed towards black (negative) or white (positive).
SHADES = {1: -0.45, 2: -0.22, 3: 0.0, 4: 0.25, 5: 0.45, 6: -0.35, 7: 0.12, 8: 0.35}


def _mix(hex_colour: str, amount: float) -> str:
    rgb = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
    towards = 255 if amount > 0 else 0
    return "#" + "".join(f"{round(c + (towards - c) * abs(amount)):02x}" for c in rgb)


def lighter(hex_colour: str, amount: float) -> str:
    """A colour pushed towards white by `amount` (0..1): what-if series are drawn paler."""
    return _mix(hex_colour, abs(amount))


def hue(method: str) -> str:
    """The method's own colour: lines across N, and the method in tables."""
    if method == "baseline":
        return BASELINE
    if method in HUES:
        return HUES[method].lower()
    # An unknown method still gets one stable colour.
    return OTHER[sum(map(ord, method)) % len(OTHER)]


def colour(method: str, n: int | None = None) -> str:
    """The colour of one configuration: its method's hue in the shade of its N."""
    base = hue(method)
    if n is None or method == "baseline":
        return base
    return _mix(base, SHADES.get(n, SHADES[(n - 1) % len(SHADES) + 1]))


def other(i: int) -> str:
    """Colours for series that are not a configuration (GPUs of one run, host readings)."""
    return OTHER[i % len(OTHER)]
