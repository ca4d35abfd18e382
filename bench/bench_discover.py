"""Cast discovery on 西游记 against the reference list of its 15 main characters and 92 aliases.

    python bench/bench_discover.py [--json] [--quick] [--chapters N] [--book DIR] [--base TREE]
    python bench/bench_discover.py --text NOVEL.txt --gold GOLD.json [--from N --to M] [--base TREE]

The novel (``$WEBNOVEL_SHARED/corpus/xiyouji.txt``) is split exactly as ``import_txt`` splits it
(``txt_parse``: the chapter bodies it writes), discovery runs over every chapter (characters only),
and the proposals are scored against ``xiyouji_aliases.json``, which is used only here, to measure:

- ``recall_top30``: how many of the 15 characters are among the first 30 character proposals (a
  character is the proposal holding its reference name, else the one holding most of its aliases by
  count; one proposal stands for one character at most);
- ``aliases_right``: the share of the reference aliases occurring ≥ 5 times that are names of that
  character's proposal (generic aliases count: they are proposed, flagged generic);
- ``aliases_wrong``: the share that are names of another proposal;
- ``seconds`` for the whole discovery and ``ratio`` to jieba's own part-of-speech pass over the same
  bodies (timed after it, dictionary already loaded for both), in wall seconds and in CPU seconds of
  the process (``cpu_ratio``: the figure to read on a shared machine); ``peak_rss_mb`` after discovery.

``--book DIR`` scores a book folder instead (a second text, to check nothing is tuned to 西游记): its
finished chapters (``定稿/正文/**/*.md``, front matter dropped) against its own curated cast — the
角色 of ``设定/名册.yaml`` and the character cards ``设定/角色/*.md`` with their aliases, each counted
in the text. The figures are the same; the reference is whatever the author wrote. Two such books
are held out for this: ``bench/discover-heldout`` (five classical chapters) and
``bench/discover-heldout2`` (eight modern urban chapters, a family of one surname, titles and nicknames),
each written with its cast before the engine was changed against it.

``--base TREE`` runs another checkout's engine (``TREE/entities/discovery/engine.py``, e.g. main's) on
the same chapters in the same run, before this tree's, and prints both: the before / after figures the
house rule asks for, on one machine load.

Goals (issue 17): 15/15 in the top 30, ≥ 70 % right, ≤ 5 % wrong, ratio ≤ 1.5, RSS ≤ 500 MB.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"


def xiyouji_chapters(limit: int | None = None) -> list[tuple[int, str]]:
    """The chapters of 西游记 as import_txt writes them: (number, body)."""
    from bookfiles.importers.txt import txt_decode, txt_parse

    text, _ = txt_decode((CORPUS / "xiyouji.txt").read_bytes())
    chapters = [(c.number, c.body) for c in txt_parse(text).chapters]
    return chapters[:limit] if limit else chapters


def _front_matter(text: str) -> tuple[dict, str]:
    import yaml

    if text.startswith("---\n"):
        head, _, body = text[4:].partition("\n---\n")
        return yaml.safe_load(head) or {}, body
    return {}, text


def book_chapters(folder: Path) -> list[tuple[int, str]]:
    """A book folder's finished chapters, in order: (number, body without front matter)."""
    files = sorted((folder / "定稿" / "正文").rglob("*.md"), key=lambda f: (f.parent.name, f.name))
    return [(i, _front_matter(f.read_text(encoding="utf-8"))[1]) for i, f in enumerate(files, start=1)]


def book_gold(folder: Path, chapters: list[tuple[int, str]]) -> list[dict]:
    """The book's curated characters (roster 角色 and character cards) in the reference format."""
    import yaml

    entries = list(
        (yaml.safe_load((folder / "设定" / "名册.yaml").read_text(encoding="utf-8")) or {}).get("角色") or []
    )
    entries += [
        _front_matter(f.read_text(encoding="utf-8"))[0] for f in sorted((folder / "设定" / "角色").glob("*.md"))
    ]
    text = "\n".join(body for _, body in chapters)
    gold = []
    for entry in entries:
        names = [entry["name"], *((a["alias"] if isinstance(a, dict) else a) for a in entry.get("aliases") or [])]
        gold.append(
            {"name": entry["name"], "aliases": [{"alias": n, "count": text.count(n)} for n in dict.fromkeys(names)]}
        )
    return gold


def gold_load(path: Path | None = None) -> list[dict]:
    return json.loads((path or CORPUS / "xiyouji_aliases.json").read_text(encoding="utf-8"))["characters"]


def text_chapters(path: Path, limit: int | None = None) -> list[tuple[int, str]]:
    """Any novel's chapters as import_txt writes them: (number, body)."""
    from bookfiles.importers.txt import txt_decode, txt_parse

    text, _ = txt_decode(path.read_bytes())
    chapters = [(c.number, c.body) for c in txt_parse(text).chapters]
    return chapters[:limit] if limit else chapters


class _Word:
    """A naive proposal: one word, no aliases (the baseline's shape for score())."""

    type = "角色"

    def __init__(self, name: str) -> None:
        self.name = name

    def names(self) -> list[str]:
        return [self.name]


def naive_baseline(chapters: list[tuple[int, str]], top: int = 30) -> list[_Word]:
    """jieba's ``top`` most frequent person words (nr / nrfg / nrt), each a proposal of its own."""
    import jieba.posseg as pseg

    counts: Counter[str] = Counter()
    for _, body in chapters:
        counts.update(p.word for p in pseg.cut(body) if p.flag in ("nr", "nrfg", "nrt") and len(p.word) > 1)
    return [_Word(w) for w, _ in counts.most_common(top)]


def score(proposals: list, gold: list[dict], *, top: int = 30, min_count: int = 5) -> dict:
    """Recall of the reference characters in the first ``top`` proposals, and right / wrong alias shares."""
    persons = [p for p in proposals if p.type == "角色"]
    rank = {id(p): i for i, p in enumerate(persons)}
    used: set[int] = set()
    found = right = wrong = total = 0
    detail = []
    # A gold list may mark its main characters ("main": true): recall counts those; aliases count all.
    mains = [c for c in gold if c.get("main")] or gold
    for character in sorted(gold, key=lambda c: -sum(a["count"] for a in c["aliases"])):
        hold: Counter[int] = Counter()
        for p in persons:
            if id(p) in used:
                continue
            names = set(p.names())
            for a in character["aliases"]:
                if a["alias"] in names:
                    hold[id(p)] += a["count"] + (10**7 if a["alias"] == character["name"] else 0)
        match = None
        if hold:
            pid = hold.most_common(1)[0][0]
            match = next(p for p in persons if id(p) == pid)
            used.add(pid)
        in_top = match is not None and rank[id(match)] < top
        found += in_top and character in mains
        for a in character["aliases"]:
            if a["count"] < min_count:
                continue
            total += 1
            owners = [p for p in persons if a["alias"] in p.names()]
            if match is not None and match in owners:
                right += 1
            elif owners:
                wrong += 1
        detail.append(
            {"character": character["name"], "proposal": match.name if match else None, "rank": rank.get(id(match))}
        )
    return {
        "recall_top30": found,
        "characters": len(mains),
        "aliases_scored": total,
        "aliases_right": round(right / total, 3) if total else 0.0,
        "aliases_wrong": round(wrong / total, 3) if total else 0.0,
        "detail": detail,
    }


def engine_load(tree: Path | None):
    """The discovery engine of this tree, or of another checkout (its whole ``entities.discovery`` package:
    the engine is pure and split into modules, so each of the other tree's modules is imported from there)."""
    if tree is None:
        from entities.discovery import engine

        return engine
    ours = {k: m for k, m in sys.modules.items() if k == "entities" or k.startswith("entities.")}
    for k in ours:
        del sys.modules[k]
    sys.path.insert(0, str(tree))
    try:
        module = importlib.import_module("entities.discovery.engine")
    finally:
        sys.path.remove(str(tree))
        for k in [k for k in sys.modules if k == "entities" or k.startswith("entities.")]:
            sys.modules[f"base_{k}"] = sys.modules.pop(k)  # the other tree's modules stay alive under base_*
        sys.modules.update(ours)
    return module


def engine_run(engine, chapters: list[tuple[int, str]], gold: list[dict]) -> dict:
    """One discovery over the chapters, scored, with its wall and CPU seconds and the peak RSS so far."""
    # CPU seconds of this process as well as wall seconds: the machine is shared, and the ratio of two
    # wall times taken minutes apart mostly measures how busy the neighbours were.
    t0, c0 = time.perf_counter(), time.process_time()
    proposals = engine.discover(chapters, types=["角色"])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = score(proposals, gold)
    return figures | {
        "proposals": len(proposals),
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "peak_rss_mb": round(rss, 1),
        "top30": [p.name for p in proposals[:30]],
    }


def _print(title: str, label: str, figures: dict) -> None:
    print(f"{title} {figures['chapters']} 回（{label}）：{figures['proposals']} 个角色提议")
    print(f"  前 30 中的参考角色：{figures['recall_top30']}/{figures['characters']}")
    print(
        f"  别名（≥5 次，{figures['aliases_scored']} 个）归对：{figures['aliases_right']:.1%}，归错：{figures['aliases_wrong']:.1%}"
    )
    print(f"  用时 {figures['seconds']} s，分词器自身 {figures['segmenter_seconds']} s，比值 {figures['ratio']}")
    print(
        f"  CPU {figures['cpu_seconds']} s，分词器自身 {figures['segmenter_cpu_seconds']} s，比值 {figures['cpu_ratio']}"
    )
    print(f"  峰值 RSS {figures['peak_rss_mb']} MB（进程至此的峰值）")
    for row in figures["detail"]:
        print(
            f"    {row['character']} → {row['proposal']} (第 {row['rank']} 位)"
            if row["proposal"]
            else f"    {row['character']} → 未发现"
        )
    print("  前 30：" + "、".join(figures["top30"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--chapters", type=int, default=None, help="only the first N chapters (quick look)")
    parser.add_argument("--quick", action="store_true", help="the first 20 chapters only")
    parser.add_argument("--book", type=Path, default=None, help="score a book folder against its own roster")
    parser.add_argument("--text", type=Path, default=None, help="score a novel .txt (with --gold) instead")
    parser.add_argument(
        "--gold", type=Path, default=None, help="the gold cast of --text (xiyouji_aliases.json's shape)"
    )
    parser.add_argument("--from", dest="first", type=int, default=None, help="with --text: chapters from this number")
    parser.add_argument("--to", dest="last", type=int, default=None, help="with --text: chapters up to this number")
    parser.add_argument("--base", type=Path, default=None, help="also run this checkout's engine first (before)")
    parser.add_argument("--keep", action="store_true", help="accepted for run_all.py (nothing to keep)")
    args = parser.parse_args()
    if args.book is None and not (CORPUS / "xiyouji.txt").is_file():
        sys.exit(f"skipped: {CORPUS}/xiyouji.txt not found (set WEBNOVEL_SHARED)")
    if args.base is not None and not (args.base / "entities/discovery/engine.py").is_file():
        sys.exit(f"--base {args.base}: entities/discovery/engine.py not found")
    import jieba
    import jieba.posseg as pseg

    jieba.setLogLevel(60)
    jieba.initialize()
    if args.text is not None:
        if args.gold is None:
            sys.exit("--text needs --gold")
        chapters = text_chapters(args.text, args.chapters)
        # A part of the book (a gold list written for 第71–120回 scores that part only).
        chapters = [(n, b) for n, b in chapters if (args.first or 0) <= n <= (args.last or n)]
        gold, title = gold_load(args.gold), args.text.stem
    elif args.book is not None:
        chapters = book_chapters(args.book)[: args.chapters]
        gold, title = book_gold(args.book, chapters), args.book.name
    else:
        chapters = xiyouji_chapters(20 if args.quick and not args.chapters else args.chapters)
        gold, title = gold_load(), "西游记"
    from pypinyin import lazy_pinyin

    lazy_pinyin("中")  # its dictionaries load on first use: not in the first run's seconds only
    runs = {}
    if args.base is not None:
        runs["before"] = engine_run(engine_load(args.base), chapters, gold)
    runs["now"] = engine_run(engine_load(None), chapters, gold)
    t0, c0 = time.perf_counter(), time.process_time()
    for _, body in chapters:
        [(p.word, p.flag) for p in pseg.cut(body)]
    segmenter, segmenter_cpu = time.perf_counter() - t0, time.process_time() - c0
    naive = score(naive_baseline(chapters), gold)
    for figures in runs.values():
        figures |= {
            "chapters": len(chapters),
            "segmenter_seconds": round(segmenter, 2),
            "ratio": round(figures["seconds"] / segmenter, 2),
            "segmenter_cpu_seconds": round(segmenter_cpu, 2),
            "cpu_ratio": round(figures["cpu_seconds"] / segmenter_cpu, 2),
        }
    if args.json:
        print(
            json.dumps(
                runs["now"]
                | ({"before": runs["before"]} if "before" in runs else {})
                | {"naive": {k: naive[k] for k in ("recall_top30", "characters", "aliases_right", "aliases_wrong")}},
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    for label, figures in runs.items():
        _print(title, {"before": f"基线 {args.base}", "now": "本树"}[label], figures)
    print(
        f"jieba 最常见的 30 个人名词（同一评分）：前 30 中 {naive['recall_top30']}/{naive['characters']}，"
        f"别名归对 {naive['aliases_right']:.1%}，归错 {naive['aliases_wrong']:.1%}"
    )


if __name__ == "__main__":
    main()
