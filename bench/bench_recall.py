"""Semantic recall (issue 32): recall@5 of keyword, semantic and hybrid search on the recall set, and
what the vectors cost — all in one run.

    python bench/bench_recall.py [--json] [--skip-scale] [--schemes window-head,head64] [--fusions window,chapter]

Two embedding schemes in the same run (``recall.windows``): ``window-head`` (session 6's, the default: every
400-character window embedded alone, its first 128 characters) and ``head32`` (every window alone, its head
cut at 32 of the model's tokens: a third of the cost; measured and not taken). Session 10 added ``head64`` and
``head96`` (each window's first 64 / 96 characters), measured for the whole-book cost and not taken.

- **Recall set** (``bench/recall-set/scenes.json``, written before the code): scenes of 西游记 (dev) and
  水浒传 (blind: measured once in session 6; blind2: 13 more scenes written before the embedding changed,
  measured once; blind3 (session 8), blind5 (session 10) and blind6 (session 11): fresh sets of both books
  on chapters no earlier set retells, each committed before its session changed the engine) retold in plain modern
  Chinese without the books' key words. Each book's chapters
  (as ``import_txt`` splits them) are written as chapter rows; each retold scene is searched through the
  ``search`` read (``core.search.search_read``) in each mode, limit 5; a scene is found when one of its
  chapters is among the five chapters answered. ``bm25`` (BM25 over the same windows, alone) is shown
  for reference.
- **Embedding**: the windows of both books embedded through ``manage.py embed``'s function
  (``recall.pipeline.vectors_ensure``); what was already in the vector cache (keyed by text hash) is
  not embedded again, so the seconds shown are for what was missing in this run, with the throughput.
- **Scale** (a generated 3,000-chapter book, bench/gen_book.py), one subprocess per scheme (its own
  peak RSS): one new chapter's embedding (what a finalize adds, CPU seconds of this process and wall),
  the model's tokens of every text the scheme embeds (counted with the engine's tokenizer), the
  throughput in tokens per CPU second measured on a sample, and the whole book's embedding estimated from
  the two (CPU time of one core: the engine's cost is linear in tokens; the whole book is not embedded in
  this run); a warm hybrid search over the 3,000 chapters — the vectors of the texts not embedded are
  placeholder unit vectors in a throwaway store (a dot product costs the same whatever the values), the
  query's vector cached after the first call (``query_embed_ms`` apart); the first search after one chapter
  in the middle changed and after a chapter was appended (the index updated in place, not rebuilt).

Hybrid's fusion (``--fusions``, ``recall.search.FUSION``): ``window`` (reciprocal ranks of windows, k = 60, before
session 10) and ``chapter`` (the default since: chapters ranked per signal by their best window, weighted) —
each measured on every set in the same run. The scale run also embeds 96 texts with two worker processes
(``recall.vectors._pool_add``) against 48 in this process, for the whole-book pass's wall clock.

Goals: hybrid recall@5 ≥ 0.75 and ≥ 25 points above keyword; finalize adds ≤ 2 s; a whole 3,000-chapter
book ≤ 15 min; peak RSS ≤ 600 MB; hybrid search ≤ 50 ms warm at 3,000 chapters.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.common import django_setup, peak_rss_mb, synthetic_book  # noqa: E402

SHARED = Path(os.environ.get("WEBNOVEL_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
SCENES = REPO / "bench" / "recall-set" / "scenes.json"
MODES = ("keyword", "bm25", "semantic", "hybrid")
SPLITS = ("dev", "blind", "blind2", "blind3", "blind5", "blind6")
SCHEMES = {
    "window-head": "SCHEME_WINDOW_HEAD",
    "head32": "SCHEME_HEAD32",
    "head64": "SCHEME_HEAD64",
    "head96": "SCHEME_HEAD96",
    "pairs": "SCHEME_PAIRS",
    "triples": "SCHEME_TRIPLES",
    "passages": "SCHEME_PASSAGES",
    "salient": "SCHEME_SALIENT",
}


def scheme_set(name: str) -> None:
    """Make ``name`` the embedding scheme of this process, with the search's caches emptied."""
    from recall import search as recall_search_module
    from recall import windows

    windows.SCHEME = getattr(windows, SCHEMES[name])
    recall_search_module._indexes.clear()
    recall_search_module._vocabs.clear()


def book_load(slug: str, chapters: list[tuple[int, str]]):
    from core.models import Book, Chapter

    book = Book.objects.create(slug=slug, title=slug, root=f"/tmp/{slug}")
    Chapter.objects.bulk_create(
        [
            Chapter(
                book=book,
                number=n,
                title=f"第{n}章",
                body=body,
                content_hash=hashlib.sha1(body.encode("utf-8")).hexdigest(),
            )
            for n, body in chapters
        ],
        batch_size=500,
    )
    return book


def corpus_chapters(name: str) -> list[tuple[int, str]]:
    from bookfiles.importers.txt import txt_decode, txt_parse

    text, _ = txt_decode((CORPUS / f"{name}.txt").read_bytes())
    return [(c.number, c.body) for c in txt_parse(text).chapters]


def found_chapters(*, book, query: str, mode: str) -> list[int]:
    from core.search import search_read
    from recall.search import recall_search

    if mode == "bm25":
        return [h["chapter"] for h in recall_search(book=book, query=query, mode="bm25", limit=5)]
    answer = search_read(book=book, q=query[:200], mode=mode, limit=5)
    assert answer["mode"] == mode, answer["note"]
    chapters: list[int] = []
    for hit in answer["hits"]:
        if hit["chapter"] not in chapters:
            chapters.append(hit["chapter"])
    return chapters[:5]


def recall_run(books: dict, splits: list[str] | None = None) -> dict:
    scenes = json.loads(SCENES.read_text(encoding="utf-8"))["scenes"]
    if splits:
        scenes = [s for s in scenes if s["split"] in splits]
    per_split: dict[str, dict[str, list[int]]] = {}
    misses: dict[str, list[str]] = {m: [] for m in MODES}
    for scene in scenes:
        book = books[scene["book"]]
        gold = set(scene["chapters"])
        split = per_split.setdefault(scene["split"], {m: [] for m in MODES})
        for mode in MODES:
            hit = bool(gold & set(found_chapters(book=book, query=scene["query"], mode=mode)))
            split[mode].append(int(hit))
            if not hit:
                misses[mode].append(scene["query"][:16])
    out = {}
    for split, modes in per_split.items():
        out[split] = {
            m: {"found": sum(v), "of": len(v), "recall@5": round(sum(v) / len(v), 3)} for m, v in modes.items()
        }
    every = {m: [x for modes in per_split.values() for x in modes[m]] for m in MODES}
    out["all"] = {m: {"found": sum(v), "of": len(v), "recall@5": round(sum(v) / len(v), 3)} for m, v in every.items()}
    out["hybrid_misses"] = misses["hybrid"]
    return out


def _cpu() -> float:
    return time.process_time()


def _cpu_with_children() -> float:
    """CPU seconds of this process and of its children that ended (the embedding workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def scale_run(scheme: str) -> dict:
    """One finalize's embedding, the tokens of the whole book, the throughput, a warm hybrid search at
    3,000 chapters and the first searches after a change, under ``scheme`` (run in its own process)."""
    import numpy as np
    from django.test import override_settings

    from bench.bench_discover import _front_matter
    from core.models import Chapter
    from core.search import search_read
    from recall import search as recall_search_module
    from recall import vectors, windows
    from recall.pipeline import vectors_ensure
    from recall.search import book_windows

    scheme_set(scheme)
    tokens_max = windows.SCHEME.embed_tokens
    root = synthetic_book(3000)
    files = sorted((root / "定稿" / "正文").rglob("*.md"), key=lambda f: (f.parent.name, f.name))
    chapters = [(i, _front_matter(f.read_text(encoding="utf-8"))[1]) for i, f in enumerate(files, start=1)]
    book = book_load(f"scale3000-{scheme}", chapters)
    windows_all = book_windows(book=book)
    texts = {w.key: w.embed_text for w in windows_all}
    store_dir = Path(tempfile.mkdtemp(prefix="wn-recall-scale-"))
    out: dict = {"scheme": scheme, "chapters": 3000, "windows": len(windows_all), "embedded_texts": len(texts)}
    with override_settings(WEBNOVEL_RECALL_DIR=store_dir):
        # one new chapter (the last), as a finalize's after-chapter hook embeds it
        cpu, wall = _cpu(), time.perf_counter()
        one = vectors_ensure(book=book, numbers=[3000])
        out["finalize_embed_cpu_s"] = round(_cpu() - cpu, 3)
        out["finalize_embed_wall_s"] = round(time.perf_counter() - wall, 3)
        out["finalize_texts"] = one["embedded"]
        model = vectors._model_get()

        def tokens_of(text: str) -> int:
            cut = text if tokens_max is None else vectors.tokens_cut(model, text, tokens_max)
            return model.token_count(cut)

        total_tokens = sum(tokens_of(t) for t in texts.values())
        store = vectors.store_get()
        sample = [(k, t) for k, t in texts.items() if k not in store.index][:48]
        sample_tokens = sum(tokens_of(t) for _, t in sample)
        cpu, wall = _cpu(), time.perf_counter()
        store.add(dict(sample), tokens=tokens_max, workers=1)
        sample_cpu, sample_wall = _cpu() - cpu, time.perf_counter() - wall
        rate = sample_tokens / sample_cpu if sample_cpu else 0.0
        out["tokens_per_chapter"] = round(total_tokens / 3000, 1)
        out["whole_book_tokens"] = total_tokens
        out["throughput_tokens_per_cpu_s"] = round(rate, 1)
        out["whole_book_embed_estimate_cpu_min"] = round(total_tokens / rate / 60, 1) if rate else None
        # the same pass shared by two worker processes (``WEBNOVEL_RECALL_WORKERS``), on 96 other texts: wall
        # clock and CPU of this process and its children; the whole book's wall time estimated from it
        pair = [(k, t) for k, t in texts.items() if k not in store.index][:96]
        pair_tokens = sum(tokens_of(t) for _, t in pair)
        cpu, wall = _cpu_with_children(), time.perf_counter()
        vectors._pool_add(store, pair, tokens=tokens_max, workers=2, progress=None)
        pair_wall, pair_cpu = time.perf_counter() - wall, _cpu_with_children() - cpu
        out["two_workers_tokens_per_wall_s"] = round(pair_tokens / pair_wall, 1)
        out["two_workers_tokens_per_cpu_s"] = round(pair_tokens / pair_cpu, 1)
        out["one_process_tokens_per_wall_s"] = round(sample_tokens / sample_wall, 1)
        out["whole_book_embed_estimate_wall_min_one_process"] = round(
            total_tokens / (sample_tokens / sample_wall) / 60, 1
        )
        out["whole_book_embed_estimate_wall_min_two_workers"] = round(total_tokens / (pair_tokens / pair_wall) / 60, 1)
        out["worker_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
        out["load_during_cost"] = os.getloadavg()
        # placeholder vectors for the rest: the search's cost does not depend on their values
        rest = [k for k in texts if k not in store.index]
        rng = np.random.default_rng(1)
        fake = rng.standard_normal((len(rest), vectors.DIMENSIONS)).astype(np.float32)
        fake /= np.linalg.norm(fake, axis=1, keepdims=True)
        with (store.folder / "vectors.f16").open("ab") as f:
            f.write(fake.astype(np.float16).tobytes())
        with (store.folder / "keys.txt").open("a") as f:
            f.write("".join(k + "\n" for k in rest))
        store.refresh()
        del fake, texts, windows_all
        query = "他在雪夜里独自守着山门，等一个不会回来的人"
        started = time.perf_counter()
        search_read(book=book, q=query, mode="hybrid", limit=10)
        out["hybrid_first_search_s"] = round(time.perf_counter() - started, 3)
        recall_search_module._query_vectors.clear()
        started = time.perf_counter()
        recall_search_module._query_vector(query)
        out["query_embed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        timings = []
        for _ in range(20):
            started = time.perf_counter()
            search_read(book=book, q=query, mode="hybrid", limit=10)
            timings.append(time.perf_counter() - started)
        timings.sort()
        out["hybrid_warm_ms_p50"] = round(timings[len(timings) // 2] * 1000, 1)
        out["hybrid_warm_ms_max"] = round(timings[-1] * 1000, 1)
        # the two fusions alternated on the same warm index (the load moves less between neighbours)
        by_fusion: dict[str, list[float]] = {"window": [], "chapter": []}
        default_fusion = recall_search_module.FUSION
        for _ in range(15):
            for fusion, samples in by_fusion.items():
                recall_search_module.FUSION = fusion
                started = time.perf_counter()
                search_read(book=book, q=query, mode="hybrid", limit=10)
                samples.append(time.perf_counter() - started)
        recall_search_module.FUSION = default_fusion
        for fusion, samples in by_fusion.items():
            out[f"hybrid_warm_ms_p50_{fusion}_fusion"] = round(sorted(samples)[len(samples) // 2] * 1000, 1)
        # what a new process pays for its first search (the index built again; a scheme whose digests
        # need the segmenter reads them from the store's digest cache the first search wrote)
        recall_search_module._indexes.clear()
        recall_search_module._vocabs.clear()
        vectors._digest_caches.clear()
        started = time.perf_counter()
        search_read(book=book, q=query, mode="hybrid", limit=10)
        out["hybrid_first_search_new_process_s"] = round(time.perf_counter() - started, 3)
        # a chapter in the middle rewritten, then one appended: the first search after each (their
        # windows' vectors are placeholders too, so the time is the index's, not the model's)
        for label, number in (("changed", 1500), ("appended", 3001)):
            body = chapters[1499][1].replace("。", "！", 3) + "\n他推门出去，雪已经停了。"
            Chapter.objects.update_or_create(
                book=book,
                number=number,
                defaults={
                    "title": f"第{number}章",
                    "body": body,
                    "content_hash": hashlib.sha1(body.encode("utf-8")).hexdigest(),
                },
            )
            new = [w.key for w in book_windows(book=book, numbers=[number]) if w.key not in store.index]
            new = list(dict.fromkeys(new))
            with (store.folder / "vectors.f16").open("ab") as f:
                f.write(np.ones((len(new), vectors.DIMENSIONS), np.float16).tobytes())
            with (store.folder / "keys.txt").open("a") as f:
                f.write("".join(k + "\n" for k in new))
            started = time.perf_counter()
            search_read(book=book, q=query, mode="hybrid", limit=10)
            out[f"first_search_after_{label}_chapter_s"] = round(time.perf_counter() - started, 3)
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


def scale_subprocess(scheme: str) -> dict:
    import subprocess

    done = subprocess.run(
        [sys.executable, __file__, "--scale-only", scheme, "--json"], capture_output=True, text=True, check=False
    )
    if done.returncode:
        return {"scheme": scheme, "error": done.stderr[-2000:]}
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--skip-scale", action="store_true", help="the recall set only (no 3,000-chapter book)")
    parser.add_argument(
        "--schemes", default="window-head,salient", help="the embedding schemes to compare, comma-separated"
    )
    parser.add_argument(
        "--fusions",
        default="window,chapter",
        help="hybrid's fusions to compare (recall.search.FUSION), comma-separated: window (k = 60, before "
        "session 10), chapter (weighted, per chapter)",
    )
    parser.add_argument(
        "--splits",
        default="",
        help="the recall sets to run, comma-separated (default: all); a blind set left out is not looked at",
    )
    parser.add_argument("--scale-only", choices=SCHEMES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    schemes = [s for s in args.schemes.split(",") if s]
    for name in schemes:
        if name not in SCHEMES:
            sys.exit(f"unknown scheme {name!r} (one of {', '.join(SCHEMES)})")
    if not (CORPUS / "shuihu.txt").is_file():
        sys.exit(f"skipped: {CORPUS}/shuihu.txt not found (set WEBNOVEL_SHARED)")
    django_setup(migrate=True)
    from recall import vectors
    from recall.pipeline import vectors_ensure

    ok, reason = vectors.status()
    if not ok:
        sys.exit(f"skipped: {reason}")
    if args.scale_only:
        print(json.dumps(scale_run(args.scale_only), ensure_ascii=False))
        return
    figures: dict = {"model": vectors.model_tag(), "load": os.getloadavg()}
    books = {name: book_load(name, corpus_chapters(name)) for name in ("xiyouji", "shuihu")}
    from recall import search as recall_search_module

    fusions = [f for f in args.fusions.split(",") if f]
    for scheme in schemes:
        scheme_set(scheme)
        embedding = {}
        for name, book in books.items():
            cpu = _cpu()
            embedding[name] = {**vectors_ensure(book=book), "cpu_s": round(_cpu() - cpu, 1)}
        started = time.perf_counter()
        figures[scheme] = {"embedding": embedding}
        default_fusion = recall_search_module.FUSION
        for fusion in fusions:
            recall_search_module.FUSION = fusion
            figures[scheme][f"recall_{fusion}"] = recall_run(books, [s for s in args.splits.split(",") if s])
        recall_search_module.FUSION = default_fusion
        figures[scheme]["recall_seconds"] = round(time.perf_counter() - started, 1)
    figures["peak_rss_mb_recall_run"] = round(peak_rss_mb(), 1)
    if not args.skip_scale:
        figures["scale"] = {scheme: scale_subprocess(scheme) for scheme in schemes}
    figures["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
        return
    print(f"model {figures['model']}, load average {figures['load']} → {figures['load_after']}")
    for scheme in schemes:
        for name, e in figures[scheme]["embedding"].items():
            print(
                f"[{scheme}] embedding {name}: {e['windows']} windows, {e['texts']} texts, "
                f"{e['embedded']} embedded now in {e['seconds']} s ({e['cpu_s']} CPU s)"
            )
        for fusion in fusions:
            for split in (*SPLITS, "all"):
                row = figures[scheme][f"recall_{fusion}"].get(split)
                if row is None:
                    continue
                print(
                    f"[{scheme}, {fusion} fusion] recall@5 {split:6}: "
                    + "  ".join(f"{m} {row[m]['found']}/{row[m]['of']} = {row[m]['recall@5']:.2f}" for m in MODES)
                )
    print(f"peak RSS (recall run, both novels, every scheme) {figures['peak_rss_mb_recall_run']} MB")
    for scheme, row in figures.get("scale", {}).items():
        for key, value in row.items():
            print(f"[{scheme}] scale {key}: {value}")


if __name__ == "__main__":
    main()
