"""The StorySystemDict: what a routed query builds from the reference library — master constraints,
base and dynamic context, anti-patterns, the override policy — plus what a chapter query adds and how
a chapter's values merge with the master's under that policy (seed 003).

Pure reads of the in-process library index (storysystem/search.py) through the route of
storysystem/routing.py: no stored setting is read or written here. ``storysystem.selectors`` reads the
stored settings and answers through this module; ``storysystem.services`` persists what it builds.
"""

from typing import Any

from django.utils import timezone

from core.models import Book
from kernel.exceptions import InvalidInput
from storysystem.conf import LIST_FIELDS, MASTER_FIELDS, SETTING_FIELDS, anti_pattern_fields, conf
from storysystem.routing import AUTHOR, anti_patterns_of, genre_route
from storysystem.search import Doc, index_get, index_pinned, split_multi


def _key(item: dict[str, Any]) -> tuple[str, str, str]:
    return (item["library"], item["table"], item["code"])


def base_context_keyed(items: list[dict[str, Any]] | dict[str, list], tables: list[str]) -> dict[str, list]:
    """The base context keyed by table, as the seed writes it: ``{table: [entries]}``, every base table a
    key (in the route's order, then any other), its entries in rank order. A master stored before the
    base context was keyed (a list) is keyed on read."""
    if isinstance(items, dict):
        items = base_context_items(items)
    keyed: dict[str, list] = {table: [] for table in tables}
    for item in items:
        keyed.setdefault(item["table"], []).append(item)
    return keyed


def base_context_items(base: list[dict[str, Any]] | dict[str, list]) -> list[dict[str, Any]]:
    """The base context's entries as one list (table by table), from the keyed form or a stored list."""
    return [item for items in base.values() for item in items] if isinstance(base, dict) else list(base)


def _entry_trace(library: str, table: str, code: str) -> dict[str, str]:
    """What a trace entry quotes of its library entry, as the seed's source trace does: 摘要 (its 核心摘要)
    and 指令 (its 大模型指令); empty when the entry left them empty or is no longer in the library."""
    doc = index_get().doc_by_key.get((library, table, code))
    payload = doc.payload if doc else {}
    return {"摘要": payload.get("summary", ""), "指令": payload.get("instruction", "")}


def _trace_item(kind: str, entry: dict[str, Any]) -> dict[str, Any]:
    keys = {k: entry[k] for k in ("code", "table", "library", "score")}
    if "summary" in entry and "instruction" in entry:
        quoted = {"摘要": entry["summary"], "指令": entry["instruction"]}
    else:
        quoted = _entry_trace(entry["library"], entry["table"], entry["code"])
    return {"kind": kind, **keys, **quoted}


def _context_item(doc: Doc, score: float) -> dict[str, Any]:
    p = doc.payload
    return {
        "table": p["table"],
        "code": p["code"],
        "library": p["library"],
        "score": round(score, 4),
        "category": p["category"],
        "summary": p["summary"],
        "instruction": p["instruction"],
        "detail": p["detail"],
        "fields": p["fields"],
    }


def _context(
    route: dict[str, Any], query: str, tables: list[str], top_k: int, exclude: list[dict] | None = None
) -> tuple[list[dict], list[dict]]:
    """Top ``top_k`` of each table for the query expanded with the route's default terms; a table
    with no genre-matching hit falls back to the whole table (recorded in the trace). Entries in
    ``exclude`` (the base context) are not repeated in the dynamic context."""
    index = index_get()
    taken = {(i["library"], i["table"], i["code"]) for i in exclude or []}
    search_text = " ".join([query, route["genre"] if route["primary"] else "", *route["default_query_terms"]])
    items, trace = [], []
    for table in tables:

        def fresh(hits: list) -> list:
            return [h for h in hits if (h[0].library, h[0].table, h[0].code) not in taken][:top_k]

        wide = top_k + len(taken)
        _, hits = index.search(search_text, table=table, genres=route["genre_filter"] or None, max_results=wide)
        hits = fresh(hits)
        genre_filtered = True
        if not hits and route["genre_filter"]:
            _, hits = index.search(search_text, table=table, max_results=wide)
            hits = fresh(hits)
            genre_filtered = False
        fallback = not hits
        if fallback:
            # Nothing in the table shares a term with the query: the table still contributes its
            # first entries written for this genre (score 0), so a base table is never silent.
            hits = fresh([(doc, 0.0, []) for doc in index.genre_docs(table=table, genres=route["genre_filter"])])
        for doc, score, _ in hits:
            items.append(_context_item(doc, score))
        trace.append(
            {
                "table": table,
                "codes": [d.code for d, _, _ in hits],
                "genre_filtered": genre_filtered,
                "fallback": fallback,
            }
        )
    return items, trace


def _row_payload(route: dict[str, Any]) -> dict[str, Any] | None:
    if not route["primary"]:
        return None
    p = route["primary"]
    doc = index_get().doc_by_key.get((p["library"], p["table"], p["code"]))
    return doc.payload if doc else None


def _master_constraints(
    row: dict[str, Any] | None, base: list[dict], dynamic: list[dict], overrides: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    fields = row["fields"] if row else {}
    anti = row["anti_pattern_cells"] if row else {}
    values: dict[str, Any] = {}
    trace: list[dict[str, Any]] = []

    def from_row(name: str, cells: dict[str, str]) -> bool:
        cell = cells.get(name, "")
        if not cell.strip():
            return False
        values[name] = split_multi(cell) if name in LIST_FIELDS else cell.strip()
        trace.append({"kind": "constraint", "field": name, "source_code": row["code"], "source_table": row["table"]})
        return True

    for name in MASTER_FIELDS:
        values[name] = [] if name in LIST_FIELDS else ""
        if name == "全局毒点":
            for column in anti_pattern_fields():
                if anti.get(column, "").strip():
                    values[name] = split_multi(anti[column])
                    trace.append(
                        {"kind": "constraint", "field": name, "source_code": row["code"], "source_table": row["table"]}
                    )
                    break
            continue
        if from_row(name, fields):
            continue
        for table, column in conf("constraint_sources").get(name, []):
            for item in [*base, *dynamic]:
                cell = item["fields"].get(column, "").strip() if item["table"] == table else ""
                if cell:
                    values[name] = values[name] + [cell] if name in LIST_FIELDS else cell
                    trace.append(
                        {"kind": "constraint", "field": name, "source_code": item["code"], "source_table": table}
                    )
        if name == "主冲突模板" and not values[name] and row:
            for item in dynamic:
                f = item["fields"]
                if "桥段名称" in f and f.get("前置铺垫"):
                    setup, payoff = f["前置铺垫"].replace("|", "、"), f.get("核心爽点", "").replace("|", "、")
                    values[name] = f"{f['桥段名称']}：{setup} → {payoff}".rstrip(" →")
                    trace.append(
                        {
                            "kind": "constraint",
                            "field": name,
                            "source_code": item["code"],
                            "source_table": item["table"],
                        }
                    )
                    break
    for name, value in overrides.items():
        values[name] = value
        trace.append({"kind": "constraint", "field": name, "source_code": AUTHOR, "source_table": AUTHOR})
    return values, trace


def anti_patterns_merge(*groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The de-duplicated union (by text) of anti-pattern lists, first source kept, order kept."""
    seen: set[str] = set()
    merged = []
    for group in groups:
        for item in group:
            key = item["text"].strip().casefold()
            if key and key not in seen:
                seen.add(key)
                merged.append(item)
    return merged


def _author_items(texts: list[str], origin: str | None = None) -> list[dict[str, Any]]:
    items = []
    for text in texts:
        item = {"text": text, "source_table": AUTHOR, "source_code": AUTHOR, "field": "作者追加"}
        if origin:
            item["origin"] = origin
        items.append(item)
    return items


def override_policy_for(*, book: Book | None) -> dict[str, list[str]]:
    """The override policy: the configured default, replaced per list by ``story_system.override_policy``
    in the book's book.yaml. A master field listed nowhere is treated as locked (the safe side)."""
    policy = {k: list(v) for k, v in conf("override_policy").items()}
    custom = ((book.config or {}).get("story_system") or {}).get("override_policy") if book else None
    if isinstance(custom, dict):
        for key in ("locked", "append_only", "override_allowed"):
            if isinstance(custom.get(key), list):
                policy[key] = [str(v) for v in custom[key]]
    listed = {f for fields in policy.values() for f in fields}
    policy["locked"] += [f for f in SETTING_FIELDS if f not in listed]
    return policy


def overrides_clean(*, overrides: dict[str, Any] | None) -> dict[str, Any]:
    """Author-given field values, checked against the setting fields (ours and seed 003 §10.4's);
    list fields accept ``a|b``."""
    clean: dict[str, Any] = {}
    for name, value in (overrides or {}).items():
        if name not in SETTING_FIELDS:
            raise InvalidInput(
                f"未知的设定字段「{name}」，可用字段：{'、'.join(SETTING_FIELDS)}",
                extra={"field": name, "available": list(SETTING_FIELDS)},
            )
        if name in LIST_FIELDS:
            clean[name] = (
                split_multi(value) if isinstance(value, str) else [str(v).strip() for v in value if str(v).strip()]
            )
        else:
            clean[name] = value.strip() if isinstance(value, str) else "|".join(str(v) for v in value)
    return clean


def story_system_build(
    *,
    query: str,
    genre: str | None = None,
    book: Book | None = None,
    overrides: dict[str, Any] | None = None,
    add_anti_patterns: list[str] | None = None,
) -> dict[str, Any]:
    """The master StorySystemDict for ``query`` (JSON is the source; Markdown is a projection)."""
    with index_pinned():
        return _story_system_build(
            query=query, genre=genre, book=book, overrides=overrides, add_anti_patterns=add_anti_patterns
        )


def _story_system_build(
    *,
    query: str,
    genre: str | None,
    book: Book | None,
    overrides: dict[str, Any] | None,
    add_anti_patterns: list[str] | None,
) -> dict[str, Any]:
    query = (query or "").strip()
    if not query and not genre:
        raise InvalidInput("需要查询词或题材（--genre）", extra={"field": "query"})
    overrides = overrides_clean(overrides=overrides)
    route = genre_route(query=query, genre=genre)
    if route["primary"] is None and not genre and book is not None and book.genre.strip():
        # The query routes nowhere: the book's own genre (book.yaml) beats the generic route.
        by_book = genre_route(query=query, genre=book.genre)
        if by_book["primary"] is not None:
            route = {**by_book, "method": "book_genre"}
    base, base_trace = _context(route, query, route["base_tables"], int(conf("base_top_k")))
    dynamic, dynamic_trace = _context(route, query, route["dynamic_tables"], int(conf("dynamic_top_k")), base)
    row = _row_payload(route)
    ruling = index_get().doc_by_key.get(_key(route["ruling"])) if route["ruling"] else None
    constraints, constraint_trace = _master_constraints(row, base, dynamic, overrides)
    author_anti = [
        *(t for name in ("全局毒点", "全局禁区补充") if name in overrides for t in constraints[name]),
        *(add_anti_patterns or []),
    ]
    anti = anti_patterns_merge(
        anti_patterns_of(row) if row else [],
        anti_patterns_of(ruling.payload) if ruling else [],
        *[anti_patterns_of(_payload_of(item)) for item in [*base, *dynamic]],
        _author_items(author_anti),
    )
    trace = []
    if route["primary"]:
        trace.append(_trace_item("route", route["primary"]))
    if ruling:
        ruled = {"code": ruling.code, "table": ruling.table, "library": ruling.library, "score": 0.0}
        trace.append(_trace_item("ruling", ruled))
    for c in route["candidates"]:
        trace.append(_trace_item("candidate", c))
    for kind, items in (("base", base), ("dynamic", dynamic)):
        for item in items:
            trace.append(_trace_item(kind, item))
    trace += [{"kind": "table", "role": "base", **t} for t in base_trace]
    trace += [{"kind": "table", "role": "dynamic", **t} for t in dynamic_trace]
    trace += constraint_trace
    return {
        "meta": {
            "query": query,
            "explicit_genre": genre or None,
            "inferred_genre": route["genre"],
            "chapter_mode": "master",
            "chapter": None,
            "book": book.slug if book else None,
            "generated_at": timezone.now().isoformat(timespec="seconds"),
            "library_version": index_get().token[:32],
        },
        "route": route,
        "master_constraints": constraints,
        "base_context": base_context_keyed(base, route["base_tables"]),
        "dynamic_context": dynamic,
        "anti_patterns": anti,
        "override_policy": override_policy_for(book=book),
        "source_trace": trace,
    }


def _payload_of(item: dict[str, Any]) -> dict[str, Any]:
    doc = index_get().doc_by_key.get((item["library"], item["table"], item["code"]))
    return doc.payload if doc else {"anti_patterns": [], "table": item["table"], "code": item["code"]}


# ---------------------------------------------------------------- the merge of a chapter with the master


def _fields_present(*values: dict[str, Any]) -> list[str]:
    # The master constraints always; a seed field once the master or the chapter gives it.
    return [n for n in SETTING_FIELDS if n in MASTER_FIELDS or any(v.get(n) not in (None, "", []) for v in values)]


def effective_merge(
    *, master: dict[str, Any], contributions: dict[str, Any] | None, policy: dict[str, list[str]]
) -> dict[str, Any]:
    """Apply the override rules: locked from the master only; append_only the de-duplicated union;
    override_allowed the chapter's value when it has one. Anti-patterns are master ∪ chapter."""
    contributions = contributions or {}
    chapter_fields = contributions.get("fields", {})
    fields: dict[str, dict[str, Any]] = {}
    for name in _fields_present(master["master_constraints"], chapter_fields):
        mv = master["master_constraints"].get(name, [] if name in LIST_FIELDS else "")
        cv = chapter_fields.get(name)
        if name in policy["append_only"]:
            added = [v for v in (cv or []) if v not in mv] if name in LIST_FIELDS else []
            value = [*mv, *added] if name in LIST_FIELDS else mv
            fields[name] = {"value": value, "origin": "master+chapter" if added else "master", "policy": "append_only"}
            if added:
                fields[name]["added_by_chapter"] = added
        elif name in policy["override_allowed"] and cv not in (None, "", []):
            fields[name] = {"value": cv, "origin": "chapter", "policy": "override_allowed", "master_value": mv}
        else:
            policy_name = "override_allowed" if name in policy["override_allowed"] else "locked"
            fields[name] = {"value": mv, "origin": "master", "policy": policy_name}
    master_anti = [{**a, "origin": "master"} for a in master["anti_patterns"]]
    chapter_anti = [{**a, "origin": "chapter"} for a in contributions.get("anti_patterns", [])]
    return {"fields": fields, "anti_patterns": anti_patterns_merge(master_anti, chapter_anti)}


def chapter_contributions(
    *,
    master: dict[str, Any],
    policy: dict[str, list[str]],
    query: str,
    genre: str | None,
    explicit: dict[str, Any],
    add_anti_patterns: list[str] | None,
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """What a chapter query adds on top of the master: its own route (or the master's when the
    query routes nowhere), its dynamic context, field values and anti-patterns. Values its route
    suggests for locked fields are not attempts: they are kept under ``ignored_locked``."""
    with index_pinned():
        return _chapter_contributions(
            master=master,
            policy=policy,
            query=query,
            genre=genre,
            explicit=explicit,
            add_anti_patterns=add_anti_patterns,
        )


def _chapter_contributions(
    *,
    master: dict[str, Any],
    policy: dict[str, list[str]],
    query: str,
    genre: str | None,
    explicit: dict[str, Any],
    add_anti_patterns: list[str] | None,
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    route = genre_route(query=query, genre=genre)
    own_route = route["primary"] is not None and (
        master["route"]["primary"] is None or route["primary"]["code"] != master["route"]["primary"]["code"]
    )
    if route["primary"] is None and master["route"]["primary"] is not None:
        route = {**master["route"], "method": "inherited", "candidates": []}
    route["inherited_from_master"] = route["method"] == "inherited"
    dynamic, dynamic_trace = _context(
        route, query, route["dynamic_tables"], int(conf("dynamic_top_k")), base_context_items(master["base_context"])
    )
    row = _row_payload(route) if own_route else None
    derived, _ = _master_constraints(row, [], [], {})
    fields: dict[str, Any] = {}
    ignored: dict[str, Any] = {}
    for name in SETTING_FIELDS:
        mv = master["master_constraints"].get(name)
        if name in explicit:
            value = explicit[name]
        elif derived.get(name) not in (None, "", []) and derived[name] != mv:
            value = derived[name]
        else:
            continue
        if name in policy["locked"]:
            if value != mv:
                ignored[name] = value
            continue
        fields[name] = value
    ruling = index_get().doc_by_key.get(_key(route["ruling"])) if own_route and route.get("ruling") else None
    anti = anti_patterns_merge(
        anti_patterns_of(row) if row else [],
        anti_patterns_of(ruling.payload) if ruling else [],
        *[anti_patterns_of(_payload_of(item)) for item in dynamic],
        _author_items([*explicit.get("全局毒点", []), *explicit.get("全局禁区补充", []), *(add_anti_patterns or [])]),
    )
    trace = []
    if own_route:
        trace.append(_trace_item("route", route["primary"]))
    for item in dynamic:
        trace.append(_trace_item("dynamic", item))
    trace += [{"kind": "table", "role": "dynamic", **t} for t in dynamic_trace]
    contributions = {
        "fields": fields,
        "explicit": explicit,
        "anti_patterns": anti,
        "dynamic_context": dynamic,
        "ignored_locked": ignored,
    }
    return contributions, route, trace


def chapter_compose(
    *, book: Book, number: int, master: dict[str, Any], record: dict[str, Any], policy: dict[str, list[str]]
) -> dict[str, Any]:
    """The chapter's StorySystemDict: the chapter's meta and route, the effective constraints and
    anti-patterns (with origins), the master's base context and the chapter's dynamic context."""
    contributions = record.get("contributions", {})
    merged = effective_merge(master=master, contributions=contributions, policy=policy)
    meta = record["meta"]
    master_trace = [
        {
            "kind": "master",
            "code": t["code"],
            "table": t["table"],
            "library": t.get("library", ""),
            "score": t.get("score", ""),
            **({"摘要": t["摘要"], "指令": t["指令"]} if "摘要" in t else {}),
        }
        for t in master["source_trace"]
        if t["kind"] in ("route", "base")
    ]
    return {
        "meta": {
            "query": meta["query"],
            "explicit_genre": meta.get("explicit_genre"),
            "inferred_genre": meta.get("inferred_genre"),
            "chapter_mode": "chapter",
            "chapter": number,
            "book": book.slug,
            "generated_at": meta.get("generated_at"),
            "library_version": master["meta"].get("library_version"),
        },
        "route": record["route"],
        "master_constraints": {name: f["value"] for name, f in merged["fields"].items()},
        "field_origins": {name: f["origin"] for name, f in merged["fields"].items()},
        "base_context": base_context_keyed(master["base_context"], master["route"].get("base_tables", [])),
        "dynamic_context": contributions.get("dynamic_context") or master["dynamic_context"],
        "anti_patterns": merged["anti_patterns"],
        "override_policy": policy,
        "chapter_overrides": {
            "explicit": contributions.get("explicit", {}),
            "fields": contributions.get("fields", {}),
            "ignored_locked": contributions.get("ignored_locked", {}),
        },
        "source_trace": [*master_trace, *record.get("source_trace", [])],
    }
