"""Helpers of the benchmark harness (bench/common.py). No wall-clock assertions: only shapes and maths."""

from bench.common import book_size, percentile, phase_run, stats, table_format


def test_percentile_interpolates_between_ranks():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 5.0
    assert percentile(values, 95) == 4.8
    assert percentile([7.0], 95) == 7.0


def test_stats_of_samples():
    s = stats([1.0, 2.0, 3.0, 4.0])
    assert s == {"n": 4, "min": 1.0, "p50": 2.5, "p95": 3.85, "mean": 2.5, "max": 4.0}


def test_table_aligns_chinese_and_numbers():
    text = table_format([{"case": "西游记", "s": 1.5}, {"case": "synthetic", "s": 12.25}], title="T")
    lines = text.splitlines()
    assert lines[0] == "T"
    assert lines[1] == "case           s"
    assert lines[3] == "西游记     1.500"
    assert lines[4] == "synthetic   12.2"


def test_book_size_skips_dot_files_and_workspace(tmp_path):
    (tmp_path / "book.yaml").write_bytes(b"title: x\n")
    (tmp_path / ".gen_book.json").write_bytes(b"{}")
    (tmp_path / "工作区").mkdir()
    (tmp_path / "工作区" / "草稿.md").write_bytes(b"draft")
    (tmp_path / "线索").mkdir()
    (tmp_path / "线索" / "伏笔-001.md").write_bytes(b"12345")
    assert book_size(tmp_path) == {"files": 2, "bytes": 14}


def test_phase_runs_in_a_fresh_process_and_reports_rss(tmp_path):
    result = phase_run("bench.common:percentile", {"values": [1, 2, 3], "q": 50}, db=f"sqlite:///{tmp_path}/x.sqlite3")
    assert result["result"] == 2
    assert result["peak_rss_mb"] >= result["baseline_rss_mb"] > 0


def test_run_all_finds_the_bench_scripts_and_filters_them():
    from bench.run_all import scripts

    names = [p.name for p in scripts(None)]
    assert "bench_rebuild.py" in names and "bench_finalize.py" in names
    assert names == sorted(names)
    assert [p.name for p in scripts(["rebuild", "finalize"])] == ["bench_finalize.py", "bench_rebuild.py"]
