"""The search page: one box over the whole book, answered by the ``search`` read (keyword, semantic or
hybrid, as the API answers it), each hit linked to nothing but its chapter and line, with the signals
that found it and the note that says which mode answered and why."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.search import SEARCH_MODES, search_read
from core.selectors import book_get
from dashboard.views import _book_context, page

SHOWN = 20
SIGNAL_LABELS = {"keyword": "关键词", "bm25": "BM25", "semantic": "向量"}


@page("webnovel.view_chapter")
def search_page(request: HttpRequest, slug: str) -> HttpResponse:
    book = book_get(slug=slug)
    q = (request.GET.get("q") or "").strip()
    mode = request.GET.get("mode") or None
    ctx = {**_book_context(book, "search"), "q": q, "mode": mode or "", "modes": SEARCH_MODES, "answer": None}
    if q:
        answer = search_read(book=book, q=q, mode=mode if mode in SEARCH_MODES else None, limit=SHOWN)
        for hit in answer["hits"]:
            hit["signal_labels"] = [SIGNAL_LABELS.get(s, s) for s in hit["signals"]]
        ctx["answer"] = answer
    return render(request, "dashboard/search.html", ctx)
