"""The synthetic book generator (bench/gen_book.py): deterministic, and its output is a valid book."""

import re
from pathlib import Path

import pytest
import yaml

from bench.gen_book import chapter_append, generate_book

FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _front_matter(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    match = FRONT_MATTER.match(text)
    assert match, f"{path} has no front matter"
    return yaml.safe_load(match.group(1)), text[match.end() :]


def test_same_seed_gives_identical_files_and_other_seed_differs(tmp_path):
    kwargs = {"chapters": 12, "entities": 30, "aliases": 40, "threads": 6, "secrets": 3, "chars_per_chapter": 400}
    generate_book(tmp_path / "a", seed=7, **kwargs)
    generate_book(tmp_path / "b", seed=7, **kwargs)
    generate_book(tmp_path / "c", seed=8, **kwargs)
    a, b, c = _tree(tmp_path / "a"), _tree(tmp_path / "b"), _tree(tmp_path / "c")
    assert a == b
    assert a["定稿/正文/第1卷/第0001章.md"] != c["定稿/正文/第1卷/第0001章.md"]


def test_counts_and_layout(tmp_path):
    counts = generate_book(tmp_path, chapters=150, seed=1, entities=60, aliases=90, threads=15, secrets=5)
    assert counts["chapters"] == 150
    assert counts["volumes"] == 2
    assert counts["entities"] == 60
    assert counts["aliases"] == 90
    assert counts["threads"] == 15
    assert counts["secrets"] == 5
    book = yaml.safe_load((tmp_path / "book.yaml").read_text(encoding="utf-8"))
    assert [v["chapters"] for v in book["volumes"]] == [[1, 100], [101, 150]]
    assert len(list((tmp_path / "定稿" / "正文" / "第1卷").glob("第*章.md"))) == 100
    assert len(list((tmp_path / "定稿" / "正文" / "第2卷").glob("第*章.md"))) == 50
    assert len(list((tmp_path / "线索").glob("*.md"))) == 15
    assert len(list((tmp_path / "信息差").glob("*.md"))) == 5
    assert sorted(p.name for p in (tmp_path / "时间线").iterdir()) == ["第1卷.md", "第2卷.md"]
    assert sorted(p.name for p in (tmp_path / "大纲" / "卷纲").iterdir()) == ["第1卷.md", "第2卷.md"]
    assert "## 结局" in (tmp_path / "大纲" / "总纲.md").read_text(encoding="utf-8")


def test_output_parses_and_is_consistent(tmp_path):
    generate_book(tmp_path, chapters=120, seed=3, entities=80, aliases=120, threads=20, secrets=6)
    chapters = {}
    for path in sorted((tmp_path / "定稿" / "正文").rglob("第*章.md")):
        fm, body = _front_matter(path)
        chapters[int(re.search(r"\d+", path.name).group())] = (fm, body)
    assert sorted(chapters) == list(range(1, 121))

    threads = {}
    for path in sorted((tmp_path / "线索").glob("*.md")):
        fm, body = _front_matter(path)
        threads[fm["id"]] = fm
        assert path.name.startswith(fm["id"])
        if fm["strength"] == "高":
            assert fm["planned_end"] is not None
        cited = [int(n) for n in re.findall(r"^- 第(\d+)章：", body, re.M)]
        assert cited and all(n in chapters for n in cited)
        assert cited[0] == fm["opened"]
        assert fm["id"] in chapters[fm["opened"]][0]["threads"]["opens"]
        if fm["status"] == "已收尾":
            assert cited[-1] == fm["closed"]
            assert fm["id"] in chapters[fm["closed"]][0]["threads"]["closes"]

    names: dict[str, list[str]] = {}
    for path in sorted((tmp_path / "设定" / "角色").glob("*.md")):
        fm, _ = _front_matter(path)
        names.setdefault("角色", []).append(fm["name"])
        names["角色"] += [a["alias"] if isinstance(a, dict) else a for a in fm["aliases"]]
    roster = yaml.safe_load((tmp_path / "设定" / "名册.yaml").read_text(encoding="utf-8"))
    for etype, items in roster.items():
        for item in items:
            names.setdefault(etype, []).append(item["name"])
            names[etype] += item.get("aliases", [])
    every_name = [n for ns in names.values() for n in ns]
    assert len(every_name) == 80 + 120
    assert len(set(every_name)) == len(every_name)  # no alias is claimed twice

    valid_positions, valid_moods = {"推进", "过渡", "日常"}, {"压抑", "铺垫", "小爽", "大爽", "转折"}
    mentioned = 0
    for fm, body in chapters.values():
        assert fm["chapter_position"] in valid_positions
        assert fm["mood_position"] in valid_moods
        assert re.fullmatch(r"\S+钩-[强中弱]", fm["hook_type"])
        for kind in ("opens", "advances", "closes"):
            assert all(t in threads for t in fm["threads"][kind])
        assert "“" in body and "”" in body
        assert len("".join(body.split())) >= 3000
        mentioned += sum(1 for n in every_name if n in body)
    assert mentioned > 120 * 5

    for path in sorted((tmp_path / "信息差").glob("*.md")):
        fm, body = _front_matter(path)
        assert fm["id"].startswith("信息差-") and body.strip()


def test_chapter_append_writes_the_next_chapter(tmp_path):
    generate_book(tmp_path, chapters=5, seed=2, entities=25, aliases=30, threads=6, secrets=3, chars_per_chapter=300)
    first = chapter_append(tmp_path)
    second = chapter_append(tmp_path)
    assert first.name == "第0006章.md"
    assert second.name == "第0007章.md"
    fm, body = _front_matter(first)
    assert fm["volume"] == 1
    assert fm["threads"] == {"opens": [], "advances": [], "closes": []}
    assert len("".join(body.split())) >= 300


def test_book_reader_finds_no_issue_in_a_generated_book(tmp_path):
    from bookfiles import parser as bookfs

    counts = generate_book(tmp_path, chapters=130, seed=5, entities=70, aliases=100, threads=14, secrets=4)
    book = bookfs.book_read(tmp_path)
    assert [i.as_dict() for i in book.issues] == []
    assert len(book.chapters) == 130
    assert len(book.threads) == 14
    assert len(book.secrets) == 4
    assert len(book.entities) == counts["entities"] == 70
    assert sum(len([a for a in e.aliases if a.alias != e.name]) for e in book.entities) == 100
    assert sorted({c.volume for c in book.chapters}) == [1, 2]


@pytest.mark.django_db
def test_a_generated_book_rebuilds_without_errors_or_warnings(tmp_path):
    from bookfiles.rebuilder import book_rebuild
    from core.models import Chapter

    root = tmp_path / "gen-book"
    counts = generate_book(
        root, chapters=40, seed=4, entities=40, aliases=60, threads=8, secrets=3, chars_per_chapter=500
    )
    report = book_rebuild(root=root)
    assert report["errors"] == []
    assert report["warnings"] == []
    assert report["counts"]["chapters"] == 40
    assert report["counts"]["threads"] == 8
    assert report["counts"]["secrets"] == 3
    assert report["counts"]["entities"] == counts["entities"] == 40
    assert Chapter.objects.filter(book__slug="gen-book").count() == 40
