"""Hybrid recall's fusion (recall.search): chapters ranked per signal and fused with weights, against the
window-level fusion it replaced."""

import numpy as np

from recall.search import (
    CHAPTER_K,
    FUSION,
    FUSION_WEIGHTS,
    BookIndex,
    ChapterPart,
    _fuse_chapters,
    _fuse_windows,
)
from recall.windows import Window


def _index(sizes: dict[int, int]) -> BookIndex:
    """A book of ``sizes[chapter]`` windows each (0: a chapter with none), its windows on lines 1, 3, 5…"""
    parts, windows, starts = {}, [], {}
    for number, size in sizes.items():
        own = [Window(number, "scene", i, 1 + 2 * i, f"第{number}章第{i}段") for i in range(size)]
        parts[number] = ChapterPart(f"h{number}", own, [w.key for w in own])
        starts[number] = len(windows)
        windows += own
    return BookIndex(
        stamp="s",
        parts=parts,
        windows=windows,
        chapters=np.asarray([w.chapter for w in windows], dtype=np.int32),
        starts=starts,
        matrix=None,
        window_row=np.arange(len(windows), dtype=np.int32),
    )


# chapter 1: two windows, 2: three, 3: one, 4: none (an empty chapter). The model finds chapter 1 best (0.86),
# then 3, then 2; BM25 finds chapter 2 best (4.0), then 3, and nothing in chapter 1.
INDEX = _index({1: 2, 2: 3, 3: 1, 4: 0})
SCORES = {
    "semantic": np.asarray([0.80, 0.86, 0.84, 0.83, 0.70, 0.85], dtype=np.float32),
    "bm25": np.asarray([0.0, 0.0, 1.0, 4.0, 0.0, 2.0], dtype=np.float32),
}


def test_chapters_are_ranked_per_signal_and_fused_with_bm25_weighing_twice():
    assert (FUSION, CHAPTER_K, FUSION_WEIGHTS) == ("chapter", 20, {"semantic": 1.0, "bm25": 2.0})
    fused, found, order = _fuse_chapters(INDEX, SCORES, 5, np)
    answer = [(INDEX.windows[d].chapter, INDEX.windows[d].line, round(fused[d], 6), found[d]) for d in order]
    assert answer == [
        # 1/(20+2+1) + 2/(20+0+1): third by meaning, first by words; its window BM25 ranks first (line 3)
        (2, 3, 0.138716, ["semantic", "bm25"]),
        (3, 1, 0.136364, ["semantic", "bm25"]),  # 1/22 + 2/22
        (1, 3, 0.047619, ["semantic"]),  # 1/21: BM25 found nothing there
    ]
    _, _, two = _fuse_chapters(INDEX, SCORES, 2, np)
    assert [INDEX.windows[d].chapter for d in two] == [2, 3]


def test_the_window_fusion_it_replaced_let_one_window_found_by_both_come_first():
    fused, found = _fuse_windows(INDEX, SCORES, np)
    order = sorted(fused, key=lambda d: (-fused[d], d))
    best = [(INDEX.windows[d].chapter, INDEX.windows[d].line, round(fused[d], 6)) for d in order[:3]]
    # 1/62 + 1/62, then 1/64 + 1/61 and 1/63 + 1/63: chapter 3 ahead of BM25's clear first
    assert best == [(3, 1, 0.032258), (2, 3, 0.032018), (2, 1, 0.031746)]


def test_a_signal_that_found_nothing_leaves_the_other_alone():
    only = {"semantic": SCORES["semantic"], "bm25": np.zeros(6, dtype=np.float32)}
    fused, found, order = _fuse_chapters(INDEX, only, 5, np)
    assert [(INDEX.windows[d].chapter, round(fused[d], 6), found[d]) for d in order] == [
        (1, 0.047619, ["semantic"]),
        (3, 0.045455, ["semantic"]),
        (2, 0.043478, ["semantic"]),
    ]
    assert _fuse_chapters(_index({1: 0}), {"bm25": np.zeros(0, dtype=np.float32)}, 5, np) == ({}, {}, [])
