"""The context pack's hybrid recall fuses BM25 and the vectors per chapter, as the search read does
(issue 32, session 11): a chapter with several weak BM25 chunks no longer pushes the chapter both signals
found out of the pack, and the pack recalls several chapters before it quotes one twice."""

from memory.retrieval import chunks_fuse_by_chapter

# chunk pk -> (chapter, kind, order): chapter 7 has three chunks, 3 and 9 one each
ROWS = {
    70: (7, "scene", 0),
    71: (7, "scene", 1),
    72: (7, "scene", 2),
    30: (3, "scene", 0),
    90: (9, "scene", 0),
}


def test_chapters_are_ranked_per_signal_fused_with_bm25_weighing_twice_and_each_gives_its_best_chunk_first():
    # BM25: chapter 7's three chunks, then chapter 3's; the vectors: chapter 3 first, then 9, then 7's last chunk
    fused = chunks_fuse_by_chapter({"bm25": [70, 71, 72, 30], "semantic": [30, 90, 72]}, ROWS)
    assert fused == [
        # chapter 7: 2/(20+0+1) + 1/(20+2+1), first by words, third by meaning; its chunk by the same fusion
        # inside the chapter: 72 (2/23 + 1/21, found by both) before 70 (2/21) and 71 (2/22)
        (72, 0.138716),
        (30, 0.138528),  # chapter 3: 2/(20+1+1) + 1/(20+0+1)
        (90, 0.045455),  # chapter 9: 1/(20+1+1), by meaning only
        (70, 0.138716),  # then each chapter's next chunk, in the chapters' order
        (71, 0.138716),
    ]
    # the window-level fusion before (k = 60) answered 30, 72, 70, 90, 71: a second chunk of chapter 7 before 9


def test_without_vectors_the_chapters_follow_bm25_and_each_gives_its_best_chunk_first():
    fused = chunks_fuse_by_chapter({"bm25": [70, 30, 71], "semantic": []}, ROWS)
    assert fused == [(70, 0.095238), (30, 0.090909), (71, 0.095238)]
