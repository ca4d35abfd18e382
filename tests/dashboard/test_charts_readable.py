"""Chart numbers and labels a reader can read: 1万 not 1e+04, one precision per chart, the baseline
label clear of the lines, a labelled state-change timeline whose labels do not overlap."""

import re

from dashboard import charts
from dashboard.views import _as_of_choices


def test_number_text():
    assert charts.number_text(10000) == "1万"
    assert charts.number_text(25000) == "2.5万"
    assert charts.number_text(123456789) == "1.23亿"
    assert charts.number_text(9743) == "9743"
    assert charts.number_text(16.9099, decimals=2) == "16.91"
    assert charts.number_text(18.0, decimals=2) == "18.00"
    assert charts.number_text(0.5) == "0.5"


def test_chart_decimals_follow_the_span():
    assert charts.chart_decimals(0, 5000) == 0
    assert charts.chart_decimals(12.0, 30.0) == 1
    assert charts.chart_decimals(16.2, 18.4) == 2
    assert charts.chart_decimals(0.31, 0.38) == 3


def test_line_chart_axis_reads_wan_not_exponent():
    svg = charts.line_chart(series=[charts.Series("累计字数", [(1, 1200), (24, 9743)])], width=640, height=220)
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)
    assert ticks[:2] == ["1万", "0"]
    assert "e+" not in svg


def test_line_chart_numbers_share_one_precision_and_the_baseline_label_sits_above_the_plot():
    svg = charts.line_chart(
        series=[charts.Series("句长", [(1, 16.9099), (2, 18.0)])], baseline=17.25, y_min=16.0, y_max=19.0
    )
    assert re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)[:2] == ["19.00", "16.00"]
    assert "基线 17.25</text>" in svg
    assert "第1章：16.91" in svg and "第2章：18.00" in svg
    label_y = float(re.search(r'class="baseline-label" x="[\d.]+" y="([\d.]+)"', svg).group(1))
    plot_top = float(re.findall(r'class="axis" x1="[\d.]+" y1="([\d.]+)"', svg)[1])  # the y axis
    assert label_y <= plot_top  # above the plot: no polyline reaches the label
    assert label_y >= 28  # drawn 960 wide: room above the label for its phone size (24 units)


def test_labelled_timeline_writes_each_change_and_never_overlaps():
    marks = [charts.Mark(c, f"境界设为第{c}层", "change") for c in (3, 4, 5)]
    marks.append(charts.Mark(20, "境界设为筑基初期大圆满", "change"))
    svg = charts.chapter_axis(start=1, end=24, marks=marks, width=480, labels=True)
    labels = re.findall(r'<text class="mark-label" x="([\d.]+)" y="([\d.]+)"><title>[^<]*</title>([^<]*)</text>', svg)
    assert [t for _, _, t in labels] == [
        "第3章 境界设为第3层",
        "第4章 境界设为第4层",
        "第5章 境界设为第5层",
        "第20章 境界设为筑基初期…",
    ]
    boxes = [(float(x), float(x) + len(t) * charts.LABEL_FONT, float(y)) for x, y, t in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a[2] != b[2] or a[1] <= b[0] or b[1] <= a[0], (a, b)
    assert all(0 <= x0 and x1 <= 480 for x0, x1, _ in boxes)
    assert len({y for _, _, y in boxes}) == 3  # three close changes need three rows; chapter 20 reuses the first


def test_the_as_of_selector_offers_the_chapter_viewed():
    changes = [{"chapter": 11}, {"chapter": 20}]
    assert _as_of_choices(changes, 24, 10) == [0, 10, 11, 20, 24]
    assert _as_of_choices(changes, 24) == [0, 11, 20, 24]


def test_the_phone_bar_chart_writes_each_label_above_its_bar_in_a_phone_wide_viewbox():
    bars = [charts.Bar("悬念-001 幽冥殿的真正目的", 16, href="/t/1", highlight=True), charts.Bar("悬念-002 玉佩", 4)]
    svg = charts.bar_chart_stacked(bars=bars, threshold=10, unit="章")
    # 24 px top margin + 2 rows of 40; full-width bars: 16 → 360, 4 → 90, the threshold at 10 → 225
    assert 'viewBox="0 0 360 104"' in svg and 'class="chart bar-rows"' in svg
    assert re.findall(r'<text class="label" x="0" y="([\d.]+)">([^<]+)</text>', svg) == [
        ("40", "悬念-001 幽冥殿的真正目的"),
        ("80", "悬念-002 玉佩"),
    ]
    assert re.findall(r'class="fill" x="0" y="([\d.]+)" width="([\d.]+)"', svg) == [("45", "360"), ("85", "90")]
    assert '<text class="value" x="360" y="40" text-anchor="end">16章</text>' in svg
    assert 'class="threshold" x1="225"' in svg and "阈值 10章" in svg
    assert svg.count('class="row over"') == 1 and '<a href="/t/1">' in svg


def test_bar_charts_draws_both_layouts_with_the_same_scale():
    both = charts.bar_charts(bars=[charts.Bar("秘密-001 身世", 20)], threshold=15, threshold_label="上限", unit="章")
    assert both.count("<svg") == 2
    assert 'class="chart bar-chart"' in both and 'class="chart bar-rows"' in both
    assert both.count("上限 15章") == 2
