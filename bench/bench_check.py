"""The continuity check (机检) on a planted-error corpus made from real chapters.

    python bench/bench_check.py [--json] [--quick] [--keep] [--per-kind 8] [--seed 1]

Books (each rebuilt from a private copy into one fresh SQLite database):

- ``demo``: the demo book (examples/demo-book), which declares everything (statuses, a realm ladder,
  possessions, aliases with windows, secrets, style rules, threads);
- ``xiyouji``: 西游记 (``$WEBNOVEL_SHARED/corpus/xiyouji.txt``) imported with ``import_txt``, its 15
  reference characters written as character cards from ``xiyouji_aliases.json`` (ambiguous aliases as
  generic ones) — nothing else declared: the clean figures;
- ``xiyouji-facts``: the same, plus a few facts the bench declares, picked by rank from the alias list
  (not by name): one character dead, one holding an invented item, an alias with a window that has not
  opened, a realm ladder and realms for two characters, a secret with an invented keyword, a banned word.

Clean: every finalized chapter of ``demo`` and ``xiyouji`` checked as a draft against its own N−1
(``draft_check``): errors / warnings / infos per 10,000 characters. Goals: no error and no warning on
the demo (its waived plants aside), ≤ 1 warning per 10,000 characters on 西游记.

Planted: for each kind, ``per-kind`` real chapters where the contradiction is possible (the fact holds
at N−1) get one line inserted at a random body line (or one front-matter id), built from the canon of
N−1 by a general rule (a dead character speaks, a held realm is called lower, …). A plant is recalled
when a finding of its kind is at its line. Precision per kind: of the findings of that kind the plant
added (the planted draft's findings minus the same chapter's unplanted findings, by kind, term and
quote), the share at the plant's line. Goals: recall ≥ 0.9 and precision ≥ 0.9 for every kind.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, Bench, django_setup  # noqa: E402

SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
DEMO = REPO / "examples" / "demo-book"
GOAL_RECALL = GOAL_PRECISION = 0.9
GOAL_XIYOUJI_WARNINGS_PER_10K = 1.0
INVENTED_ITEM = "金纹玉印"
INVENTED_KEYWORD = "灵台暗契"
BANNED = "瞬间"
LADDER = {"realms": [{"name": "炼气", "levels": ["一层", "二层", "三层"]}, "筑基", "金丹", "元婴"]}


# ── books ──────────────────────────────────────────────────────────────────────────────────────


def _card(name: str, aliases: list[dict], state: dict | None = None) -> str:
    import yaml

    plain = [a["alias"] for a in aliases if a["alias"] != name and not a.get("ambiguous")]
    generic = [a["alias"] for a in aliases if a["alias"] != name and a.get("ambiguous")]
    head = {"name": name, "aliases": plain, "generic_aliases": generic, "tier": "重要", **(state or {})}
    return "---\n" + yaml.safe_dump(head, allow_unicode=True, sort_keys=False) + "---\n"


def xiyouji_write(folder: Path, *, slug: str, facts: bool) -> Path:
    """西游记 imported into ``folder`` with its reference characters as cards (and the bench's facts)."""
    import yaml
    from django.core.management import call_command

    call_command("import_txt", str(CORPUS / "xiyouji.txt"), str(folder), "--slug", slug, stdout=io.StringIO())
    characters = json.loads((CORPUS / "xiyouji_aliases.json").read_text(encoding="utf-8"))["characters"]
    ranked = sorted(characters, key=lambda c: -sum(a.get("count", 0) for a in c["aliases"]))
    cards = folder / "设定" / "角色"
    cards.mkdir(parents=True, exist_ok=True)
    for rank, character in enumerate(ranked):
        state: dict = {}
        aliases = list(character["aliases"])
        if facts:
            # by rank, never by name: the top two get realms, the second holds an invented item, the
            # tenth is dead, the third's last plain alias only opens after the book
            if rank == 0:
                state["realm"] = "金丹"
            if rank == 1:
                state["realm"] = "炼气二层"
                state["possessions"] = [INVENTED_ITEM]
            if rank == 9:
                state["status"] = "死亡"
        card = _card(character["name"], aliases, state)
        if facts and rank == 2:
            head = yaml.safe_load(card.split("---")[1])
            if head["aliases"]:
                head["aliases"][-1] = {"alias": head["aliases"][-1], "from": 100_000, "note": "bench: 尚未启用"}
            card = "---\n" + yaml.safe_dump(head, allow_unicode=True, sort_keys=False) + "---\n"
        (cards / f"{character['name']}.md").write_text(card, encoding="utf-8")
    if facts:
        config = yaml.safe_load((folder / "book.yaml").read_text(encoding="utf-8")) or {}
        config["continuity"] = LADDER
        (folder / "book.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
        (folder / "文风").mkdir(exist_ok=True)
        (folder / "文风" / "规则.md").write_text(f"---\nbanned_words: [{BANNED}]\n---\n禁用词。\n", encoding="utf-8")
        (folder / "信息差").mkdir(exist_ok=True)
        (folder / "信息差" / "信息差-001.md").write_text(
            "---\nid: 信息差-001\ntitle: bench 的信息差\nknown_to: []\nreader_knows: false\nreader_told: null\n"
            f"registered: 1\nkeywords: [{INVENTED_KEYWORD}]\n---\n读者尚不知情。\n",
            encoding="utf-8",
        )
    return folder


def books_setup(workdir: Path, *, with_xiyouji: bool) -> dict[str, object]:
    from django.test import override_settings

    from bookfiles.rebuilder import book_rebuild
    from core.models import Book

    roots = {"demo": shutil.copytree(DEMO, workdir / "demo-book")}
    if with_xiyouji:
        roots["xiyouji"] = xiyouji_write(workdir / "xiyouji", slug="xiyouji", facts=False)
        roots["xiyouji-facts"] = xiyouji_write(workdir / "xiyouji-facts", slug="xiyouji-facts", facts=True)
    books = {}
    with override_settings(
        WEBNOVEL_CHAPTER_INDEXERS=["entities.mentions.mentions_index"], WEBNOVEL_AFTER_CHAPTER_HOOKS=[]
    ):
        for label, root in roots.items():
            report = book_rebuild(root=Path(root))
            if not report["ok"]:
                raise RuntimeError(f"{label}: rebuild failed: {report['errors'][:3]}")
            books[label] = Book.objects.get(root=str(Path(root).resolve()))
    return books


# ── plants ─────────────────────────────────────────────────────────────────────────────────────


@dataclass
class Plant:
    kind: str
    chapter: int
    text: str  # the planted draft
    baseline: str  # the same chapter unplanted (formatted alike)
    line: int


def _lines_insert(text: str, line: str, rng: random.Random) -> tuple[str, int]:
    """``text`` with ``line`` inserted after a random body line (never inside the front matter)."""
    from continuity.draft import draft_parse

    lines = text.split("\n")
    draft = draft_parse(text)

    def prose(i: int) -> bool:  # a body line outside any entity tag (the parser blanks tags)
        return i > len(lines) or (i >= draft.body_line and draft.line_text(i) == lines[i - 1])

    # after a non-empty prose line, before a prose line: never inside a tag block
    candidates = [
        i for i in range(draft.body_line, len(lines) + 1) if lines[i - 1].strip() and prose(i) and prose(i + 1)
    ]
    after = rng.choice(candidates) if candidates else len(lines)
    lines.insert(after, line)
    return "\n".join(lines), after + 1


def _front_matter_edit(text: str, advances: list[str]) -> tuple[str, str, int]:
    """(planted, baseline, line): the same front matter re-dumped, the planted one advancing ``advances`` too."""
    import yaml

    from bookfiles.parser.markup import front_matter_split

    fm, _, body, _ = front_matter_split(text)

    def dump(head: dict) -> str:
        return "---\n" + yaml.safe_dump(head, allow_unicode=True, sort_keys=False) + "---\n" + body

    planted = json.loads(json.dumps(fm, ensure_ascii=False, default=str))
    threads = dict(planted.get("threads") or {})
    threads["advances"] = [*(threads.get("advances") or []), *advances]
    planted["threads"] = threads
    out = dump(planted)
    line = next(i for i, row in enumerate(out.split("\n"), start=1) if advances[-1] in row)
    return out, dump(json.loads(json.dumps(fm, ensure_ascii=False, default=str))), line


def _ladder(rules) -> list[str]:
    return [r.name + level for r in rules.realms for level in (r.levels or ("",))]


def _homophone(name: str, canon, pool: str) -> str | None:
    """``name`` with its last character replaced by another of the same toneless pinyin (from ``pool``),
    when that is not a known name."""
    from pypinyin import lazy_pinyin

    target = lazy_pinyin(name[-1])[0]
    known = canon.known_names()
    for char in dict.fromkeys(pool):
        if char != name[-1] and "\u4e00" <= char <= "\u9fff" and lazy_pinyin(char)[0] == target:
            variant = name[:-1] + char
            if variant not in known:
                return variant
    return None


def _unique(canon, name: str, chapter: int) -> bool:
    entity = canon.entity_of(name, number=chapter)
    return entity is not None and name == entity.name


def plant_line(kind: str, canon, chapter: int, rng: random.Random, pool: str) -> str | None:
    """One line contradicting the canon as of ``chapter − 1`` for ``kind`` (None: not possible here)."""
    from continuity.canon import CHARACTER
    from continuity.checks import _is_name, _secret_known
    from continuity.rules import realm_parse

    rules = canon.rules
    characters = [e for e in canon.entities.values() if e.type == CHARACTER and _unique(canon, e.name, chapter)]
    rng.shuffle(characters)
    if kind == "inactive_acts":
        dead = [e for e in characters if e.pk in canon.inactive_pks]
        return f"{dead[0].name}冷笑道：“你们谁也走不了。”" if dead else None
    if kind in ("realm_lower", "realm_jump"):
        ladder = _ladder(rules)
        for entity in characters:
            rank = realm_parse(rules, canon.states.get(entity.pk, {}).get(rules.realm_field))
            if rank is None:
                continue
            low, high = rank.position(rules, low=True), rank.position(rules, low=False)
            if kind == "realm_lower" and low > 0:
                return f"{entity.name}不过是{ladder[0]}的修为。"
            if kind == "realm_jump" and high + 3 < len(ladder):
                return f"{entity.name}已是{ladder[high + 3]}。"
        return None
    if kind == "item_not_held":
        for entity in characters:
            for (pk, item), _ in canon.lost.items():
                if pk == entity.pk and item not in canon.held(entity.pk):
                    return f"{entity.name}拔出{item}。"
        for item, holders in canon.held_by.items():
            others = [e for e in characters if e.pk not in holders]
            if holders and others:
                return f"{others[0].name}拔出{item}。"
        return None
    if kind == "alias_window":
        for alias, rows in canon.aliases.items():
            for pk, vf, vt, _, _, generic in rows:
                outside = (vf is not None and chapter < vf) or (vt is not None and chapter > vt)
                if outside and not generic and pk in canon.entities and not canon.matcher.candidates(alias, chapter):
                    return f"{alias}点了点头。"
        return None
    if kind == "name_typo":
        for entity in characters:
            if 2 <= len(entity.name) <= 3:
                variant = _homophone(entity.name, canon, pool)
                if variant:
                    return f"{variant}走了进来。"
        return None
    if kind == "secret_early":
        for secret in canon.secrets:
            if not _secret_known(secret, chapter):
                for keyword in canon.keywords_of(secret):
                    if not _is_name(canon, keyword, chapter):
                        return f"众人低声议论着{keyword}的事。"
        return None
    if kind == "banned_word":
        return f"他{next(iter(rules.banned_words))}明白了。" if rules.banned_words else None
    if kind == "quote_style":
        if rules.quotes and rules.quotes != "「」":
            return "「走吧。」他说。"
        return None
    return None


LINE_KINDS = (
    "inactive_acts",
    "realm_lower",
    "realm_jump",
    "item_not_held",
    "alias_window",
    "name_typo",
    "secret_early",
    "banned_word",
    "quote_style",
)
FRONT_KINDS = ("thread_unknown", "thread_closed")


def _chapter_text(book, row) -> str:
    """A finalized chapter's file as the author wrote it (the stored body when the file is gone)."""
    path = Path(book.root) / row.source_path if book.root and row.source_path else None
    return path.read_text(encoding="utf-8") if path is not None and path.is_file() else row.body


def plants_make(book, *, per_kind: int, seed: int) -> list[Plant]:
    from continuity.canon import Canon
    from core.models import Chapter

    rng = random.Random(seed)
    rows = list(Chapter.objects.filter(book=book).order_by("number"))
    canon = Canon(book=book)
    plan: dict[str, list[tuple[int, str]]] = defaultdict(list)  # kind → (chapter, line) possible
    for row in rows:
        canon.advance(to=row.number - 1)
        text = _chapter_text(book, row)
        for kind in LINE_KINDS:
            line = plant_line(kind, canon, row.number, random.Random(rng.random()), text)
            if line:
                plan[kind].append((row.number, line))
        plan["thread_unknown"].append((row.number, "线索-不存在-999"))
        done = [tid for tid, at in canon.first_close.items() if at < row.number and tid in canon.threads]
        if done:
            plan["thread_closed"].append((row.number, done[0]))
    texts = {row.number: _chapter_text(book, row) for row in rows}
    plants = []
    for kind in (*LINE_KINDS, *FRONT_KINDS):
        options = plan.get(kind, [])
        for number, line in sorted(rng.sample(options, min(per_kind, len(options)))):
            text = texts[number]
            if kind in FRONT_KINDS:
                planted, baseline, at = _front_matter_edit(text, [line])
            else:
                planted, at = _lines_insert(text, line, rng)
                baseline = text
            plants.append(Plant(kind=kind, chapter=number, text=planted, baseline=baseline, line=at))
    return plants


def _key(finding: dict) -> tuple:
    return (finding["kind"], finding["term"], finding["quote"])


def plants_score(book, plants: list[Plant]) -> dict[str, dict]:
    from continuity.selectors import draft_check

    scores: dict[str, dict] = {}
    baselines: dict[tuple[int, str], Counter] = {}
    for plant in plants:
        score = scores.setdefault(plant.kind, {"planted": 0, "found": 0, "added": 0, "right": 0})
        key = (plant.chapter, plant.baseline)
        if key not in baselines:
            found = draft_check(book=book, text=plant.baseline, chapter=plant.chapter)["findings"]
            baselines[key] = Counter(_key(f) for f in found)
        base = Counter(baselines[key])
        result = draft_check(book=book, text=plant.text, chapter=plant.chapter)["findings"]
        added = []
        for finding in result:
            if finding["kind"] != plant.kind:
                continue
            if base[_key(finding)] > 0:
                base[_key(finding)] -= 1
                continue
            added.append(finding)
        hit = any(f["line"] == plant.line for f in added)
        if not hit:
            score.setdefault("missed", []).append(f"第{plant.chapter}章:{plant.text.split(chr(10))[plant.line - 1]}")
        score["planted"] += 1
        score["found"] += int(hit)
        score["added"] += len(added)
        score["right"] += sum(1 for f in added if f["line"] == plant.line)
    return scores


def clean_figures(book) -> dict:
    from continuity.selectors import draft_check
    from core.models import Chapter

    counts, chars, kinds = Counter(), 0, Counter()
    for row in Chapter.objects.filter(book=book).order_by("number"):
        text = _chapter_text(book, row)
        chars += len(text)
        result = draft_check(book=book, text=text, chapter=row.number)
        for finding in result["findings"]:
            severity = "waived" if finding["waived"] else finding["severity"]
            counts[severity] += 1
            if not finding["waived"]:
                kinds[f"{finding['kind']}:{finding['severity']}"] += 1
    per10k = {s: counts[s] * 10_000 / chars if chars else 0.0 for s in ("error", "warning", "info")}
    return {"chapters": book.chapters.count(), "chars": chars, "counts": dict(counts), "per10k": per10k, "kinds": kinds}


def main() -> int:
    bench = Bench("check", description=__doc__)
    bench.parser.add_argument("--per-kind", type=int, default=8, help="plants per kind and book (default 8)")
    bench.parser.add_argument("--seed", type=int, default=1, help="random seed of the plants (default 1)")
    args = bench.args
    with_xiyouji = (CORPUS / "xiyouji.txt").exists() and not args.quick
    django_setup(f"sqlite:///{bench.workdir() / 'bench.sqlite3'}", migrate=True)
    bench.log("rebuild the books" + (" (demo, 西游记 ×2)" if with_xiyouji else " (demo)"))
    books = books_setup(bench.workdir(), with_xiyouji=with_xiyouji)
    clean_rows = []
    for label in ("demo", "xiyouji"):
        if label not in books:
            continue
        bench.log(f"clean: {label}")
        figures = clean_figures(books[label])
        goal = (
            "no error, no warning: "
            + ("ok" if figures["counts"].get("error", 0) + figures["counts"].get("warning", 0) == 0 else "MISSED")
            if label == "demo"
            else f"≤ {GOAL_XIYOUJI_WARNINGS_PER_10K:g} warning / 10k chars: "
            + ("ok" if figures["per10k"]["warning"] <= GOAL_XIYOUJI_WARNINGS_PER_10K else "MISSED")
        )
        clean_rows.append(
            {
                "book": label,
                "chapters": figures["chapters"],
                "chars": figures["chars"],
                "errors": figures["counts"].get("error", 0),
                "warnings": figures["counts"].get("warning", 0),
                "infos": figures["counts"].get("info", 0),
                "waived": figures["counts"].get("waived", 0),
                "warnings_per_10k": figures["per10k"]["warning"],
                "goal": goal,
            }
        )
        if figures["kinds"]:
            bench.note(
                f"{label} clean findings by kind: " + ", ".join(f"{k} {v}" for k, v in figures["kinds"].most_common())
            )
    bench.table("机检 on unmodified real chapters (each against its own N−1)", clean_rows)
    planted_rows = []
    for label in ("demo", "xiyouji-facts"):
        if label not in books:
            continue
        bench.log(f"planted: {label}")
        plants = plants_make(books[label], per_kind=args.per_kind, seed=args.seed)
        scores = plants_score(books[label], plants)
        for kind in (*LINE_KINDS, *FRONT_KINDS):
            score = scores.get(kind)
            if score is None:
                planted_rows.append({"book": label, "kind": kind, "planted": 0, "goal": "not possible in this book"})
                continue
            recall = score["found"] / score["planted"]
            precision = score["right"] / score["added"] if score["added"] else 1.0
            planted_rows.append(
                {
                    "book": label,
                    "kind": kind,
                    "planted": score["planted"],
                    "found": score["found"],
                    "recall": recall,
                    "added": score["added"],
                    "precision": precision,
                    "goal": "ok" if recall >= GOAL_RECALL and precision >= GOAL_PRECISION else "MISSED",
                    "missed": score.get("missed", []),
                }
            )
    bench.table("planted contradictions: recall and precision per kind", planted_rows)
    for row in planted_rows:
        if row.get("missed"):
            bench.note(f"{row['book']} {row['kind']} missed: " + "；".join(row["missed"]))
    bench.note("pov_knowledge is not planted (it needs a perspective character and a reader-known secret per chapter)")
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
