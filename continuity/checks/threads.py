"""The front-matter kinds: thread_unknown, thread_closed, thread_not_open, thread_due, weak_hook_streak."""

from continuity.canon import WEAK_HOOK, Canon
from continuity.checks.common import ERROR, INFO, KINDS, WARNING, Mentions
from continuity.draft import Draft

Thread_ABANDONED = "已放弃"


def _fm_line(draft: Draft, needle: str) -> int:
    for number in range(1, draft.body_line):
        if needle in draft.front_matter_lines[number - 1]:
            return number
    return 1


def check_front_matter(draft: Draft, canon: Canon, mentions: Mentions, *, chapter: int) -> list[dict]:
    found = []

    def add(kind: str, severity: str, tid: str, message: str, evidence: dict, suggestion: str) -> None:
        line = _fm_line(draft, tid)
        item = {
            "kind": kind,
            "kind_label": KINDS[kind],
            "severity": severity,
            "line": line,
            "quote": tid,
            "term": tid,
            "message": message,
            "evidence": evidence,
            "suggestion": suggestion,
            "waived": False,
        }
        found.append(item)

    for key, tids in (("advances", draft.advances), ("closes", draft.closes)):
        for tid in tids:
            thread = canon.threads.get(tid)
            if thread is None:
                if tid in draft.opens:
                    continue
                add(
                    "thread_unknown",
                    ERROR,
                    tid,
                    f"threads.{key} 中的「{tid}」没有对应的线索文件",
                    {"chapter": None, "file": "线索/", "line": None, "fact": f"线索/ 下没有 {tid}"},
                    "检查 id 拼写，或先在 线索/ 下建立该线索",
                )
                continue
            closed_at = canon.first_close.get(tid)
            closed_at = (
                min(c for c in (closed_at, thread.closed_chapter) if c is not None)
                if (closed_at or thread.closed_chapter)
                else None
            )
            if closed_at is not None and closed_at < chapter:
                evidence = canon.chapter_evidence(closed_at)
                evidence["fact"] = f"{tid}「{thread.title}」已于第{closed_at}章收尾"
                add(
                    "thread_closed",
                    ERROR,
                    tid,
                    f"threads.{key} 中的 {tid} 已于第{closed_at}章收尾",
                    evidence,
                    "另开新线索承接，或从本章开头 --- 之间的 threads 中删去",
                )
            elif thread.status == Thread_ABANDONED and closed_at is None and chapter > canon.last_activity(tid):
                add(
                    "thread_closed",
                    WARNING,
                    tid,
                    f"threads.{key} 中的 {tid} 已放弃",
                    {
                        "chapter": None,
                        "file": thread.source_path,
                        "line": canon.source_line(thread.source_path, "status"),
                        "fact": f"{tid} 状态为 已放弃",
                    },
                    "恢复线索状态为 进行，或从本章开头 --- 之间的 threads 中删去",
                )
            elif thread.opened_chapter is not None and thread.opened_chapter > chapter:
                add(
                    "thread_not_open",
                    WARNING,
                    tid,
                    f"threads.{key} 中的 {tid} 要到第{thread.opened_chapter}章才开启",
                    {
                        "chapter": None,
                        "file": thread.source_path,
                        "line": canon.source_line(thread.source_path, "opened"),
                        "fact": f"{tid} 开启于第{thread.opened_chapter}章",
                    },
                    "先开启该线索，或改正 opened",
                )
    for tid in canon.threads_planned_to_end(chapter):
        thread = canon.threads[tid]
        if tid in draft.closes:
            continue
        closed_at = canon.first_close.get(tid) or thread.closed_chapter
        if closed_at is not None and closed_at < chapter or thread.status == Thread_ABANDONED:
            continue
        found.append(
            {
                "kind": "thread_due",
                "kind_label": KINDS["thread_due"],
                "severity": INFO,
                "line": _fm_line(draft, "closes"),
                "quote": tid,
                "term": tid,
                "message": f"{tid}「{thread.title}」计划在第{chapter}章收尾，本章 closes 中没有它",
                "evidence": {
                    "chapter": None,
                    "file": thread.source_path,
                    "line": canon.source_line(thread.source_path, "planned_end"),
                    "fact": f"{tid} planned_end: {thread.planned_end_label}",
                },
                "suggestion": "本章收尾并写入 threads.closes，或推迟 planned_end",
                "waived": False,
            }
        )
    if WEAK_HOOK.search(draft.hook_type):
        threshold = canon.book.threshold("weak_hook_streak")
        streak = [chapter]
        number = chapter - 1
        while number in canon.chapters and WEAK_HOOK.search(canon.chapters[number]["hook_type"] or ""):
            streak.append(number)
            number -= 1
        if threshold and len(streak) >= threshold:
            first = min(streak)
            found.append(
                {
                    "kind": "weak_hook_streak",
                    "kind_label": KINDS["weak_hook_streak"],
                    "severity": WARNING,
                    "line": _fm_line(draft, "hook_type"),
                    "quote": draft.hook_type,
                    "term": "hook_type",
                    "message": f"本章是连续第 {len(streak)} 个弱钩（第{first}–{chapter}章），阈值 {threshold}",
                    "evidence": {
                        "chapter": chapter - 1,
                        "file": canon.chapter_path(chapter - 1),
                        "line": None,
                        "fact": f"第{first}–{chapter - 1}章的 hook_type 都是弱钩；book.yaml thresholds.weak_hook_streak = {threshold}",
                    },
                    "suggestion": "把本章结尾的钩子写强（-中 / -强）",
                    "waived": False,
                }
            )
    return found
