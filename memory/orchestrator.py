"""The context assembler: ``build_memory_pack`` picks what the AI reads before a chapter.

Why our own: this is the product. Every candidate item is scored with a fixed priority (below), then
items are taken greedily in (priority, candidate order) until the budget is spent; an item that does
not fit is skipped (outline, tail, Story System and master-outline items are truncated instead when at least
``MIN_TRUNCATED`` tokens remain, to at most half of what remains). Items that are not fit to be read at all (outdated, contradicted or
tentative facts, state fields already shown) are listed too, skipped, with the reason. Same database
and same arguments → the same pack, byte for byte (no clock, no set order, ties broken by id).

Layers: ``working`` (this chapter's outline, recent summaries and the last chapter's tail, the
protagonist's and on-stage characters' state as of the chapter, pacing signals, the chapter's
effective Story System), ``scratchpad``
(facts as of the chapter: constraints, world rules, open loops, reader promises, on-stage subjects'
facts) and ``episodic`` (BM25 / embedding retrieval over older chapters' summaries and scenes).

Priorities (write task; docs/memory.md has the table and the review / query variants):
100 outline · 97 this chapter's summary (review) · 95 secret constraints · 92 protagonist state ·
90 previous tail · 89 previous summary · 88 other constraints · 87 last hook · 86 Story System · 84–81 older summaries ·
80–73 on-stage states · 78 story time · 76 pacing · 74 / 58 world rules (mentioned / not) ·
78 / 70 open loops (due, overdue or in the outline / not) · 66 reader promises · 62 on-stage character facts · 55 story facts ·
52–45 retrieved chunks · 50 timeline events · 40 master outline.
"""

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from django.conf import settings

from core.models import Book
from entities.hierarchy import place_chains
from entities.state_labels import state_field_label
from kernel.exceptions import InvalidInput, NotFound
from memory import selectors
from memory.bounds import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET, TASKS
from memory.derivation import value_text
from memory.fact_recall import METHOD_HYBRID, facts_search
from memory.models import Fact
from memory.retrieval import chunks_search, text_terms
from memory.services import memory_hit_record
from memory.tokens import tokens_estimate, tokens_truncate
from recall.vectors import status as recall_status
from storysystem.selectors import chapter_effective
from threads.selectors import thread_hangs

MIN_TRUNCATED = 60
RETRIEVE = 8
WRITE_FACTS_RECALLED = 4  # a pack without a query recalls fewer facts: its query is the outline, not a question
LAYER_ORDER = {"working": 0, "scratchpad": 1, "episodic": 2}

C = Fact.Category
CATEGORY_LABELS = dict(Fact.Category.choices)
EMPTY_VALUE = value_text(None)  # how a cleared state value is written into a fact


@dataclass
class Item:
    id: str
    layer: str
    kind: str
    title: str
    text: str
    priority: int
    truncatable: bool = False
    keep_end: bool = False  # a chapter's tail is cut from its start, so its last lines survive
    reason: str = ""  # set up front for items that are listed but never taken
    included: bool = False
    tokens: int = 0
    full_tokens: int = 0

    def block(self, text: str | None = None) -> str:
        return f"【{self.title}】\n{self.text if text is None else text}\n"


def pack_mode() -> str:
    """``full`` unless switched off by the setting ``WEBNOVEL_MEMORY_PACK`` (``simple``; from the environment)."""
    value = settings.WEBNOVEL_MEMORY_PACK
    return "simple" if str(value).strip().lower() in {"simple", "off", "0", "false"} else "full"


def _check(*, number: int, task: str, budget_tokens: int) -> None:
    if task not in TASKS:
        raise InvalidInput(f"未知的任务 '{task}'，可选：{'、'.join(TASKS)}", extra={"task": task})
    if number < 1:
        raise InvalidInput(f"章节号必须是正整数，收到 {number}", extra={"chapter": number})
    if not MIN_BUDGET <= budget_tokens <= MAX_BUDGET:
        raise InvalidInput(
            f"预算必须在 {MIN_BUDGET} 到 {MAX_BUDGET} tokens 之间，收到 {budget_tokens}",
            extra={"budget_tokens": budget_tokens},
        )


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | tuple | dict) and not value)


def _state_text(state: dict[str, Any]) -> str:
    # Authors' labels (境界, not realm), the dashboard's table; a cleared key says nothing useful.
    parts = [f"{state_field_label(k)}：{value_text(state[k])}" for k in sorted(state) if not _empty(state[k])]
    return "；".join(parts) or "（无状态记录）"


def _fact_title(fact: Any) -> str:
    # Setting facts (source chapter 0) come from the book's files, not from a chapter.
    title = f"{CATEGORY_LABELS[fact.category]}·{fact.subject}·{state_field_label(fact.field)}"
    if fact.source_chapter:
        return f"{title}（第{fact.source_chapter}章）"
    return title if fact.field == "设定" else f"{title}（设定）"


STORY_SYSTEM_PRIORITY = 86


def _story_system_item(*, book: Book, number: int) -> Item:
    """The chapter's effective Story System (the master setting merged with the chapter's override):
    tone, pacing and the other constraint fields, then the merged anti-patterns."""
    item = Item(
        id="story_system",
        layer="working",
        kind="story_system",
        title=f"故事系统·第{number}章生效设定",
        text="",
        priority=STORY_SYSTEM_PRIORITY,
        truncatable=True,
    )
    try:
        effective = chapter_effective(book=book, number=number)
    except NotFound:
        # in words, not the command that makes one (the pack is read on the dashboard as well as by agents)
        item.reason = (
            f"未纳入：《{book.title or book.slug}》还没有故事系统总设定"
            "（题材、基调、节奏的约定；在后台「故事设定」里按题材描述生成）"
        )
        return item
    if effective["has_chapter_override"]:
        item.title += "（总设定＋本章覆盖）"
    anti_texts = {a["text"] for a in effective["anti_patterns"]}
    lines = []
    for name, field in effective["fields"].items():
        if _empty(field["value"]):
            continue
        if isinstance(field["value"], list) and anti_texts.issuperset(field["value"]):
            continue  # 全局毒点: already in the merged anti-patterns below
        mark = (
            "（本章）"
            if field["origin"] == "chapter"
            else "（含本章追加）"
            if field["origin"] == "master+chapter"
            else ""
        )
        lines.append(f"{name}{mark}：{value_text(field['value'])}")
    anti = [a["text"] + ("（本章）" if a.get("origin") == "chapter" else "") for a in effective["anti_patterns"]]
    if anti:
        lines.append(f"禁忌（毒点，{len(anti)} 条）：" + "；".join(anti))
    if not lines:
        item.reason = "未纳入：总设定没有任何调性、节奏或禁忌（通用路由）"
        return item
    item.text = "\n".join(lines)
    return item


def _working_items(
    *, book: Book, number: int, task: str, as_of: int, simple: bool, states: dict[str, dict[str, Any]]
) -> tuple[list[Item], str, list]:
    items: list[Item] = []
    outline = selectors.chapter_outline(book=book, number=number)
    outline_text = "\n".join(f"{s['heading']}\n{s['body']}" for s in outline["sections"])
    label = "本卷大纲" if outline["whole_volume"] else "本章大纲"
    for s in outline["sections"]:
        items.append(
            Item(
                id=f"outline:v{outline['volume']}:s{s['order']}",
                layer="working",
                kind="outline",
                title=f"{label}·{s['heading'] or '前言'}",
                text=s["body"],
                priority=100,
                truncatable=True,
            )
        )
    if task != "write":
        own = selectors.chapter_row(book=book, number=number)
        if own and own["summary"]:
            items.append(
                Item(
                    id=f"summary:{number}",
                    layer="working",
                    kind="summary",
                    title=f"本章摘要（第{number}章 {own['title']}）",
                    text=own["summary"],
                    priority=97,
                )
            )
    recent = selectors.chapters_recent(book=book, before=number, count=3 if simple else selectors.RECENT_CHAPTERS)
    for i, r in enumerate(recent):
        if r["summary"]:
            items.append(
                Item(
                    id=f"summary:{r['number']}",
                    layer="working",
                    kind="summary",
                    title=f"第{r['number']}章摘要 {r['title']}",
                    text=r["summary"],
                    priority=89 if i == 0 else 85 - i,
                )
            )
        if i == 0 and r["tail"] and not simple:
            items.append(
                Item(
                    id=f"tail:{r['number']}",
                    layer="working",
                    kind="tail",
                    title=f"第{r['number']}章结尾",
                    text=r["tail"],
                    priority=90,
                    truncatable=True,
                    keep_end=True,
                )
            )
    heroes = selectors.protagonists(book=book)
    on_stage = (
        [] if simple else selectors.characters_on_stage(book=book, number=number, task=task, outline_text=outline_text)
    )
    # Every state shown below in one query (was one query per character).
    by_pk = selectors.entity_states(entities=[*heroes, *on_stage], as_of=as_of)
    chains = place_chains(book=book)  # issue 31: a location is named with its chain (雾海 > 白鹭洲)
    for pk, state in by_pk.items():
        if isinstance(state.get("location"), str) and state["location"] in chains:
            by_pk[pk] = {**state, "location": chains[state["location"]]}
    shown = []
    for e in heroes:
        items.append(
            Item(
                id=f"state:{e.entity_id}",
                layer="working",
                kind="state",
                title=f"主角状态·{e.canonical_name}（截至第{as_of}章）",
                text=_state_text(states.setdefault(e.entity_id, by_pk[e.pk])),
                priority=92,
            )
        )
        shown.append(e)
    rank = 0
    for e in on_stage:
        if e in shown:
            continue
        items.append(
            Item(
                id=f"state:{e.entity_id}",
                layer="working",
                kind="state",
                title=f"在场角色·{e.canonical_name}（截至第{as_of}章）",
                text=_state_text(states.setdefault(e.entity_id, by_pk[e.pk])),
                priority=80 - rank,
            )
        )
        shown.append(e)
        rank += 1
    if not simple:
        p = selectors.pacing_signals(book=book, chapter=number)
        lines = []
        if p["too_few_chapters"]:
            lines.append(
                f"前文仅 {p['chapters_seen']} 章，章数太少，暂不判断爽点节奏（满 {p['min_chapters']} 章后给出）"
            )
        else:
            lines.append(
                f"距上次大爽：{p['since_big_payoff']} 章"
                if p["since_big_payoff"] is not None
                else f"近 {p['chapters_seen']} 章没有大爽"
            )
            if p["since_small_payoff"] is not None:
                lines.append(f"距上次小爽：{p['since_small_payoff']} 章")
        # Chapters without a recorded mood or position say nothing: they are left out, not shown as ?/?.
        marked = [m for m in p["moods"] if m["mood"] or m["position"]]
        if marked:
            seq = " → ".join(f"{m['chapter']}{m['mood'] or '—'}/{m['position'] or '—'}" for m in marked)
            lines.append(f"最近情绪/位置：{seq}")
        if p["weak_hook_streak"]:
            lines.append(f"连续弱钩子：{p['weak_hook_streak']} 章（上限 {p['weak_hook_limit']}）")
        strands = "；".join(f"{t}{'无记录' if n is None else f'已 {n} 章未动'}" for t, n in p["strands"].items())
        lines.append(f"线索节奏：{strands}")
        items.append(
            Item(id="pacing", layer="working", kind="pacing", title="节奏信号", text="\n".join(lines), priority=76)
        )
        items.append(_story_system_item(book=book, number=number))
        for s in selectors.master_outline(book=book):
            items.append(
                Item(
                    id=f"master:s{s['order']}",
                    layer="working",
                    kind="outline",
                    title=f"总纲·{s['heading'] or '前言'}",
                    text=s["body"],
                    priority=40,
                    truncatable=True,
                )
            )
    recent_text = "\n".join(r["summary"] for r in recent)
    return items, (outline_text, recent_text), shown


def _fact_items(
    *, book: Book, number: int, task: str, as_of: int, context_text: str, on_stage: list, state_fields: dict
) -> list[Item]:
    items: list[Item] = []
    names = {e.canonical_name for e in on_stage}
    subjects = names | {"书内时间", "章末钩子"} | {f"第{n}章" for n in range(max(1, number - 5), number + 1)}
    rows = selectors.facts_as_of(
        book=book, as_of=as_of, categories=[C.CONSTRAINT, C.WORLD_RULE, C.OPEN_LOOP, C.READER_PROMISE]
    )
    rows += selectors.facts_as_of(
        book=book, as_of=as_of, categories=[C.CHARACTER, C.STORY, C.TIMELINE], subjects=subjects
    )
    context_terms = set(text_terms(context_text))
    # How long each loop has hung, and whether it is overdue, at the pack's chapter: the threads
    # app's one definition (the same answer as threads/overdue and the memory health report).
    hangs = thread_hangs(book=book, as_of=as_of)["threads"]
    latest_outdated: dict[tuple[str, str, str], tuple[selectors.FactRow, str]] = {}
    for fact, status, reason in rows:
        g = (fact.category, fact.subject, fact.field)
        title = _fact_title(fact)
        item = Item(
            id=f"fact:{fact.key}", layer="scratchpad", kind=fact.category, title=title, text=fact.value, priority=0
        )
        if not fact.value.strip() or fact.value.strip() == EMPTY_VALUE:
            # A cleared value (a healed wound) is not something to tell the writer: listed, never read.
            item.reason = "空值，未采用"
            items.append(item)
            continue
        if status == Fact.Status.OUTDATED:
            closed_recently = fact.closed_chapter is not None and as_of - fact.closed_chapter < 10
            if reason == "重复":
                continue
            if fact.closed_chapter is not None and not closed_recently:
                continue
            if fact.closed_chapter is None:
                prev = latest_outdated.get(g)
                if prev is None or (prev[0].source_chapter, prev[0].key) < (fact.source_chapter, fact.key):
                    latest_outdated[g] = (fact, reason)
                continue
            item.reason = f"已过时：{reason}"
            items.append(item)
            continue
        if status == Fact.Status.CONTRADICTED:
            if task == "write":
                item.reason = f"矛盾待裁决，未采用：{reason}"
            else:
                item.title = "【矛盾待裁决】" + title
                item.priority = 60
            items.append(item)
            continue
        if status == Fact.Status.TENTATIVE:
            if task == "write":
                item.reason = f"存疑，未采用：{reason}"
            else:
                item.priority = 35
            items.append(item)
            continue
        # active
        if fact.category == C.CONSTRAINT:
            item.priority = 95 if fact.field == "保密" else 88
        elif fact.category == C.WORLD_RULE:
            mentioned = bool(set(text_terms(fact.subject)) & context_terms) if fact.subject else False
            item.priority = 74 if mentioned else 58
        elif fact.category == C.OPEN_LOOP:
            # Due (planned end within 5 chapters), overdue (thread_hangs: hung past its type's
            # threshold since its last activity, or past its planned end) or named in the outline:
            # the loops this chapter should think about first.
            hang = hangs.get(fact.subject)
            planned = hang["planned_end_chapter"] if hang else None
            due = planned is not None and planned <= number + 5
            overdue = bool(hang and hang["overdue"])
            if overdue:
                item.title += f"【超期：{hang['overdue_reason']}】"
            item.priority = 78 if due or overdue or fact.subject in context_text else 70
        elif fact.category == C.READER_PROMISE:
            if fact.subject == "章末钩子":
                item.priority = 87 if fact.source_chapter == as_of else 60  # only the last chapter's hook is owed now
            else:
                item.priority = 66
        elif fact.category == C.CHARACTER:
            shown = state_fields.get(fact.entity_ref)
            if shown is not None and fact.field in shown:
                item.reason = "已并入角色状态"
                items.append(item)
                continue
            item.priority = 62
        elif fact.category == C.STORY:
            item.priority = 55
        elif fact.category == C.TIMELINE:
            item.priority = 78 if fact.subject == "书内时间" else 50
        items.append(item)
    for _g, (fact, reason) in sorted(latest_outdated.items()):
        items.append(
            Item(
                id=f"fact:{fact.key}",
                layer="scratchpad",
                kind=fact.category,
                title=_fact_title(fact),
                text=fact.value,
                priority=0,
                reason=f"已过时：{reason}",
            )
        )
    return items


def _recalled_fact_items(*, book: Book, query: str, as_of: int, items: list[Item], task: str) -> tuple[list[Item], str]:
    """Issue 32: the facts that hybrid recall (memory/fact_recall.py) finds for the pack's retrieval query
    (the caller's query; for a write pack, the outline and the names on stage) and the pack did not list
    yet (a story fact of a character off stage, a rule the outline does not name). A query pack ranks them
    high (70 down to 40, up to 8); any other pack fewer (4) and below its own facts (45 down to 30). Only
    with vectors: without them the pack is what it was."""
    if not recall_status()[0]:
        return [], "bm25"  # no vectors at all: nothing to add, and nothing spent on it
    limit = RETRIEVE if task == "query" else WRITE_FACTS_RECALLED
    hits, method = facts_search(book=book, query=query, as_of=as_of, limit=limit)
    if method != METHOD_HYBRID:
        return [], method
    listed = {it.id for it in items}
    out = []
    for rank, hit in enumerate(h for h in hits if f"fact:{h['key']}" not in listed):
        title = _fact_title(SimpleNamespace(**hit)) + "【检索】"
        priority = max(40, 70 - 3 * rank) if task == "query" else max(30, 45 - 3 * rank)
        out.append(
            Item(
                id=f"fact:{hit['key']}",
                layer="scratchpad",
                kind=hit["category"],
                title=title,
                text=hit["value"],
                priority=priority,
            )
        )
    return out, method


def _episodic_items(
    *, book: Book, number: int, task: str, as_of: int, query: str, skip: set[int]
) -> tuple[list[Item], str]:
    if not query.strip():
        return [], "bm25（无查询文本）"
    exclude = {(n, "summary") for n in skip}
    hits, method = chunks_search(book=book, query=query, max_chapter=as_of, exclude=exclude, limit=RETRIEVE)
    base = 85 if task == "query" else 52
    items = []
    for hit in hits:
        kind = "摘要" if hit["kind"] == "summary" else f"场景{hit['order'] + 1}"
        items.append(
            Item(
                id=f"chunk:{hit['chapter']}:{hit['kind']}:{hit['order']}",
                layer="episodic",
                kind=f"chunk_{hit['kind']}",
                # the rank, not the raw score (the method and scores are the pack's ``retrieval``)
                title=f"相关回忆·第{hit['chapter']}章{kind}（相关度第{hit['rank'] + 1}）",
                text=hit["text"],
                priority=base - hit["rank"],
            )
        )
    return items, method


def _select(items: list[Item], budget: int) -> int:
    """Greedy by (priority desc, candidate order); returns the tokens used. Never exceeds ``budget``."""
    used = 0
    seen: set[str] = set()
    order = sorted(range(len(items)), key=lambda i: (-items[i].priority, i))
    for i in order:
        item = items[i]
        item.full_tokens = item.tokens = tokens_estimate(item.block())
        if item.id in seen and not item.reason:
            item.reason = "重复条目"
        if item.reason:
            continue
        seen.add(item.id)
        remaining = budget - used
        if item.tokens <= remaining:
            item.included = True
            item.reason = f"纳入（优先级 {item.priority}）"
            used += item.tokens
            continue
        head = tokens_estimate(item.block(""))
        # A cut item takes at most half of what is left (at least MIN_TRUNCATED), so one long outline
        # or tail cannot starve every item after it.
        allowance = min(remaining, max(MIN_TRUNCATED, remaining // 2))
        if item.truncatable and remaining >= MIN_TRUNCATED and allowance > head + 10:
            cut = tokens_truncate(item.text, limit=allowance - head, keep_end=item.keep_end)
            item.text = cut
            item.tokens = tokens_estimate(item.block())
            if item.tokens <= remaining and cut:
                item.included = True
                item.reason = f"截断后纳入：原 {item.full_tokens} 词元，保留 {item.tokens}（优先级 {item.priority}）"
                used += item.tokens
                continue
        item.reason = f"预算不足：需要 {item.tokens} 词元，剩余 {remaining}（优先级 {item.priority}）"
    return used


def context_pack(
    *,
    book: Book,
    number: int,
    task: str = "write",
    budget_tokens: int = DEFAULT_BUDGET,
    query: str | None = None,
    mode: str | None = None,
) -> dict[str, Any]:
    """The pack the AI reads before writing / reviewing / querying chapter ``number``: every candidate
    item is listed as included or skipped with its layer, priority, token cost and reason
    (``format=text``: the human rendering)."""
    return build_memory_pack(
        book=book, number=number, task=task, budget_tokens=budget_tokens, query=query or "", mode=mode
    )


def context_diff(
    *, book: Book, a: int, b: int, task: str = "write", budget_tokens: int = DEFAULT_BUDGET
) -> dict[str, Any]:
    """Items only in chapter ``a``'s pack, only in ``b``'s, and in both with a changed text."""
    return pack_diff(book=book, chapter_a=a, chapter_b=b, task=task, budget_tokens=budget_tokens)


def build_memory_pack(
    *,
    book: Book,
    number: int,
    task: str = "write",
    budget_tokens: int = DEFAULT_BUDGET,
    query: str = "",
    mode: str | None = None,
) -> dict[str, Any]:
    """The context pack for writing / reviewing / querying ``number`` within ``budget_tokens``."""
    return _assemble(book=book, number=number, task=task, budget_tokens=budget_tokens, query=query, mode=mode)[0]


def _assemble(
    *, book: Book, number: int, task: str, budget_tokens: int, query: str, mode: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    _check(number=number, task=task, budget_tokens=budget_tokens)
    mode = mode or pack_mode()
    if mode not in {"full", "simple"}:
        raise InvalidInput(f"未知的模式 '{mode}'，可选 full / simple", extra={"mode": mode})
    simple = mode == "simple"
    as_of = number - 1 if task == "write" else number
    states: dict[str, dict[str, Any]] = {}
    items, (outline_text, recent_text), on_stage = _working_items(
        book=book, number=number, task=task, as_of=as_of, simple=simple, states=states
    )
    retrieval = ""
    if not simple:
        state_fields = {e.entity_id: set(states[e.entity_id]) for e in on_stage}
        items += _fact_items(
            book=book,
            number=number,
            task=task,
            as_of=as_of,
            context_text=outline_text + "\n" + recent_text,
            on_stage=on_stage,
            state_fields=state_fields,
        )
        names = " ".join(e.canonical_name for e in on_stage)
        # An explicit query is what the caller wants recalled; without one, recall what this chapter is about.
        # The recent summaries are in the pack already: recall what the outline and the cast point to.
        retrieval_query = query if query.strip() else (outline_text + "\n" + names)
        # Summaries already in the working layer are not recalled again (an explicit query recalls anything).
        recent = set() if task == "query" else set(range(max(1, number - selectors.RECENT_CHAPTERS), number + 1))
        episodic, retrieval = _episodic_items(
            book=book, number=number, task=task, as_of=as_of, query=retrieval_query, skip=recent
        )
        items += episodic
        if retrieval_query.strip():
            recalled, fact_method = _recalled_fact_items(
                book=book, query=retrieval_query, as_of=as_of, items=items, task=task
            )
            if recalled:
                items += recalled
                retrieval = f"{retrieval}；事实：{fact_method}"
    used = _select(items, budget_tokens)
    order = sorted(range(len(items)), key=lambda i: (-items[i].priority, i))
    listed = [items[i] for i in order]
    rendered = [it for it in sorted(listed, key=lambda it: (LAYER_ORDER[it.layer], -it.priority, it.id)) if it.included]
    text = "".join(it.block() for it in rendered)
    layers = {layer: sum(it.tokens for it in rendered if it.layer == layer) for layer in LAYER_ORDER}
    pack = {
        "book": book.slug,
        "chapter": number,
        "task": task,
        "as_of": as_of,
        "budget_tokens": budget_tokens,
        "used_tokens": used,
        "mode": mode,
        "retrieval": retrieval,
        "layers": layers,
        "counts": {"included": len(rendered), "skipped": len(listed) - len(rendered)},
        "items": [
            {
                "id": it.id,
                "layer": it.layer,
                "kind": it.kind,
                "title": it.title,
                "priority": it.priority,
                "tokens": it.tokens,
                "included": it.included,
                "reason": it.reason,
            }
            for it in listed
        ],
        "text": text,
    }
    return pack, {it.id: it.text for it in rendered}


def pack_text(pack: dict[str, Any]) -> str:
    """The pack for a human: the assembled text, then the included / skipped table."""
    lines = [
        f"# 上下文包：{pack['book']} 第{pack['chapter']}章（{pack['task']}，{pack['mode']}）",
        f"# 预算 {pack['budget_tokens']} tokens，已用 {pack['used_tokens']}；检索：{pack['retrieval'] or '无'}",
        "",
        pack["text"],
        "# 候选条目",
    ]
    for it in pack["items"]:
        mark = "✓" if it["included"] else "✗"
        lines.append(f"{mark} [{it['layer']}] P{it['priority']} {it['tokens']}t {it['title']} — {it['reason']}")
    return "\n".join(lines) + "\n"


def pack_diff(
    *, book: Book, chapter_a: int, chapter_b: int, task: str = "write", budget_tokens: int = DEFAULT_BUDGET
) -> dict[str, Any]:
    """What changes between the packs of two chapters: items only in one, items in both whose text
    changed (e.g. a character's state), and the token totals."""
    a, text_a = _assemble(book=book, number=chapter_a, task=task, budget_tokens=budget_tokens, query="", mode=None)
    b, text_b = _assemble(book=book, number=chapter_b, task=task, budget_tokens=budget_tokens, query="", mode=None)
    inc_a = {it["id"]: it for it in a["items"] if it["included"]}
    inc_b = {it["id"]: it for it in b["items"] if it["included"]}

    def brief(it: dict[str, Any]) -> dict[str, Any]:
        return {"id": it["id"], "layer": it["layer"], "title": it["title"], "tokens": it["tokens"]}

    return {
        "book": book.slug,
        "task": task,
        "budget_tokens": budget_tokens,
        "a": {"chapter": chapter_a, "used_tokens": a["used_tokens"], "included": len(inc_a)},
        "b": {"chapter": chapter_b, "used_tokens": b["used_tokens"], "included": len(inc_b)},
        "only_a": [brief(inc_a[i]) for i in inc_a if i not in inc_b],
        "only_b": [brief(inc_b[i]) for i in inc_b if i not in inc_a],
        "changed": [
            {**brief(inc_b[i]), "before": text_a.get(i, ""), "after": text_b.get(i, "")}
            for i in inc_b
            if i in inc_a and text_a.get(i) != text_b.get(i)
        ],
        "same": sum(1 for i in inc_b if i in inc_a and text_a.get(i) == text_b.get(i)),
    }


def context_hit_record(
    *,
    book: Book,
    number: int,
    task: str = "write",
    budget_tokens: int = DEFAULT_BUDGET,
    query: str | None = None,
    mode: str | None = None,
) -> dict[str, Any]:
    """Log which facts and chunks chapter ``number``'s pack holds (the memory hit log): the explicit write
    an agent makes after using a pack, since the context read itself has no side effect."""
    pack = build_memory_pack(
        book=book, number=number, task=task, budget_tokens=budget_tokens, query=query or "", mode=mode
    )
    hit = memory_hit_record(book=book, pack=pack)
    return {
        "chapter": pack["chapter"],
        "task": pack["task"],
        "recorded": hit is not None,
        "items": sum(1 for item in pack["items"] if item["included"]),
        "used_tokens": pack["used_tokens"],
    }
