"""Discovery on hostile text (issue 25, D1): one huge chapter on one line, CPU seconds and peak RSS.

    python bench/bench_discover_hostile.py [--chars 1000000 10000000] [--base TREE] [--random] [--split N]

Each run is a child process of its own (peak RSS is a process's high-water mark): it loads jieba,
builds one chapter of ``--chars`` characters on a single line — 西游记's text with its line breaks
removed, repeated (``--random``: random CJK characters instead) — and calls ``discover`` on it
(characters only, the command line's bounds); ``--split N`` cuts it into chapters of N characters
instead (a long book of ordinary chapters: what the total cap costs). It prints the CPU seconds of the discovery alone (user
+ system, the segmenter's dictionary already loaded), the process's peak RSS, the ``bounds`` the
report would carry and how many proposals came out. ``--base TREE`` runs another checkout's engine
(e.g. ``/work/main``) on the same text first, in the same run: the before / after figures on one
machine load. The machine is shared: read the CPU seconds, not the wall time.

Goal (issue 25 D1 / issue 26): bounded time and memory — peak RSS ≤ 500 MB whatever the chapter.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def hostile_text(chars: int, rand: bool) -> str:
    if rand:
        rng = random.Random(25)
        return "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(chars))
    base = "".join((SHARED / "corpus" / "xiyouji.txt").read_text(encoding="utf-8").split())
    return (base * (chars // len(base) + 1))[:chars]


def child(tree: Path, chars: int, rand: bool, split: int = 0) -> None:
    sys.path.insert(0, str(tree))
    import jieba  # noqa: PLC0415 — the child's own imports, from the tree under test

    from entities.discovery import engine  # noqa: PLC0415

    jieba.setLogLevel(60)
    engine.jieba_tags()
    from pypinyin import lazy_pinyin  # noqa: PLC0415

    lazy_pinyin("中")
    text = hostile_text(chars, rand)
    bounds: dict = {}
    c0 = _cpu()
    chapters = [(i + 1, text[k : k + split]) for i, k in enumerate(range(0, chars, split))] if split else [(1, text)]
    out = engine.discover(chapters, types=["角色"], bounds=bounds)
    cpu = _cpu() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps({"cpu_seconds": round(cpu, 1), "peak_rss_mb": round(rss), "bounds": bounds, "proposals": len(out)})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--base", type=Path, default=None, help="also run this checkout's engine first (before)")
    parser.add_argument("--random", action="store_true", help="random CJK characters instead of real text")
    parser.add_argument("--split", type=int, default=0, help="chapters of this many characters (a long book)")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.chars[0], args.random, args.split)
        return
    trees = ([("before", args.base)] if args.base else []) + [("now", REPO)]
    for chars in args.chars:
        for label, tree in trees:
            cmd = [sys.executable, __file__, "--child", str(tree), "--chars", str(chars)]
            cmd += ["--random"] if args.random else []
            done = subprocess.run(cmd + ["--split", str(args.split)], capture_output=True, text=True)
            line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
            shape = f"每章 {args.split:,} 字" if args.split else "一行"
            print(f"{chars:>10,} 字{shape} {label:>6} ({tree}): {line}", flush=True)


if __name__ == "__main__":
    main()
