import re

from dashboard import charts


def _attrs(svg: str, tag: str, attr: str) -> list[str]:
    return re.findall(rf'<{tag}\b[^>]*?\b{attr}="([^"]*)"', svg)


def test_bar_chart_scales_bars_and_places_threshold_line():
    # plot width = 640 - 170 - 60 = 410; scale top = max(20, 30) = 30
    svg = charts.bar_chart(
        bars=[charts.Bar("伏笔-001", 15, href="/t/1"), charts.Bar("伏笔-002", 30, highlight=True)],
        threshold=20,
        width=640,
    )
    assert _attrs(svg, "rect", "width") == ["205", "410"]
    assert _attrs(svg, "rect", "data-value") == ["15", "30"]
    # threshold at 170 + 20 * 410 / 30 = 443.33
    assert 'class="threshold" x1="443.33"' in svg
    assert svg.count('class="bar over"') == 1
    assert '<a href="/t/1">' in svg
    assert "阈值 20" in svg


def test_bar_chart_threshold_beyond_bars_sets_the_scale():
    svg = charts.bar_chart(bars=[charts.Bar("悬念-001", 5)], threshold=10, unit="章", width=640)
    assert _attrs(svg, "rect", "width") == ["205"]
    assert 'x1="580"' in svg  # the threshold is the right edge of the plot
    assert "阈值 10章" in svg


def test_bar_chart_escapes_labels():
    svg = charts.bar_chart(bars=[charts.Bar("<b>坏</b>", 1)])
    assert "<b>" not in svg and "&lt;b&gt;坏" in svg


def test_line_chart_maps_points_and_baseline():
    # plot: x 56..624, y 190 (value 0) .. 16 (value 100, the nice max of 80); height 220 - 16 - 30 = 174
    svg = charts.line_chart(series=[charts.Series("句长", [(1, 0), (11, 80)])], baseline=50, width=640, height=220)
    assert _attrs(svg, "polyline", "points") == ["56,190 624,50.8"]
    assert 'class="baseline" x1="56" y1="103"' in svg
    assert "基线 50" in svg
    assert svg.count('class="dot') == 2


def test_line_chart_downsamples_long_series():
    points = [(n, n) for n in range(1, 3001)]
    svg = charts.line_chart(series=[charts.Series("字数", points)], max_points=100, width=640, height=220)
    coords = _attrs(svg, "polyline", "points")[0].split()
    assert len(coords) == 100
    assert coords[0] == "56,189.97" and coords[-1] == "624,85.6"  # 1 and 3000 of the nice max 5000


def test_downsample_and_buckets():
    assert charts.downsample([(i, i) for i in range(10)], max_points=4) == [(0, 0), (3, 3), (6, 6), (9, 9)]
    assert charts.buckets([(1, 2), (2, 3), (5, 1), (9, 4)], max_buckets=3) == [(1, 3, 5), (4, 6, 1), (7, 9, 4)]
    assert charts.buckets([], max_buckets=3) == []


def test_column_chart_heights():
    # plot height = 160 - 12 - 26 = 122; the tallest column fills it
    svg = charts.column_chart(columns=[(1, 1, 2), (2, 2, 4)], width=640)
    assert _attrs(svg, "rect", "height") == ["61", "122"]
    assert _attrs(svg, "rect", "y") == ["73", "12"]
    assert "第2章：4" in svg


def test_sparkline_points():
    svg = charts.sparkline(values=[0, 10, 5], width=102, height=22)
    assert _attrs(svg, "polyline", "points") == ["1,20 51,2 101,11"]


def test_chapter_axis_marks_span_and_limit():
    svg = charts.chapter_axis(start=0, end=100, marks=[charts.Mark(50, "推进")], span=(10, 60), limit=80, width=220)
    # plot x 20..200: chapter c at 20 + 1.8c
    assert _attrs(svg, "circle", "cx") == ["110"]
    assert 'class="span" x="38"' in svg and 'width="90"' in svg
    assert 'class="threshold" x1="164"' in svg
    assert "第50章：推进" in svg


def test_circle_layout_is_deterministic():
    pos = charts.circle_layout(keys=["a", "b", "c", "d", "e"], center="a", size=200)
    assert pos["a"] == (100, 100)
    assert pos["b"] == (100, 60)  # 12 o'clock, radius 200/2 - 60 = 40
    assert pos["c"] == (140, 100)
    assert pos["d"] == (100, 140)
    assert pos["e"] == (60, 100)


def test_relationship_graph_draws_nodes_and_edges():
    svg = charts.relationship_graph(
        nodes=[charts.Node("linfeng", "林风", href="/e/linfeng"), charts.Node("jianlao", "剑老")],
        edges=[charts.Edge("linfeng", "jianlao", "师徒"), charts.Edge("linfeng", "ghost", "无")],
        center="linfeng",
        size=200,
    )
    assert svg.count('class="edge"') == 1
    assert '<line x1="100" y1="100" x2="100" y2="60"' in svg
    assert "师徒" in svg and "无</text>" not in svg
    assert 'class="node center"' in svg and '<a href="/e/linfeng">' in svg


def test_display_value_reads_like_an_author_writes():
    from dashboard.views import display_value

    assert display_value(["断剑青岚", "青玉佩"]) == "断剑青岚、青玉佩"
    assert display_value([]) == "（空）"
    assert display_value({"师父": "剑老"}) == "师父：剑老"
    assert display_value(None) == "—"
    assert display_value(True) == "是"
    assert display_value(3) == "3"


def test_padded_range_hugs_the_values():
    from dashboard.views import _padded_range

    # spread 4 → pad max(1, 10% of 20 = 2) = 2
    assert _padded_range([16.0, 20.0, 18.0]) == {"y_min": 14.0, "y_max": 22.0}
    # never below zero
    assert _padded_range([0.1, 0.3]) == {"y_min": 0.05, "y_max": 0.35}
