"""bench/bench_endpoints.py: the mix it measures is exactly bench_load.py's, endpoint by endpoint."""

from bench.bench_endpoints import endpoint_of, mix_draw

MIX = {
    "chapters/{n} (meta)",
    "chapters/{n}/body",
    "chapters/{n}/tail",
    "chapters/summaries",
    "chapters/recent-tails",
    "search",
    "threads",
    "threads/{id}",
    "threads/overdue",
    "entities",
    "entities/by-alias",
    "timeline/current",
    "reports/stats",
    "chapters/{n}/context",
}


def test_endpoint_of_names_each_path_shape():
    b = "/api/books/%E4%B9%A6"
    assert endpoint_of(f"{b}/chapters/17") == "chapters/{n} (meta)"
    assert endpoint_of(f"{b}/chapters/17/tail?chars=500") == "chapters/{n}/tail"
    assert endpoint_of(f"{b}/chapters/17/context?task=write") == "chapters/{n}/context"
    assert endpoint_of(f"{b}/chapters/summaries?start=12&end=17") == "chapters/summaries"
    assert endpoint_of(f"{b}/threads/%E4%BC%8F%E7%AC%94-001") == "threads/{id}"
    assert endpoint_of(f"{b}/threads/overdue") == "threads/overdue"
    assert endpoint_of(f"{b}/threads?type=%E4%BC%8F%E7%AC%94") == "threads"
    assert endpoint_of(f"{b}/entities/by-alias?alias=x") == "entities/by-alias"


def test_mix_draw_covers_the_load_mix_deterministically():
    kwargs = {"slug": "书", "chapters": 30, "names": ["林风", "剑老"], "threads": ["伏笔-001"], "per_endpoint": 3}
    drawn = mix_draw(**kwargs, seed=1)
    assert set(drawn) == MIX
    assert all(len(paths) == 3 for paths in drawn.values())
    assert all(endpoint_of(p) == name for name, paths in drawn.items() for p in paths)
    assert mix_draw(**kwargs, seed=1) == drawn
    assert mix_draw(**kwargs, seed=2) != drawn
