"""The continuity check (机检) on a blind planted set: a real text the engine was not tuned on, with the
canon an author would declare, hand-written plants and silent controls (bench/check_sets/).

    python bench/bench_check_blind.py [--set shuihu] [--json] [--keep]

The set's text is read at run time from ``$WEBNOVEL_SHARED/corpus`` (never copied into the repository),
imported with ``import_txt``, cut to the set's chapters, and given the set's canon files; the book is
rebuilt into a fresh SQLite database. Then:

- **clean**: every chapter checked as a draft against its own N−1 (errors / warnings / infos per 10,000
  characters), with the set's cast and again with more of the real cast declared (it must not raise
  them);
- **planted**: each planted chapter's draft (its plants and controls inserted, its front matter edited)
  checked against N−1. A plant is recalled when a finding of its kind is at its line (front-matter
  kinds: its kind with the planted id, or the chapter's). Precision: of the errors and warnings in the
  planted drafts, the share that are a plant's. A control is silent when no error or warning is at its
  line.

Goals (issue 27): recall ≥ 0.9 overall and ≥ 0.8 per kind; precision ≥ 0.9; clean ≤ 0.2 warnings and
≤ 1 info per 10,000 characters."""

from __future__ import annotations

import importlib
import io
import os
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench, django_setup  # noqa: E402

SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
GOAL_RECALL, GOAL_RECALL_KIND, GOAL_PRECISION = 0.9, 0.8, 0.9
GOAL_WARNINGS_PER_10K, GOAL_INFOS_PER_10K = 0.2, 1.0
FRONT_KINDS = {"thread_unknown", "thread_closed", "thread_not_open", "thread_due", "weak_hook_streak"}


# ── the book ───────────────────────────────────────────────────────────────────────────────────


def _yaml(data) -> str:
    import yaml

    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def _front(text: str) -> tuple[dict, str]:
    from bookfiles.parser.markup import front_matter_split

    fm, _, body, _ = front_matter_split(text)
    return dict(fm or {}), body


def _tags(changes: list[tuple[str, str, str, str]]) -> str:
    out = []
    for name, op, field, value in changes:
        out.append(
            f'<entity-update ref="{name}" type="角色" reason="本章所述">\n'
            f'  <{op} field="{field}" value="{value}"/>\n</entity-update>'
        )
    return "\n".join(out)


def book_write(folder: Path, data, *, slug: str, more_cast: bool) -> Path:
    """The set's text imported into ``folder``, cut to its chapters, with its canon files."""
    from django.core.management import call_command

    call_command("import_txt", str(CORPUS / data.SOURCE), str(folder), "--slug", slug, stdout=io.StringIO())
    chapters = folder / "定稿" / "正文"
    for path in sorted(chapters.rglob("第*章.md")):
        if not data.FIRST <= int(path.stem[1:-1]) <= data.CHAPTERS:
            path.unlink()
    config = __import__("yaml").safe_load((folder / "book.yaml").read_text(encoding="utf-8")) or {}
    config["continuity"] = data.CONTINUITY
    config["thresholds"] = {"weak_hook_streak": data.HOOK_THRESHOLD}
    (folder / "book.yaml").write_text(_yaml(config), encoding="utf-8")
    cards = folder / "设定" / "角色"
    cards.mkdir(parents=True)
    cast = {**data.CARDS, **(data.MORE_CARDS if more_cast else {})}
    for name, fields in cast.items():
        head = {"name": name, "tier": "重要", "status": "存活", **fields}
        (cards / f"{name}.md").write_text(f"---\n{_yaml(head)}---\n", encoding="utf-8")
    (folder / "设定" / "名册.yaml").write_text(_yaml({"物品": [{"name": n} for n in data.ITEMS]}), encoding="utf-8")
    (folder / "信息差").mkdir()
    for secret in data.SECRETS:
        head = {**secret, "reader_knows": False}
        (folder / "信息差" / f"{secret['id']}.md").write_text(f"---\n{_yaml(head)}---\n{secret['title']}\n", "utf-8")
    (folder / "线索").mkdir()
    for thread in data.THREADS:
        head = {**thread, "strength": "中", "status": "已收尾" if thread.get("closed") else "进行"}
        (folder / "线索" / f"{thread['id']}.md").write_text(
            f"---\n{_yaml(head)}---\n## 描述\n{thread['title']}\n", "utf-8"
        )
    (folder / "文风").mkdir()
    (folder / "文风" / "规则.md").write_text(f"---\n{_yaml(data.STYLE)}---\n文风规则。\n", encoding="utf-8")
    closes = defaultdict(list)
    for thread in data.THREADS:
        if thread.get("closed"):
            closes[thread["closed"]].append(thread["id"])
    for path in sorted(chapters.rglob("第*章.md")):
        number = int(path.stem[1:-1])
        fm, body = _front(path.read_text(encoding="utf-8"))
        fm["chapter"] = number
        if number in closes:
            fm["threads"] = {"closes": closes[number]}
        if number in data.WEAK_HOOKS:
            fm["hook_type"] = "悬念-弱"
        tags = _tags(data.CHANGES.get(number, []))
        body = body.rstrip("\n") + ("\n\n" + tags if tags else "") + "\n"
        path.write_text(f"---\n{_yaml(fm)}---\n{body}", encoding="utf-8")
    return folder


def books_setup(workdir: Path, data) -> dict:
    from django.test import override_settings

    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    books = {}
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        for label, more in (("cast", False), ("more-cast", True)):
            root = book_write(workdir / label, data, slug=f"blind-{label}", more_cast=more)
            report = book_rebuild(root=root)
            if not report["ok"]:
                raise RuntimeError(f"{label}: rebuild failed: {report['errors'][:3]}")
            books[label] = Book.objects.get(root=str(root.resolve()))
    return books


# ── drafts ─────────────────────────────────────────────────────────────────────────────────────


def _chapter_file(book, number: int) -> str:
    from core.models import Chapter

    row = Chapter.objects.get(book=book, number=number)
    return (Path(book.root) / row.source_path).read_text(encoding="utf-8")


def planted_draft(text: str, lines: list[tuple[str, object]], fronts: list[dict]) -> tuple[str, list[int], int]:
    """The chapter with ``lines`` inserted as paragraphs spread over its body (never inside the tags at
    its end) and its front matter edited: (text, the line of each inserted line, the body's first line)."""
    fm, body = _front(text)
    for edit in fronts:
        for key, value in edit.items():
            if key in ("advances", "closes"):
                threads = dict(fm.get("threads") or {})
                if value is None:
                    threads.pop(key, None)
                else:
                    threads[key] = [*(threads.get(key) or []), *value]
                fm["threads"] = threads
            elif key != "line":
                fm[key] = value
    head = f"---\n{_yaml(fm)}---\n"
    paragraphs = body.split("\n")
    prose = [i for i, row in enumerate(paragraphs) if row.strip() and not row.lstrip().startswith("<")]
    tag_at = next((i for i, row in enumerate(paragraphs) if row.lstrip().startswith("<entity")), len(paragraphs))
    prose = [i for i in prose if i < tag_at] or [0]
    slots = sorted({prose[min(len(prose) - 1, (k + 1) * len(prose) // (len(lines) + 1))] for k in range(len(lines))})
    while len(slots) < len(lines):
        slots.append(slots[-1])
    inserted: dict[int, list[str]] = defaultdict(list)
    for slot, (line, _) in zip(slots, lines, strict=True):
        inserted[slot].append(line)
    out, at = [], {}
    body_line = head.count("\n") + 1
    order = iter(range(len(lines)))
    for i, row in enumerate(paragraphs):
        out.append(row)
        for line in inserted.get(i, []):
            out.append(line)
            at[next(order)] = body_line + len(out) - 1
    return head + "\n".join(out), [at[k] for k in range(len(lines))], body_line


def planted_score(book, data) -> dict:
    from continuity.selectors import draft_check

    by_chapter: dict[int, dict] = defaultdict(lambda: {"lines": [], "fronts": []})
    for kind, chapter, what in data.PLANTS:
        if isinstance(what, str):
            by_chapter[chapter]["lines"].append((what, ("plant", kind)))
        else:
            if "line" in what:
                by_chapter[chapter]["lines"].append((what["line"], ("plant", kind)))
            by_chapter[chapter]["fronts"].append(what)
            if kind in FRONT_KINDS:
                by_chapter[chapter].setdefault("front_plants", []).append((kind, what))
    for chapter, line in data.CONTROLS:
        by_chapter[chapter]["lines"].append((line, ("control", None)))
    recall: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed, noisy, loud_controls, found_by, loud_right = [], [], [], Counter(), Counter()
    right = total = 0
    for chapter, plan in sorted(by_chapter.items()):
        text, at, body_line = planted_draft(_chapter_file(book, chapter), plan["lines"], plan["fronts"])
        findings = draft_check(book=book, text=text, chapter=chapter)["findings"]
        loud = [f for f in findings if f["severity"] in ("error", "warning") and not f["waived"]]
        claimed = set()
        for (line, (role, kind)), where in zip(plan["lines"], at, strict=True):
            hits = [i for i, f in enumerate(findings) if f["line"] == where]
            if role == "control":
                if any(findings[i] in loud for i in hits):
                    loud_controls.append(f"第{chapter}章:{line}")
                continue
            recall[kind][1] += 1
            mine = [i for i in hits if findings[i]["kind"] == kind]
            if mine:
                recall[kind][0] += 1
                claimed.update(mine)
                found_by[findings[mine[0]]["severity"]] += 1
                loud_right[kind] += sum(1 for i in mine if findings[i] in loud)
            else:
                missed.append(f"{kind} 第{chapter}章:{line}")
        for kind, edit in plan.get("front_plants", []):
            recall[kind][1] += 1
            ids = [tid for key in ("advances", "closes") for tid in (edit.get(key) or [])]
            mine = [
                i
                for i, f in enumerate(findings)
                if f["kind"] == kind and (not ids or f["term"] in ids) and f["line"] < body_line
            ]
            if mine:
                recall[kind][0] += 1
                claimed.update(mine)
            else:
                missed.append(f"{kind} 第{chapter}章:{edit}")
        for i, f in enumerate(findings):
            if f in loud:
                total += 1
                if i in claimed:
                    right += 1
                else:
                    noisy.append(f"第{chapter}章 {f['kind']}:{f['severity']} {f['term']} «{f['quote']}»")
    return {
        "recall": dict(recall),
        "missed": missed,
        "precision": (right / total) if total else 1.0,
        "right": right,
        "loud": total,
        "noisy": noisy,
        "loud_controls": loud_controls,
        "controls": len(data.CONTROLS),
        "loud_right": dict(loud_right),
    }


def clean_figures(book) -> dict:
    from continuity.selectors import draft_check
    from core.models import Chapter

    counts, chars, kinds = Counter(), 0, Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    for row in Chapter.objects.filter(book=book).order_by("number"):
        text = (Path(book.root) / row.source_path).read_text(encoding="utf-8")
        chars += len(text)
        for f in draft_check(book=book, text=text, chapter=row.number)["findings"]:
            counts[f["severity"]] += 1
            key = f"{f['kind']}:{f['severity']}"
            kinds[key] += 1
            if len(examples[key]) < 3:
                examples[key].append(f"第{row.number}章 {f['term']} «{f['quote']}»")
    per10k = {s: counts[s] * 10_000 / chars if chars else 0.0 for s in ("error", "warning", "info")}
    return {"chars": chars, "counts": dict(counts), "per10k": per10k, "kinds": kinds, "examples": examples}


def main() -> int:
    bench = Bench("check-blind", description=__doc__)
    bench.parser.add_argument("--set", default="shuihu", help="the set (a module of bench/check_sets; default shuihu)")
    args = bench.args
    data = importlib.import_module(f"bench.check_sets.{args.set}")
    if not (CORPUS / data.SOURCE).exists():
        bench.note(f"{CORPUS / data.SOURCE} is absent: nothing measured")
        return bench.finish()
    django_setup(f"sqlite:///{bench.workdir() / 'bench.sqlite3'}", migrate=True)
    bench.log(f"rebuild {args.set} (cast, more cast)")
    books = books_setup(bench.workdir(), data)
    rows = []
    for label, book in books.items():
        bench.log(f"clean: {label}")
        fig = clean_figures(book)
        ok = fig["per10k"]["warning"] <= GOAL_WARNINGS_PER_10K and fig["per10k"]["info"] <= GOAL_INFOS_PER_10K
        rows.append(
            {
                "book": f"{args.set} {label}",
                "chars": fig["chars"],
                "errors": fig["counts"].get("error", 0),
                "warnings": fig["counts"].get("warning", 0),
                "infos": fig["counts"].get("info", 0),
                "warnings_per_10k": round(fig["per10k"]["warning"], 3),
                "infos_per_10k": round(fig["per10k"]["info"], 3),
                "goal": "ok" if ok else "MISSED",
            }
        )
        bench.note(f"{label} clean by kind: " + ", ".join(f"{k} {v}" for k, v in fig["kinds"].most_common()))
        for key, lines in fig["examples"].items():
            bench.note(f"{label} clean {key} e.g. " + "；".join(lines))
    bench.table("clean book (each chapter against its own N−1)", rows)
    bench.log("planted")
    score = planted_score(books["cast"], data)
    prows, planted, found = [], 0, 0
    for kind, (hit, n) in sorted(score["recall"].items()):
        planted, found = planted + n, found + hit
        prows.append(
            {
                "kind": kind,
                "planted": n,
                "found": hit,
                "recall": hit / n,
                "goal": "ok" if hit / n >= GOAL_RECALL_KIND else "MISSED",
            }
        )
    prows.append(
        {
            "kind": "ALL",
            "planted": planted,
            "found": found,
            "recall": found / planted if planted else 1.0,
            "goal": "ok" if planted and found / planted >= GOAL_RECALL else "MISSED",
        }
    )
    bench.table("planted: recall per kind", prows)
    bench.table(
        "planted: precision of errors + warnings, controls",
        [
            {
                "loud": score["loud"],
                "right": score["right"],
                "precision": round(score["precision"], 3),
                "controls": score["controls"],
                "loud_controls": len(score["loud_controls"]),
                "goal": "ok" if score["precision"] >= GOAL_PRECISION and not score["loud_controls"] else "MISSED",
            }
        ],
    )
    bench.extra["loud_right_by_kind"] = score["loud_right"]
    for line in score["missed"]:
        bench.note("missed: " + line)
    for line in score["noisy"]:
        bench.note("not a plant: " + line)
    for line in score["loud_controls"]:
        bench.note("control not silent: " + line)
    if not args.keep:
        shutil.rmtree(bench.workdir() / "cast", ignore_errors=True)
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
