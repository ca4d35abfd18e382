"""The Markdown projection of a StorySystemDict, and the marked block that is the only part of a
Markdown file the system ever rewrites (authors keep notes around it)."""

from typing import Any

from kernel.exceptions import InvalidInput

BEGIN = "<!-- STORY-SYSTEM:BEGIN -->"
END = "<!-- STORY-SYSTEM:END -->"
ANTI_HEADING = "## Anti-Patterns（绝对毒点，切勿触碰）"

_ORIGIN = {"master": "总设定", "chapter": "本章", "master+chapter": "总设定+本章"}


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "；".join(str(v) for v in value) if value else "（无）"
    return str(value) if value not in (None, "") else "（无）"


def _context_lines(items: list[dict[str, Any]] | dict[str, list[dict[str, Any]]]) -> list[str]:
    if isinstance(items, dict):  # the base context, keyed by table
        items = [item for group in items.values() for item in group]
    if not items:
        return ["- （无）"]
    lines = []
    for item in items:
        lines.append(f"### {item['table']} · {item['code']}")
        if item.get("summary"):
            lines.append(f"- 核心摘要：{item['summary']}")
        if item.get("instruction"):
            lines.append(f"- 大模型指令：{item['instruction']}")
        for name, cell in (item.get("fields") or {}).items():
            if str(cell).strip():
                lines.append(f"- {name}：{cell}")
        lines.append("")
    return lines


def story_markdown(data: dict[str, Any]) -> str:
    """The Markdown sections of a StorySystemDict (master or chapter), without the markers."""
    meta, route = data["meta"], data["route"]
    origins = data.get("field_origins", {})
    mode = "总设定" if meta.get("chapter_mode") == "master" else f"第{meta.get('chapter')}章"
    lines = [
        "## Meta",
        f"- 查询：{meta.get('query') or '（无）'}",
        f"- 显式题材：{meta.get('explicit_genre') or '（无）'}",
        f"- 推断题材：{meta.get('inferred_genre') or '（无）'}",
        f"- 章节模式：{mode}",
        f"- 生成时间：{meta.get('generated_at', '')}",
        "",
        "## Route",
        f"- 方式：{route['method']}",
    ]
    primary = route.get("primary")
    if primary:
        evidence = "、".join(f"{e['field']}「{e['term']}」" for e in primary["evidence"])
        lines.append(f"- 主路由：{primary['genre']}（{primary['code']}，得分 {primary['score']}；命中：{evidence}）")
    else:
        lines.append(f"- 主路由：{route['genre']}（通用路由）")
    for c in route.get("candidates", []):
        evidence = "、".join(f"{e['field']}「{e['term']}」" for e in c["evidence"])
        lines.append(f"- 候选：{c['genre']}（{c['code']}，得分 {c['score']}；命中：{evidence}）")
    lines += [
        f"- 基础检索表：{'、'.join(route['base_tables'])}",
        f"- 动态检索表：{'、'.join(route['dynamic_tables'])}",
        f"- 必选爽点：{_value(route.get('required_payoffs', []))}",
    ]
    ruling = route.get("ruling")
    if ruling:
        parts = "；".join(f"{k}：{v}" for k, v in ruling.items() if k not in ("code", "table", "library") and v)
        lines.append(f"- 裁决规则：{ruling['code']}（{parts}）")
    lines += [
        "",
        "## Master Constraints",
    ]
    for name, value in data["master_constraints"].items():
        origin = f"（来源：{_ORIGIN.get(origins[name], origins[name])}）" if name in origins else ""
        lines.append(f"- {name}：{_value(value)}{origin}")
    lines += ["", "## Base Context", *_context_lines(data["base_context"]), ""]
    lines += ["## Dynamic Context", *_context_lines(data["dynamic_context"]), ""]
    lines.append(ANTI_HEADING)
    for item in data["anti_patterns"] or []:
        lines.append(f"- `{item['text']}`（来源：{item['source_code']}）")
    if not data["anti_patterns"]:
        lines.append("- （无）")
    policy = data["override_policy"]
    lines += [
        "",
        "## Override Policy",
        f"- 锁定（只认总设定）：{'、'.join(policy['locked']) or '（无）'}",
        f"- 只增不减：{'、'.join(policy['append_only']) or '（无）'}",
        f"- 章节可覆盖：{'、'.join(policy['override_allowed']) or '（无）'}",
        "",
        "## Source Trace",
    ]
    for t in data["source_trace"]:
        if t["kind"] == "table":
            codes = "、".join(t["codes"]) or "无命中"
            lines.append(f"- {t['role']} 表 {t['table']}：{codes}")
        elif t["kind"] == "constraint":
            lines.append(f"- {t['field']} ← {t['source_code']}（{t['source_table']}）")
        else:
            quoted = "".join(f"；{k}：{t[k]}" for k in ("摘要", "指令") if t.get(k))
            lines.append(
                f"- {t['kind']}：{t['code']}（{t['table']}，{t.get('library', '')}，得分 {t.get('score', '')}）{quoted}"
            )
    return "\n".join(_one_line(line) for line in lines).rstrip() + "\n"


_LINE_BREAKS = str.maketrans({"\r": "\\r", "\n": "\\n", "\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\x85"})


def _one_line(line: str) -> str:
    """Each entry of the projection is one Markdown line. A query, an override or a reference cell may
    hold line breaks or comment delimiters: escaped, they can neither start a heading of their own nor
    forge a BEGIN / END marker that would make the next persist cut the author's notes."""
    return line.translate(_LINE_BREAKS).replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def block_merge(*, text: str | None, body: str, title: str, name: str) -> str:
    """The new content of a generated Markdown file: ``body`` between the markers of ``text`` (the file as
    it is, None when absent); text outside them is never touched. A file without either marker gets the
    block appended. A file with one marker missing, or either marker twice, or END before BEGIN is
    refused (``InvalidInput`` naming the file and the line): guessing where the block ends would delete
    the author's notes."""
    block = f"{BEGIN}\n{body.rstrip()}\n{END}"
    if text is None:
        return f"# {title}\n\n{block}\n\n<!-- 标记之外的内容归作者所有，重新生成时不会被改动。 -->\n"
    begins, ends = _marker_lines(text, BEGIN), _marker_lines(text, END)
    if not begins and not ends:
        return text.rstrip("\n") + ("\n\n" if text.strip() else "") + block + "\n"
    if len(begins) == 1 and len(ends) == 1 and begins[0] < ends[0]:
        start, end = text.find(BEGIN), text.find(END)
        return text[:start] + block + text[end + len(END) :]
    found = "；".join(
        f"{marker} 第{'、'.join(map(str, lines))}行" if lines else f"缺少 {marker}"
        for marker, lines in ((BEGIN, begins), (END, ends))
    )
    raise InvalidInput(
        f"{name} 的生成块标记不完整或重复（{found}）：为免删掉标记之间作者的内容，文件未改动；"
        f"请恢复成一对 {BEGIN} … {END}，或删除整个生成块后重试",
        extra={"file": name, "begin_lines": begins, "end_lines": ends},
    )


def _marker_lines(text: str, marker: str) -> list[int]:
    lines, start = [], 0
    while (found := text.find(marker, start)) != -1:
        lines.append(text.count("\n", 0, found) + 1)
        start = found + len(marker)
    return lines
