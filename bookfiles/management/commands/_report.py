"""Human (Chinese) rendering of rebuild / finalize / sync reports, shared by the commands."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.commands import json_render

COUNT_LABELS = {
    "chapters": "章节",
    "volumes": "卷",
    "threads": "线索",
    "secrets": "信息差",
    "entities": "实体",
    "aliases": "别名",
    "documents": "文档",
    "sections": "段落",
    "timeline_rows": "时间线条目",
    "fingerprints": "文风指纹",
    "words": "字数",
}


def issue_line(issue: dict[str, Any]) -> str:
    where = issue["file"] + (f":{issue['line']}" if issue.get("line") else "")
    return f"  [{issue['code']}] {where}  {issue['message']}"


TAG_CODES = ("entity_tag_skipped", "entity_tag_partial")
TAG_SHOWN = 10  # the first reasons; `story entity-tag-issues` lists them all


def hook_failures_warn(command: BaseCommand, report: dict[str, Any], *, action: str) -> None:
    """Warn on stderr when an after-commit update (the memory hook) failed: the writes are committed and
    the exit status stays 0, as the seed's hooks warn only; the report keeps ``hook_failures`` for a
    script, and the warning says how to catch up (``memory_health --refresh``)."""
    failures = report.get("hook_failures") or []
    if failures:
        command.stderr.write(
            f"警告：{action}已写入数据库，但 {len(failures)} 个提交后的更新失败：{failures[0]['message']}"
        )


CANON_SHOWN = 20  # the first new findings; `continuity <book> --from K` lists them all
SEVERITY_LABELS = {"error": "错误", "warning": "警告", "info": "提示"}


def canon_change_lines(change: dict[str, Any], *, book: str) -> list[str]:
    """A canon-change reporter's answer (kernel/indexing.py): the new findings of the other chapters."""
    findings = change.get("findings") or []
    counts = change.get("counts") or {}
    total = sum(counts.values()) if counts else len(findings)
    if change.get("skipped"):
        return [f"其他章节：未复查（{change['skipped']}），新增矛盾 0 处"]
    head = f"其他章节：自第{change['from']}章起复查 {change['checked']} 章，新增矛盾 {total} 处"
    if total:
        head += "（" + "，".join(f"{SEVERITY_LABELS.get(k, k)} {v}" for k, v in counts.items() if v) + "）"
    lines = []
    diff = change.get("canon_diff") or []
    if diff:
        lines.append(
            f"设定变化 {len(diff)} 处：" + "；".join(diff[:CANON_SHOWN]) + ("……" if len(diff) > CANON_SHOWN else "")
        )
    lines.append(head + ("：" if total else ""))
    lines += _finding_lines(findings[:CANON_SHOWN], evidence=True)
    if total > CANON_SHOWN:
        lines.append(f"  ……其余 {total - CANON_SHOWN} 处见 `continuity {book} --from {change['from']}`")
    # the findings the old canon gave and the new one does not (a death moved back takes them away)
    resolved = change.get("resolved") or []
    resolved_counts = change.get("resolved_counts") or {}
    gone = sum(resolved_counts.values()) if resolved_counts else len(resolved)
    if gone:
        tail = "，".join(f"{SEVERITY_LABELS.get(k, k)} {v}" for k, v in resolved_counts.items() if v)
        lines.append(f"消除矛盾 {gone} 处" + (f"（{tail}）" if tail else "") + "：")
        lines += _finding_lines(resolved[:CANON_SHOWN], evidence=False)
        if gone > CANON_SHOWN:
            lines.append(f"  ……其余 {gone - CANON_SHOWN} 处（旧设定下的问题，现已不成立）")
    return lines


def _finding_lines(findings: list[dict[str, Any]], *, evidence: bool) -> list[str]:
    lines = []
    for f in findings:
        where = f"{f['file']}:{f['line']}" if f.get("file") else f"第{f['chapter']}章第{f['line']}行"
        lines.append(f"  第{f['chapter']}章 {where} [{f['kind']}] {f['message']}：「{f['quote']}」")
        if evidence:
            fact = f.get("evidence") or {}
            source = fact.get("file", "") + (f":{fact['line']}" if fact.get("line") else "")
            lines.append(f"    证据：{fact.get('fact', '')}" + (f"（{source}）" if source else ""))
    return lines


def report_text(report: dict[str, Any], *, action: str) -> str:
    tags = [w for w in report.get("warnings", []) if w.get("code") in TAG_CODES]
    warnings = [w for w in report.get("warnings", []) if w.get("code") not in TAG_CODES]
    failures = report.get("hook_failures") or []
    if not report["ok"]:
        outcome = "失败，数据库未改动"
    elif failures:
        outcome = f"已写入，但 {len(failures)} 个提交后的更新失败（见下）"
    else:
        outcome = "成功"
    if report["ok"] and tags:
        outcome += f"（{len(tags)} 个实体标签未完全应用，见下）"
    name = report.get("title") or report["book"]
    lines = [f"{action}《{name}》：{outcome}"]
    counts = report.get("counts")
    if report["ok"] and counts:
        lines.append("  " + "，".join(f"{COUNT_LABELS.get(k, k)} {v}" for k, v in counts.items()))
    for key, label in (("added", "新增"), ("changed", "修改"), ("removed", "删除")):
        if report.get(key):
            lines.append(f"  {label}文件 {len(report[key])}：" + "、".join(report[key]))
    if report.get("unchanged"):
        lines.append("  内容未变化（已重新索引）：" + "、".join(report["unchanged"]))
    for entry in report.get("unreadable", []):
        lines.append(f"  无法读取（已跳过，旧数据保留）：{entry['file']}  {entry['message']}")
    if report.get("rebuilt"):
        lines.append("  book.yaml 有变化：已整本重建")
    if report["errors"]:
        lines.append(f"错误 {len(report['errors'])} 个：")
        lines += [issue_line(i) for i in report["errors"]]
    if tags:
        skipped = sum(1 for t in tags if t["code"] == "entity_tag_skipped")
        lines.append(f"实体标签问题 {len(tags)} 个（跳过 {skipped}，部分应用 {len(tags) - skipped}）：")
        lines += [issue_line(i) for i in tags[:TAG_SHOWN]]
        if len(tags) > TAG_SHOWN:
            lines.append(f"  ……其余 {len(tags) - TAG_SHOWN} 个见 `story entity-tag-issues {report['book']}`")
    if warnings:
        lines.append(f"警告 {len(warnings)} 个：")
        lines += [issue_line(i) for i in warnings]
    if failures:
        lines.append(f"提交后的更新失败 {len(failures)} 个：")
        lines += [f"  {f['message']}" for f in failures]
    if report["ok"]:
        for change in report.get("canon_changes") or []:
            lines += canon_change_lines(change, book=report["book"])
    return "\n".join(lines)


def report_finish(
    command: BaseCommand, report: dict[str, Any], options: dict[str, Any], *, action: str, short: str = ""
) -> None:
    """Print a rebuild / sync / finalize report (JSON or text), then fail if it failed (warn if a hook did)."""
    command.stdout.write(json_render(report) if options["json"] else report_text(report, action=action))
    short = short or action
    if not report["ok"]:
        raise CommandError(f"{short}失败：{len(report['errors'])} 个错误，数据库未改动")
    hook_failures_warn(command, report, action=short)
