"""Server-side SVG charts for the dashboard.

Written here rather than taken from a JavaScript charting library because the app must work
offline (nothing from a CDN) and render without JavaScript, and the charts it needs are few and
simple. Every function returns one self-contained ``<svg>`` string with a ``viewBox`` (it scales to
the page width), escapes every label, and computes its geometry with plain arithmetic rounded to
two decimals, so tests can assert exact coordinates.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe


def _n(value: float) -> str:
    """A coordinate as short text: two decimals, trailing zeros dropped."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in {"-0", ""} else text


def number_text(value: float, *, decimals: int | None = None) -> str:
    """A number on a chart as an author reads it: 1万 / 2.5万 / 1.2亿 from ten thousand up (never
    1e+04), otherwise ``decimals`` fixed decimals (integers as integers when ``decimals`` is None)."""
    for unit, size in (("亿", 100_000_000), ("万", 10_000)):
        if abs(value) >= size:
            return f"{value / size:.2f}".rstrip("0").rstrip(".") + unit
    if decimals is None:
        return str(int(round(value))) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{value:.{decimals}f}"


def chart_decimals(lo: float, hi: float) -> int:
    """One number of decimals for every number of a chart, from the span it covers (so 16.91 stands
    next to 18.00, not 16.9099 next to 18.0)."""
    span = abs(hi - lo) or abs(hi) or 1
    if span >= 100:
        return 0
    if span >= 10:
        return 1
    if span >= 0.5:
        return 2
    return 3


WIDE = 720  # a chart drawn at least this wide shrinks to a third on a phone, where the CSS enlarges its text
PHONE_FONT = 24  # px in chart units: the size of a wide chart's text on a phone (dashboard.css)


def _text_width(text: str, size: float) -> float:
    """About how wide ``text`` is drawn at ``size``: a CJK glyph a full em, anything else 0.62 em
    (DejaVu's digits are 0.64, its dot 0.32)."""
    return sum(size if ord(c) >= 0x2E80 else size * 0.62 for c in text)


def _margin(labels: Sequence[str], *, least: float, width: int) -> float:
    """A left margin that holds the longest y label (right-aligned 4 units from the axis) at the
    size it is drawn: the phone size on a wide chart, 12 units otherwise; never under ``least``."""
    size = PHONE_FONT if width >= WIDE else 12
    return max(least, math.ceil(max((_text_width(t, size) for t in labels), default=0) + 8))


def _cap(y: float, width: int) -> float:
    """The baseline of a label at the top of a chart: low enough that its glyphs' tops stay inside
    the chart at the size the label is drawn (a wide chart's phone size: ascent ~0.95 em)."""
    return max(y, math.ceil(PHONE_FONT * 0.95)) if width >= WIDE else y


def _scale(value: float, lo: float, hi: float, out_lo: float, out_hi: float) -> float:
    if hi == lo:
        return (out_lo + out_hi) / 2
    return out_lo + (value - lo) * (out_hi - out_lo) / (hi - lo)


def _svg(width: float, height: float, body: list[str], *, css: str, label: str, wide: bool = False) -> SafeString:
    return mark_safe(
        f'<svg class="chart {css}{" wide" if wide else ""}" viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" '
        f'height="{_n(height)}" role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
        + "".join(body)
        + "</svg>"
    )


def _nice_max(value: float) -> float:
    """The smallest 1/2/5×10^k at or above ``value`` (axis tops read better rounded)."""
    if value <= 0:
        return 1
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * exp:
            return step * exp
    return 10 * exp  # pragma: no cover - the loop always returns


def downsample(points: Sequence[tuple[float, float]], *, max_points: int) -> list[tuple[float, float]]:
    """At most ``max_points`` points, keeping the first and the last (every k-th point between).

    A 3,000-chapter book would otherwise put 3,000 vertices in every line; the eye cannot tell."""
    points = list(points)
    if len(points) <= max_points or max_points < 2:
        return points
    step = (len(points) - 1) / (max_points - 1)
    return [points[round(i * step)] for i in range(max_points)]


def buckets(points: Sequence[tuple[int, float]], *, max_buckets: int) -> list[tuple[int, int, float]]:
    """Group (chapter, value) points into at most ``max_buckets`` consecutive ranges summing the values.

    Returns (first_chapter, last_chapter, total) per non-empty range, in chapter order."""
    points = sorted(points)
    if not points:
        return []
    lo, hi = points[0][0], points[-1][0]
    width = max(1, math.ceil((hi - lo + 1) / max_buckets))
    grouped: dict[int, float] = {}
    for chapter, value in points:
        key = (chapter - lo) // width
        grouped[key] = grouped.get(key, 0) + value
    return [(lo + k * width, min(hi, lo + (k + 1) * width - 1), total) for k, total in sorted(grouped.items())]


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    href: str = ""
    highlight: bool = False
    title: str = ""


def bar_chart(
    *,
    bars: Sequence[Bar],
    threshold: float | None = None,
    threshold_label: str = "阈值",
    unit: str = "",
    width: int = 760,
    label_width: int = 170,
    bar_height: int = 22,
    gap: int = 8,
    value_width: int = 60,
) -> SafeString:
    """Horizontal bars with an optional vertical threshold line; highlighted bars get class ``over``.

    The scale runs from 0 to the larger of the longest bar and the threshold, so the threshold line
    is always inside the plot."""
    top = 22
    plot_left, plot_right = label_width, width - value_width
    plot_width = plot_right - plot_left
    top_value = max([b.value for b in bars] + [threshold or 0, 1])
    height = top + len(bars) * (bar_height + gap) + 6
    body = []
    for i, bar in enumerate(bars):
        y = top + i * (bar_height + gap)
        bar_w = bar.value * plot_width / top_value
        css = "bar over" if bar.highlight else "bar"
        tip = escape(bar.title or f"{bar.label}：{number_text(bar.value)}{unit}")
        label = escape(bar.label if len(bar.label) <= 14 else bar.label[:13] + "…")
        item = (
            f'<g class="{css}"><title>{tip}</title>'
            f'<text class="label" x="{_n(plot_left - 6)}" y="{_n(y + bar_height * 0.7)}" text-anchor="end">{label}</text>'
            f'<rect x="{_n(plot_left)}" y="{_n(y)}" width="{_n(bar_w)}" height="{_n(bar_height)}" '
            f'data-value="{bar.value:g}"></rect>'
            f'<text class="value" x="{_n(plot_left + bar_w + 4)}" y="{_n(y + bar_height * 0.7)}">{number_text(bar.value)}{escape(unit)}</text></g>'
        )
        if bar.href:
            item = f'<a href="{escape(bar.href)}">{item}</a>'
        body.append(item)
    if threshold is not None:
        x = plot_left + threshold * plot_width / top_value
        body.append(
            f'<line class="threshold" x1="{_n(x)}" y1="{_n(top - 6)}" x2="{_n(x)}" y2="{_n(height)}"></line>'
            f'<text class="threshold-label" x="{_n(x)}" y="{_n(top - 9)}" text-anchor="middle">'
            f"{escape(threshold_label)} {number_text(threshold)}{escape(unit)}</text>"
        )
    return _svg(width, height, body, css="bar-chart", label="条形图")


def bar_chart_stacked(
    *,
    bars: Sequence[Bar],
    threshold: float | None = None,
    threshold_label: str = "阈值",
    unit: str = "",
    width: int = 360,
    row_height: int = 40,
) -> SafeString:
    """The phone layout of ``bar_chart``: each label written on its own line above its bar, the value
    at the line's right end, bars across the full width, in a viewBox about a phone's width (so its
    12-13 px text stays 12-13 px on the screen; the side-label layout at 760 shrinks to half).

    The scale is the same as ``bar_chart``'s: 0 to the larger of the longest bar and the threshold."""
    top = 24
    bar_h, label_y = 10, 16
    top_value = max([b.value for b in bars] + [threshold or 0, 1])
    height = top + len(bars) * row_height
    body = []
    for i, bar in enumerate(bars):
        y = top + i * row_height
        bar_w = bar.value * width / top_value
        css = "row over" if bar.highlight else "row"
        label = escape(bar.label if len(bar.label) <= 22 else bar.label[:21] + "…")
        # no <title> tooltip: a phone does not hover, and the wide chart beside it carries them
        item = (
            f'<g class="{css}">'
            f'<text class="label" x="0" y="{_n(y + label_y)}">{label}</text>'
            f'<text class="value" x="{_n(width)}" y="{_n(y + label_y)}" text-anchor="end">'
            f"{number_text(bar.value)}{escape(unit)}</text>"
            f'<rect class="track" x="0" y="{_n(y + 21)}" width="{_n(width)}" height="{_n(bar_h)}"></rect>'
            f'<rect class="fill" x="0" y="{_n(y + 21)}" width="{_n(bar_w)}" height="{_n(bar_h)}" '
            f'data-value="{bar.value:g}"></rect></g>'
        )
        if bar.href:
            item = f'<a href="{escape(bar.href)}">{item}</a>'
        body.append(item)
    if threshold is not None:
        x = threshold * width / top_value
        anchor = "end" if x > width * 0.75 else ("start" if x < width * 0.25 else "middle")
        body.append(
            f'<line class="threshold" x1="{_n(x)}" y1="{_n(top - 6)}" x2="{_n(x)}" y2="{_n(height)}"></line>'
            f'<text class="threshold-label" x="{_n(x)}" y="{_n(top - 9)}" text-anchor="{anchor}">'
            f"{escape(threshold_label)} {number_text(threshold)}{escape(unit)}</text>"
        )
    return _svg(width, height, body, css="bar-rows", label="条形图")


def bar_charts(
    *, bars: Sequence[Bar], threshold: float | None = None, threshold_label: str = "阈值", unit: str = ""
) -> SafeString:
    """Both layouts of a bar chart; the stylesheet shows the side-label one on a laptop and the
    stacked one at phone width (≤ 700 px)."""
    common = {"bars": bars, "threshold": threshold, "threshold_label": threshold_label, "unit": unit}
    return mark_safe(bar_chart(**common) + bar_chart_stacked(**common))


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    css: str = ""


def line_chart(
    *,
    series: Sequence[Series],
    baseline: float | None = None,
    baseline_label: str = "基线",
    x_label: str = "章",
    width: int = 960,
    height: int = 240,
    y_min: float | None = None,
    y_max: float | None = None,
    max_points: int = 400,
) -> SafeString:
    """Lines over a shared x axis (chapters), with an optional dashed horizontal baseline.

    The y range is [y_min or 0, y_max or a rounded-up maximum] including the baseline."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points] + ([baseline] if baseline is not None else [])
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0, 1)
    lo = y_min if y_min is not None else min([0, *ys])
    hi = y_max if y_max is not None else _nice_max(max(ys) if ys else 1)
    # one precision for the whole chart; whole-number series (word counts) stay whole
    whole = all(float(y).is_integer() for y in ys) and float(lo).is_integer() and float(hi).is_integer()
    decimals = None if whole else chart_decimals(lo, hi)

    def num(value: float) -> str:
        return number_text(value, decimals=decimals)

    # the y labels and the baseline legend (in the top margin) are never cut by the chart's edge
    left = _margin([num(hi), num(lo)], least=56, width=width)
    right, bottom = 16, 30
    top = 34 if baseline is not None and width >= WIDE else 16  # the legend at the phone size needs room
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return _scale(x, x_lo, x_hi, left, left + pw)

    def py(y: float) -> float:
        return _scale(y, lo, hi, top + ph, top)

    body = [
        f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}"></line>',
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}"></line>',
        f'<text class="tick" x="{left - 4}" y="{_cap(top + 4, width)}" text-anchor="end">{num(hi)}</text>',
        f'<text class="tick" x="{left - 4}" y="{top + ph}" text-anchor="end">{num(lo)}</text>',
    ]
    if xs:
        body.append(f'<text class="tick" x="{left}" y="{height - 10}">{x_lo:g}</text>')
        body.append(
            f'<text class="tick" x="{left + pw}" y="{height - 10}" text-anchor="end">{x_hi:g} {escape(x_label)}</text>'
        )
    if baseline is not None:
        y = py(baseline)
        label_y = top - (4 if width >= WIDE else 2)
        # the label sits in the top margin, as a legend (a dashed sample, then the text): above the
        # plot no line can run through it, wherever the baseline and the series fall
        body.append(
            f'<line class="baseline" x1="{left}" y1="{_n(y)}" x2="{left + pw}" y2="{_n(y)}"></line>'
            f'<line class="baseline legend" x1="{left + 8}" y1="{label_y - 4}" x2="{left + 30}" y2="{label_y - 4}"></line>'
            f'<text class="baseline-label" x="{left + 34}" y="{label_y}">'
            f"{escape(baseline_label)} {num(baseline)}</text>"
        )
    for i, s in enumerate(series):
        pts = downsample(s.points, max_points=max_points)
        coords = " ".join(f"{_n(px(x))},{_n(py(y))}" for x, y in pts)
        css = escape(s.css or f"series-{i}")
        body.append(f'<polyline class="line {css}" points="{coords}"><title>{escape(s.name)}</title></polyline>')
        if len(pts) <= 40:
            body.extend(
                f'<circle class="dot {css}" cx="{_n(px(x))}" cy="{_n(py(y))}" r="3"><title>{escape(s.name)} 第{x:g}章：{num(y)}</title></circle>'
                for x, y in pts
            )
    return _svg(width, height, body, css="line-chart", label="折线图", wide=width >= WIDE)


def sparkline(*, values: Sequence[float], width: int = 120, height: int = 28) -> SafeString:
    """A tiny line without axes: the shape of a series at a glance."""
    if not values:
        return _svg(width, height, [], css="sparkline", label="迷你图")
    lo, hi = min(values), max(values)
    n = len(values)
    coords = " ".join(
        f"{_n(_scale(i, 0, n - 1, 1, width - 1) if n > 1 else width / 2)},{_n(_scale(v, lo, hi, height - 2, 2))}"
        for i, v in enumerate(values)
    )
    return _svg(
        width, height, [f'<polyline class="line" points="{coords}"></polyline>'], css="sparkline", label="迷你图"
    )


def column_chart(
    *, columns: Sequence[tuple[int, int, float]], x_label: str = "章", width: int = 960, height: int = 160
) -> SafeString:
    """Vertical columns over chapter ranges: (first_chapter, last_chapter, value) as from ``buckets``."""
    top_value = max((v for _, _, v in columns), default=0) or 1
    left, right, top, bottom = _margin([number_text(top_value)], least=40, width=width), 10, 12, 26
    pw, ph = width - left - right, height - top - bottom
    body = [f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}"></line>']
    if columns:
        lo, hi = columns[0][0], columns[-1][1]
        span = hi - lo + 1
        body.append(
            f'<text class="tick" x="{left - 4}" y="{_cap(top + 8, width)}" text-anchor="end">{number_text(top_value)}</text>'
        )
        for first, last, value in columns:
            x = left + (first - lo) * pw / span
            w = max(1.0, (last - first + 1) * pw / span - 1)
            h = value * ph / top_value
            chapters = f"第{first}章" if first == last else f"第{first}–{last}章"
            body.append(
                f'<rect class="col" x="{_n(x)}" y="{_n(top + ph - h)}" width="{_n(w)}" height="{_n(h)}" '
                f'data-value="{value:g}"><title>{chapters}：{number_text(value)}</title></rect>'
            )
        body.append(f'<text class="tick" x="{left}" y="{height - 8}">{lo}</text>')
        body.append(
            f'<text class="tick" x="{left + pw}" y="{height - 8}" text-anchor="end">{hi} {escape(x_label)}</text>'
        )
    return _svg(width, height, body, css="column-chart", label="柱状图", wide=width >= WIDE)


LABEL_CHARS = 14  # a mark's written label is cut after this many characters (the full text is its tooltip)
LABEL_FONT = 12  # px, in chart units; the CSS sets .mark-label to the same size
LABEL_TOP = 24  # the first row of mark labels starts below the limit line's label (y = 10)


@dataclass(frozen=True)
class Mark:
    chapter: int
    label: str
    kind: str = "event"


def chapter_axis(
    *,
    start: int,
    end: int,
    marks: Sequence[Mark],
    span: tuple[int, int] | None = None,
    limit: int | None = None,
    limit_label: str = "逾期线",
    width: int = 960,
    height: int = 90,
    labels: bool = False,
) -> SafeString:
    """A chapter axis from ``start`` to ``end`` with marks (history entries), an optional span bar
    (e.g. from opening to now) and an optional vertical limit line (e.g. where the thread goes overdue).

    ``labels``: each mark also gets a short written label above the axis (第N章 and the start of its
    label), laid out in as many rows as it takes for no two labels to overlap."""
    left, right, axis_y = 20, 20, 50
    pw = width - left - right
    hi = max(end, start + 1)

    def px(chapter: float) -> float:
        return _scale(chapter, start, hi, left, left + pw)

    placed: list[tuple[float, int, str, Mark]] = []
    if labels:
        row_ends: list[float] = []
        for mark in sorted(marks, key=lambda m: m.chapter):
            text = f"第{mark.chapter}章 {mark.label}"
            text = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
            x = px(mark.chapter)
            # a CJK glyph is about one font size wide; anchor the label at the mark, clamped to the plot
            w = len(text) * LABEL_FONT
            x0 = min(max(x - w / 2, 0), width - w)
            row = next((i for i, end_x in enumerate(row_ends) if end_x + 6 <= x0), len(row_ends))
            if row == len(row_ends):
                row_ends.append(0)
            row_ends[row] = x0 + w
            placed.append((x0, row, text, mark))
        rows = len(row_ends)
        axis_y = LABEL_TOP + rows * (LABEL_FONT + 6) + 8
        height = axis_y + 40

    body = [f'<line class="axis" x1="{left}" y1="{axis_y}" x2="{left + pw}" y2="{axis_y}"></line>']
    if span is not None:
        x1, x2 = px(span[0]), px(span[1])
        body.append(
            f'<rect class="span" x="{_n(x1)}" y="{axis_y - 5}" width="{_n(max(0, x2 - x1))}" height="10"></rect>'
        )
    if limit is not None:
        x = px(limit)
        body.append(
            f'<line class="threshold" x1="{_n(x)}" y1="14" x2="{_n(x)}" y2="{axis_y + 14}"></line>'
            f'<text class="threshold-label" x="{_n(x)}" y="10" text-anchor="middle">{escape(limit_label)} {limit}</text>'
        )
    for x0, row, text, mark in placed:
        y = LABEL_TOP + row * (LABEL_FONT + 6) + LABEL_FONT
        x = px(mark.chapter)
        body.append(
            f'<line class="mark-leader" x1="{_n(x)}" y1="{y + 3}" x2="{_n(x)}" y2="{axis_y - 5}"></line>'
            f'<text class="mark-label" x="{_n(x0)}" y="{y}"><title>第{mark.chapter}章：{escape(mark.label)}</title>'
            f"{escape(text)}</text>"
        )
    for mark in marks:
        x = px(mark.chapter)
        body.append(
            f'<circle class="mark {escape(mark.kind)}" cx="{_n(x)}" cy="{axis_y}" r="5" data-chapter="{mark.chapter}">'
            f"<title>第{mark.chapter}章：{escape(mark.label)}</title></circle>"
        )
    body.append(f'<text class="tick" x="{left}" y="{height - 12}">{start}</text>')
    body.append(f'<text class="tick" x="{left + pw}" y="{height - 12}" text-anchor="end">{hi} 章</text>')
    return _svg(width, height, body, css="chapter-axis labelled" if labels else "chapter-axis", label="章节轴")


@dataclass(frozen=True)
class Node:
    key: str
    label: str
    href: str = ""
    css: str = ""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str = ""


def circle_layout(*, keys: Sequence[str], center: str | None, size: int) -> dict[str, tuple[float, float]]:
    """Deterministic positions: ``center`` in the middle, the others evenly on a circle from 12 o'clock.

    A force layout would move nodes between page loads; a circle keeps every drawing the same."""
    mid = size / 2
    radius = size / 2 - 60
    ring = [k for k in keys if k != center]
    positions: dict[str, tuple[float, float]] = {}
    if center is not None:
        positions[center] = (mid, mid)
    for i, key in enumerate(ring):
        angle = -math.pi / 2 + 2 * math.pi * i / max(1, len(ring))
        positions[key] = (round(mid + radius * math.cos(angle), 2), round(mid + radius * math.sin(angle), 2))
    return positions


def relationship_graph(
    *, nodes: Sequence[Node], edges: Sequence[Edge], center: str | None = None, size: int = 480
) -> SafeString:
    """Nodes on a circle around ``center`` and directed, labelled edges between them."""
    pos = circle_layout(keys=[n.key for n in nodes], center=center, size=size)
    body = [
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="22" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"></path></marker></defs>'
    ]
    for edge in edges:
        if edge.source not in pos or edge.target not in pos:
            continue
        (x1, y1), (x2, y2) = pos[edge.source], pos[edge.target]
        body.append(
            f'<g class="edge"><line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" marker-end="url(#arrow)"></line>'
            f'<text x="{_n((x1 + x2) / 2)}" y="{_n((y1 + y2) / 2 - 4)}" text-anchor="middle">{escape(edge.label)}</text></g>'
        )
    for node in nodes:
        x, y = pos[node.key]
        css = "node center" if node.key == center else "node"
        if node.css:
            css += f" {escape(node.css)}"
        item = (
            f'<g class="{css}"><circle cx="{_n(x)}" cy="{_n(y)}" r="16"></circle>'
            f'<text x="{_n(x)}" y="{_n(y + 32)}" text-anchor="middle">{escape(node.label)}</text></g>'
        )
        if node.href:
            item = f'<a href="{escape(node.href)}">{item}</a>'
        body.append(item)
    return _svg(size, size, body, css="graph", label="关系图")
