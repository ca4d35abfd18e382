"""Semantic recall (issue 32): recall@5 of keyword, semantic and hybrid search on the recall set, and
what the vectors cost — all in one run.

    python bench/bench_recall.py [--json] [--skip-scale]

- **Recall set** (``bench/recall-set/scenes.json``, written before the code): scenes of 西游记 (dev) and
  水浒传 (blind) retold in plain modern Chinese without the books' key words. Each book's chapters
  (as ``import_txt`` splits them) are written as chapter rows; each retold scene is searched through the
  ``search`` read (``core.search.search_read``) in each mode, limit 5; a scene is found when one of its
  chapters is among the five chapters answered. ``bm25`` (BM25 over the same windows, alone) is shown
  for reference.
- **Embedding**: the windows of both books embedded through ``manage.py embed``'s function
  (``recall.pipeline.vectors_ensure``); what was already in the vector cache (keyed by text hash) is
  not embedded again, so the seconds shown are for what was missing in this run, with the throughput.
- **Scale** (a generated 3,000-chapter book, bench/gen_book.py): one new chapter's embedding (what a
  finalize adds), the throughput measured on 120 of its windows and the whole book's embedding time
  estimated from it (the whole book is not embedded in this run: at the measured rate it would take
  longer than the run), and a warm hybrid search over the 3,000 chapters — the vectors of the windows
  not embedded are placeholder unit vectors in a throwaway store (a dot product costs the same whatever
  the values), the query's vector is cached after the first call (``query_ms`` is the embedding of a
  new query, apart). Peak RSS of the whole run.

Goals: hybrid recall@5 ≥ 0.75 and ≥ 25 points above keyword; finalize adds ≤ 2 s; a whole 3,000-chapter
book ≤ 15 min; peak RSS ≤ 600 MB; hybrid search ≤ 50 ms warm at 3,000 chapters.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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


def recall_run(books: dict) -> dict:
    scenes = json.loads(SCENES.read_text(encoding="utf-8"))["scenes"]
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


def scale_run() -> dict:
    """One finalize's embedding, the throughput, and a warm hybrid search at 3,000 chapters."""
    import numpy as np
    from django.test import override_settings

    from bench.bench_discover import _front_matter
    from core.search import search_read
    from recall import search as recall_search_module
    from recall import vectors
    from recall.pipeline import vectors_ensure
    from recall.search import book_windows

    root = synthetic_book(3000)
    files = sorted((root / "定稿" / "正文").rglob("*.md"), key=lambda f: (f.parent.name, f.name))
    chapters = [(i, _front_matter(f.read_text(encoding="utf-8"))[1]) for i, f in enumerate(files, start=1)]
    book = book_load("scale3000", chapters)
    windows = book_windows(book=book)
    chars = sum(len(w.embed_text) for w in windows)
    store_dir = Path(tempfile.mkdtemp(prefix="wn-recall-scale-"))
    with override_settings(WEBNOVEL_RECALL_DIR=store_dir):
        # one new chapter (the last), as a finalize's after-chapter hook embeds it
        started = time.perf_counter()
        one = vectors_ensure(book=book, numbers=[3000])
        finalize_s = time.perf_counter() - started
        sample = {w.key: w.embed_text for w in windows[:400]}
        sample = dict(list({k: t for k, t in sample.items() if k not in vectors.store_get().index}.items())[:120])
        started = time.perf_counter()
        vectors.store_get().add(sample)
        sample_s = time.perf_counter() - started
        sample_chars = sum(len(t) for t in sample.values())
        # placeholder vectors for the rest: the search's cost does not depend on their values
        store = vectors.store_get()
        rest = [w.key for w in windows if w.key not in store.index]
        rest = list(dict.fromkeys(rest))
        rng = np.random.default_rng(1)
        fake = rng.standard_normal((len(rest), vectors.DIMENSIONS)).astype(np.float32)
        fake /= np.linalg.norm(fake, axis=1, keepdims=True)
        (store.folder / "vectors.f16").open("ab").write(fake.astype(np.float16).tobytes())
        (store.folder / "keys.txt").open("a").write("".join(k + "\n" for k in rest))
        store.refresh()
        query = "他在雪夜里独自守着山门，等一个不会回来的人"
        started = time.perf_counter()
        search_read(book=book, q=query, mode="hybrid", limit=10)
        first_s = time.perf_counter() - started
        recall_search_module._query_vectors.clear()
        started = time.perf_counter()
        recall_search_module._query_vector(query)
        query_s = time.perf_counter() - started
        timings = []
        for _ in range(20):
            started = time.perf_counter()
            search_read(book=book, q=query, mode="hybrid", limit=10)
            timings.append(time.perf_counter() - started)
    timings.sort()
    rate = sample_chars / sample_s if sample_s else 0.0
    return {
        "chapters": 3000,
        "windows": len(windows),
        "embedded_chars": chars,
        "finalize_embed_s": round(finalize_s, 3),
        "finalize_windows": one["embedded"],
        "throughput_chars_per_s": round(rate, 1),
        "throughput_windows_per_s": round(len(sample) / sample_s, 2) if sample_s else 0.0,
        "whole_book_embed_estimate_min": round(chars / rate / 60, 1) if rate else None,
        "hybrid_first_search_s": round(first_s, 3),
        "query_embed_ms": round(query_s * 1000, 1),
        "hybrid_warm_ms_p50": round(timings[len(timings) // 2] * 1000, 1),
        "hybrid_warm_ms_max": round(timings[-1] * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--skip-scale", action="store_true", help="the recall set only (no 3,000-chapter book)")
    args = parser.parse_args()
    if not (CORPUS / "shuihu.txt").is_file():
        sys.exit(f"skipped: {CORPUS}/shuihu.txt not found (set WEBNOVEL_SHARED)")
    django_setup(migrate=True)
    from recall import vectors
    from recall.pipeline import vectors_ensure

    ok, reason = vectors.status()
    if not ok:
        sys.exit(f"skipped: {reason}")
    figures: dict = {"model": vectors.model_tag()}
    books = {name: book_load(name, corpus_chapters(name)) for name in ("xiyouji", "shuihu")}
    embedding = {}
    for name, book in books.items():
        embedding[name] = vectors_ensure(book=book)
    figures["embedding"] = embedding
    started = time.perf_counter()
    figures["recall"] = recall_run(books)
    figures["recall_seconds"] = round(time.perf_counter() - started, 1)
    if not args.skip_scale:
        figures["scale"] = scale_run()
    figures["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if args.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
        return
    print(f"model {figures['model']}")
    for name, e in embedding.items():
        print(f"embedding {name}: {e['windows']} windows, {e['embedded']} embedded now in {e['seconds']} s")
    for split in ("dev", "blind", "all"):
        row = figures["recall"][split]
        print(
            f"recall@5 {split:5}: "
            + "  ".join(f"{m} {row[m]['found']}/{row[m]['of']} = {row[m]['recall@5']:.2f}" for m in MODES)
        )
    if "scale" in figures:
        for key, value in figures["scale"].items():
            print(f"scale {key}: {value}")
    print(f"peak RSS {figures['peak_rss_mb']} MB")


if __name__ == "__main__":
    main()
