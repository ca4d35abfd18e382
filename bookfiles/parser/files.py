"""One parser per kind of file. Each takes the decoded text and returns a FileResult; cross-file
checks (duplicates, unknown threads, evidence chapters, alias conflicts) live in ``reader``."""

import re
from typing import Any

import yaml

from bookfiles.parser.changes import CHANGES_COLUMN, entry_changes, timeline_changes
from bookfiles.parser.markup import (
    NUMERAL,
    FrontMatterError,
    entity_tags_strip,
    front_matter_split,
    jsonable,
    key_line,
    names_split,
    nonspace_count,
    numeral_parse,
    sections_split,
    table_rows,
    title_from_markdown,
    yaml_error_line,
    yaml_error_message,
    yaml_load,
)
from bookfiles.parser.types import (
    ERROR,
    WARNING,
    AliasData,
    BookConfig,
    ChapterData,
    DocumentData,
    EntityData,
    FileResult,
    HistoryData,
    Issue,
    SecretData,
    SectionData,
    ThreadData,
    TimelineRowData,
    VolumeData,
)
from kernel.bounds import NUMBER_MAX

CHAPTER_NAME = re.compile(rf"^第({NUMERAL})章.*\.md$")
VOLUME_NAME = re.compile(rf"^第({NUMERAL})卷\s*(.*?)(?:\.md)?$")
THREAD_ID = re.compile(r"^(伏笔|悬念|感情线)-\d+")
SECRET_ID = re.compile(r"^信息差-\d+")
HISTORY_LINE = re.compile(rf"^\s*[-*+]\s*第\s*({NUMERAL})\s*章\s*[：:]\s*(.*)$")

# Book.slug is a 100-character unicode slug: checked here, so a bad one is a located error, not an IntegrityError.
SLUG = re.compile(r"^[-\w]{1,100}\Z")

CHAPTER_POSITIONS = ("推进", "过渡", "日常")
MOODS = ("压抑", "铺垫", "小爽", "大爽", "转折")
STRENGTHS = ("高", "中", "低")
STATUSES = ("进行", "已收尾", "已放弃")
TIERS = ("核心", "重要", "次要", "装饰")
ENTITY_TYPES = ("角色", "地点", "物品", "势力", "招式")
CARD_RESERVED = ("name", "aliases", "generic_aliases", "tier", "protagonist", "description", "id", "parent", "changes")
ROSTER_RESERVED = (
    "name",
    "aliases",
    "generic_aliases",
    "desc",
    "description",
    "tier",
    "id",
    "state",
    "parent",
    "changes",
)


def file_kind(rel: str) -> str | None:
    """The kind of a book file from its relative path, or None when the rebuilder does not read it."""
    parts = rel.split("/")
    name = parts[-1]
    top = parts[0]
    if len(parts) == 1:
        return "book" if name == "book.yaml" else None
    if top == "定稿":
        if len(parts) >= 3 and parts[1] == "正文" and CHAPTER_NAME.match(name):
            return "chapter"
        return None
    if not name.endswith(".md"):
        if rel in ("设定/名册.yaml", "设定/名册.yml"):
            return "roster"
        return None
    if top == "线索":
        return "thread"
    if top == "信息差":
        return "secret"
    if top == "设定":
        if len(parts) >= 3 and parts[1] == "角色":
            return "character_card"
        if len(parts) == 2:
            return "worldview"
        return None
    if top == "大纲":
        if rel == "大纲/总纲.md":
            return "master_outline"
        if len(parts) == 3 and parts[1] == "卷纲" and VOLUME_NAME.match(name):
            return "volume_outline"
        return None
    if top == "时间线":
        return "timeline" if len(parts) == 2 and VOLUME_NAME.match(name) else None
    if top == "文风":
        return "style"
    return None


def stem(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name.rsplit(".", 1)[0]


class _Ctx:
    """Collects the issues of one file."""

    def __init__(self, result: FileResult) -> None:
        self.result = result
        self.path = result.info.path

    def issue(self, code: str, message: str, *, line: int | None = None, level: str = WARNING) -> None:
        self.result.issues.append(Issue(code=code, file=self.path, line=line, message=message, level=level))

    def int_field(self, data: dict[str, Any], key: str, fm_text: str = "") -> int | None:
        value = data.get(key)
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            value = None
        elif isinstance(value, int):
            return self.number_check(value, key, line=key_line(fm_text, key) if fm_text else None)
        elif isinstance(value, str):
            parsed = numeral_parse(value.strip().lstrip("第").rstrip("章"))
            if parsed is not None:
                return self.number_check(parsed, key, line=key_line(fm_text, key) if fm_text else None)
        self.issue(
            "invalid_value",
            f"字段 {key} 应为章节号（整数），实际为 {data.get(key)!r}",
            line=key_line(fm_text, key) if fm_text else None,
        )
        return None

    def number_check(self, value: int, what: str, *, line: int | None) -> int | None:
        """A chapter or volume number at the boundary: 1…NUMBER_MAX, else an ``out_of_range`` error (a
        64-bit overflow or a negative volume would otherwise reach the database as an exception)."""
        if 1 <= value <= NUMBER_MAX:
            return value
        self.issue("out_of_range", f"{what} 的值 {value} 超出范围（1…{NUMBER_MAX:,}）", line=line, level=ERROR)
        return None

    def choice_field(self, data: dict[str, Any], key: str, choices: tuple[str, ...], default: str, fm_text: str) -> str:
        value = data.get(key)
        if value is None or value == "":
            return default
        if str(value) in choices:
            return str(value)
        self.issue(
            "invalid_value",
            f"字段 {key} 的值 {value!r} 不在允许范围（{' | '.join(choices)}）",
            line=key_line(fm_text, key),
        )
        return default


def _str(value: Any) -> str:
    if value is None:
        return ""
    return str(value).strip()


def _str_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [p for p in (s.strip() for s in re.split(r"[,，、]", str(value))) if p]


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"true", "yes", "1", "是", "y"}
    return bool(value)


def _markdown(ctx: _Ctx, text: str) -> tuple[dict[str, Any], str, str, int] | None:
    try:
        return front_matter_split(text)
    except FrontMatterError as exc:
        ctx.issue("yaml_error", f"front matter 解析失败：{exc.message}", line=exc.line, level=ERROR)
        return None


def _sections(body: str, body_line: int) -> list[SectionData]:
    return [
        SectionData(order=i, heading=h, body=b)
        for i, (h, b, _line) in enumerate(sections_split(body, first_line=body_line))
    ]


def _yaml_line(text: str, key: str) -> int | None:
    """The line of a top-level ``key`` in a plain YAML file (``key_line`` counts from a front matter)."""
    line = key_line(text, key)
    return line - 1 if line else None


def parse_book_yaml(result: FileResult, text: str, folder_name: str) -> None:
    ctx = _Ctx(result)
    try:
        data = yaml_load(text) or {}
    except yaml.YAMLError as exc:
        ctx.issue(
            "yaml_error", f"book.yaml 解析失败：{yaml_error_message(exc)}", line=yaml_error_line(exc), level=ERROR
        )
        return
    if not isinstance(data, dict):
        ctx.issue("yaml_error", "book.yaml 必须是键值映射", line=1, level=ERROR)
        return
    data = jsonable(data)
    config = BookConfig(slug=_str(data.get("slug")) or folder_name, config=data)
    if not SLUG.match(config.slug):
        where = "book.yaml 的 slug" if _str(data.get("slug")) else "文件夹名（book.yaml 未写 slug）"
        ctx.issue(
            "invalid_value",
            f"{where} {config.slug[:120]!r} 不合法：须为 1–100 个字母、数字、汉字、- 或 _",
            line=_yaml_line(text, "slug") or 1,
            level=ERROR,
        )
        return
    config.title = _str(data.get("title"))
    config.genre = _str(data.get("genre"))
    volumes = data.get("volumes") or []
    if not isinstance(volumes, list):
        ctx.issue("invalid_value", f"volumes 应为分卷列表，实际为 {volumes!r}", line=_yaml_line(text, "volumes"))
        volumes = []
    for item in volumes:
        number = ctx.int_field(item, "number") if isinstance(item, dict) else None
        if number is None:
            ctx.issue("invalid_value", f"volumes 条目需要 number：{item!r}")
            continue
        volume = VolumeData(number=number, name=_str(item.get("name")))
        chapters = item.get("chapters")
        if isinstance(chapters, list | tuple) and len(chapters) == 2:
            volume.start_chapter = ctx.int_field({"chapters": chapters[0]}, "chapters")
            volume.end_chapter = ctx.int_field({"chapters": chapters[1]}, "chapters")
        elif chapters is not None:
            ctx.issue("invalid_value", f"第{volume.number}卷的 chapters 应为 [首章, 末章]，实际为 {chapters!r}")
        config.volumes.append(volume)
    baseline = data.get("style_baseline")
    if (
        isinstance(baseline, list | tuple)
        and len(baseline) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in baseline)
    ):
        first, last = (ctx.number_check(n, "style_baseline", line=_yaml_line(text, "style_baseline")) for n in baseline)
        config.style_baseline = (first, last) if first is not None and last is not None else None
    elif baseline is not None:
        ctx.issue("invalid_value", f"style_baseline 应为 [首章, 末章]，实际为 {baseline!r}")
    thresholds = data.get("thresholds") or {}
    if isinstance(thresholds, dict):
        for key, value in thresholds.items():
            if isinstance(value, int) and not isinstance(value, bool):
                config.thresholds[str(key)] = value
            else:
                ctx.issue("invalid_value", f"阈值 {key} 应为整数，实际为 {value!r}")
    else:
        ctx.issue("invalid_value", f"thresholds 应为键值映射，实际为 {thresholds!r}")
    result.config = config


def parse_chapter(result: FileResult, text: str) -> None:
    ctx = _Ctx(result)
    rel = result.info.path
    parts = rel.split("/")
    number = ctx.number_check(numeral_parse(CHAPTER_NAME.match(parts[-1]).group(1)), "文件名中的章节号", line=None)
    if number is None:
        return
    chapter = ChapterData(number=number, path=rel, sha256=result.info.sha256)
    for folder in parts[2:-1]:
        match = VOLUME_NAME.match(folder)
        if match:
            chapter.folder_volume = ctx.number_check(
                numeral_parse(match.group(1)), f"文件夹 {folder} 的卷号", line=None
            )
            if chapter.folder_volume is None:
                return
            chapter.folder_volume_name = match.group(2).strip()
    split = _markdown(ctx, text)
    if split is None:
        return
    fm, fm_text, body, body_line = split
    chapter.front_matter = fm
    chapter.fm_text = fm_text
    chapter.title = _str(fm.get("title"))
    chapter.volume = ctx.int_field(fm, "volume", fm_text)
    chapter.perspective = _str(fm.get("perspective"))
    chapter.story_time = _str(fm.get("story_time"))
    chapter.chapter_position = ctx.choice_field(fm, "chapter_position", CHAPTER_POSITIONS, "", fm_text)
    chapter.hook_type = _str(fm.get("hook_type"))
    chapter.mood_position = ctx.choice_field(fm, "mood_position", MOODS, "", fm_text)
    chapter.summary = _str(fm.get("summary"))
    chapter.key_chapter = _bool(fm.get("key_chapter", False))
    threads = fm.get("threads") or {}
    if isinstance(threads, dict):
        chapter.opens = _str_list(threads.get("opens"))
        chapter.advances = _str_list(threads.get("advances"))
        chapter.closes = _str_list(threads.get("closes"))
    else:
        ctx.issue(
            "invalid_value",
            f"threads 应为 opens/advances/closes 映射，实际为 {threads!r}",
            line=key_line(fm_text, "threads"),
        )
    chapter.body, chapter.entity_tags = entity_tags_strip(body, first_line=body_line)
    chapter.word_count = nonspace_count(chapter.body)
    result.chapter = chapter


def _file_id(fm: dict, name: str, pattern: re.Pattern) -> str:
    """A thread's / secret's id: ``id:`` in its front matter, else what its file name starts with."""
    value = _str(fm.get("id"))
    if not value:
        match = pattern.match(name)
        value = match.group(0) if match else ""
    return value


def _file_title(fm: dict, name: str, file_id: str) -> str:
    """``title:`` in the front matter, else the file name after its id (伏笔-001 断剑之谜.md → 断剑之谜)."""
    return _str(fm.get("title")) or name[len(file_id) :].strip(" -_")


def parse_thread(result: FileResult, text: str) -> None:
    ctx = _Ctx(result)
    rel = result.info.path
    split = _markdown(ctx, text)
    if split is None:
        return
    fm, fm_text, body, body_line = split
    name = stem(rel)
    thread_id = _file_id(fm, name, THREAD_ID)
    match = THREAD_ID.match(thread_id)
    if not match or match.group(0) != thread_id:
        ctx.issue(
            "invalid_value",
            f"线索 id {thread_id or name!r} 不合法：应为 伏笔-NNN / 悬念-NNN / 感情线-NNN",
            line=key_line(fm_text, "id") or 1,
        )
        return
    thread = ThreadData(thread_id=thread_id, type=match.group(1), path=rel, front_matter=fm)
    thread.title = _file_title(fm, name, thread_id)
    thread.strength = ctx.choice_field(fm, "strength", STRENGTHS, "中", fm_text)
    thread.status = ctx.choice_field(fm, "status", STATUSES, "进行", fm_text)
    thread.opened = ctx.int_field(fm, "opened", fm_text)
    thread.planned_end, thread.planned_end_volume = _planned_end(ctx, fm, fm_text)
    thread.closed = ctx.int_field(fm, "closed", fm_text)
    if thread.strength == "高" and thread.planned_end is None and thread.planned_end_volume is None:
        ctx.issue(
            "missing_planned_end", f"高强度线索 {thread_id} 缺少 planned_end", line=key_line(fm_text, "strength") or 1
        )
    for heading, section, line in sections_split(body, first_line=body_line):
        if heading == "描述":
            thread.description = section
        elif heading == "收尾计划":
            thread.closing_plan = section
        elif heading == "履历":
            _history(ctx, thread, section, line)
    if not thread.description:
        first = sections_split(body, first_line=body_line)
        if first and first[0][0] == "":
            thread.description = first[0][1]
    result.thread = thread


def _planned_end(ctx: _Ctx, fm: dict[str, Any], fm_text: str) -> tuple[int | None, int | None]:
    """(chapter, volume) of a thread's ``planned_end``: the format allows a chapter number
    (``40`` / ``第40章``) or a volume (``第7卷`` / ``第七卷``), whose last chapter is looked up at
    query time (the volume may not be written yet)."""
    value = fm.get("planned_end")
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("第") and text.endswith("卷"):
            volume = numeral_parse(text[1:-1].strip())
            if volume is not None and volume > 0:
                return None, volume
            ctx.issue(
                "invalid_value",
                f"字段 planned_end 应为章节号或「第N卷」，实际为 {value!r}",
                line=key_line(fm_text, "planned_end"),
            )
            return None, None
    return ctx.int_field(fm, "planned_end", fm_text), None


def _history(ctx: _Ctx, thread: ThreadData, section: str, first_line: int) -> None:
    for offset, line in enumerate(section.split("\n")):
        if not line.strip():
            continue
        match = HISTORY_LINE.match(line)
        if match:
            chapter = ctx.number_check(numeral_parse(match.group(1)), "履历的章节号", line=first_line + offset)
            if chapter is None:
                continue
            thread.history.append(
                HistoryData(
                    order=len(thread.history), chapter=chapter, text=match.group(2).strip(), line=first_line + offset
                )
            )
        elif thread.history and line[:1].isspace():
            thread.history[-1].text += "\n" + line.strip()
        else:
            ctx.issue("invalid_value", f"履历行格式应为「- 第N章：……」：{line.strip()}", line=first_line + offset)


def parse_secret(result: FileResult, text: str) -> None:
    ctx = _Ctx(result)
    rel = result.info.path
    split = _markdown(ctx, text)
    if split is None:
        return
    fm, fm_text, body, _body_line = split
    name = stem(rel)
    secret_id = _file_id(fm, name, SECRET_ID)
    if not secret_id:
        ctx.issue("invalid_value", f"信息差文件 {name!r} 缺少 id（应为 信息差-NNN）", line=1)
        return
    secret = SecretData(secret_id=secret_id, path=rel, front_matter=fm, content=body.strip())
    secret.title = _file_title(fm, name, secret_id)
    secret.registered = ctx.int_field(fm, "registered", fm_text)
    secret.reader_told = ctx.int_field(fm, "reader_told", fm_text)
    secret.reader_knows = _bool(fm.get("reader_knows", False))
    secret.keywords = _str_list(fm.get("keywords"))
    known = fm.get("known_to") or []
    if not isinstance(known, list):
        known = [known]
    for item in known:
        if isinstance(item, dict) and _str(item.get("name")):
            since = ctx.int_field(item, "since", fm_text)
            secret.known_to.append(
                {"name": _str(item["name"]), "since": since if since is not None else secret.registered}
            )
        elif isinstance(item, str | int) and _str(item):
            secret.known_to.append({"name": _str(item), "since": secret.registered})
        else:
            ctx.issue(
                "invalid_value",
                f"known_to 条目应为名字或 {{name, since}}：{item!r}",
                line=key_line(fm_text, "known_to"),
            )
    result.secret = secret


def _aliases(ctx: _Ctx, value: Any, line: int | None, *, generic: bool = False) -> list[AliasData]:
    """``aliases`` (``generic: true`` marks one entry) or ``generic_aliases`` (every entry generic)."""
    out: list[AliasData] = []
    if value is None or value == "":
        return out
    if not isinstance(value, list):
        value = _str_list(value)
    for item in value:
        if isinstance(item, dict):
            name = _str(item.get("alias") or item.get("name"))
            if not name:
                ctx.issue("invalid_value", f"别名条目缺少 alias：{item!r}", line=line)
                continue
            out.append(
                AliasData(
                    alias=name,
                    valid_from=ctx.int_field(item, "from"),
                    valid_to=ctx.int_field(item, "to"),
                    note=_str(item.get("note")),
                    generic=generic or _bool(item.get("generic", False)),
                )
            )
        elif _str(item):
            out.append(AliasData(alias=_str(item), generic=generic))
    return out


# ── issue 31: the hierarchy's ``parent:`` (of a card or a roster entry) ─────────────────────────────────


def _parent_field(ctx: _Ctx, item: dict[str, Any], name: str, line: int | None) -> str:
    """``parent:``: the name, alias or id of the place / faction this entry lies within ("" when absent).
    Whether it names one, and makes no cycle, is checked when the roster is written (entities/hierarchy.py)."""
    value = item.get("parent")
    if value is None or value == "":
        return ""
    if not isinstance(value, str | int) or isinstance(value, bool):
        ctx.issue("invalid_value", f"{name} 的 parent 应为一个名称、别名或 id，实际为 {value!r}", line=line)
        return ""
    return _str(value)


# ── end of issue 31's parent ──────────────────────────────────────────────────────────────────────


def parse_card(result: FileResult, text: str) -> None:
    ctx = _Ctx(result)
    rel = result.info.path
    split = _markdown(ctx, text)
    if split is None:
        return
    fm, fm_text, body, body_line = split
    name = _str(fm.get("name")) or stem(rel)
    tier = ctx.choice_field(fm, "tier", TIERS, "装饰", fm_text)
    entity = EntityData(
        type="角色",
        name=name,
        path=rel,
        line=key_line(fm_text, "name") or 1,
        explicit_id=_str(fm.get("id")),
        tier=tier,
        description=_str(fm.get("description")),
        protagonist=_bool(fm.get("protagonist", False)),
        base_state={k: v for k, v in fm.items() if k not in CARD_RESERVED},
        aliases=_aliases(ctx, fm.get("aliases"), key_line(fm_text, "aliases"))
        + _aliases(ctx, fm.get("generic_aliases"), key_line(fm_text, "generic_aliases"), generic=True),
        parent=_parent_field(ctx, fm, name, key_line(fm_text, "parent")),
        changes=entry_changes(ctx, fm.get("changes"), name, key_line(fm_text, "changes")),
    )
    result.entities.append(entity)
    result.documents.append(
        DocumentData(
            kind="character_card",
            key=name,
            path=rel,
            title=name,
            front_matter=fm,
            body=body.strip(),
            sections=_sections(body, body_line),
        )
    )


def parse_roster(result: FileResult, text: str) -> None:
    ctx = _Ctx(result)
    rel = result.info.path
    try:
        data = yaml_load(text) or {}
    except yaml.YAMLError as exc:
        ctx.issue("yaml_error", f"名册解析失败：{yaml_error_message(exc)}", line=yaml_error_line(exc), level=ERROR)
        return
    if not isinstance(data, dict):
        ctx.issue("yaml_error", "名册必须是「类型: 条目列表」的映射", line=1, level=ERROR)
        return
    data = jsonable(data)
    lines = text.split("\n")

    def line_of(name: str, start: int = 0) -> int | None:
        for index in range(start, len(lines)):
            if name in lines[index]:
                return index + 1
        return None

    for type_name, items in data.items():
        section_start = (line_of(f"{type_name}:") or 1) - 1
        if items is not None and not isinstance(items, list):
            ctx.issue("invalid_value", f"名册 {type_name} 应为条目列表，实际为 {items!r}", line=section_start + 1)
            continue
        if type_name not in ENTITY_TYPES:
            ctx.issue(
                "invalid_value",
                f"名册类型 {type_name!r} 不在允许范围（{' | '.join(ENTITY_TYPES)}）",
                line=line_of(f"{type_name}:"),
            )
            continue
        for item in items or []:
            if isinstance(item, str | int):
                item = {"name": str(item)}
            if not isinstance(item, dict) or not _str(item.get("name")):
                ctx.issue("invalid_value", f"名册条目缺少 name：{item!r}", line=section_start + 1)
                continue
            name = _str(item["name"])
            line = line_of(name, section_start)
            state = item.get("state") or {}
            if not isinstance(state, dict):
                ctx.issue("invalid_value", f"{name} 的 state 应为键值映射", line=line)
                state = {}
            extra = {k: v for k, v in item.items() if k not in ROSTER_RESERVED}
            tier = _str(item.get("tier")) or "装饰"
            if tier not in TIERS:
                ctx.issue("invalid_value", f"{name} 的 tier {tier!r} 不在允许范围（{' | '.join(TIERS)}）", line=line)
                tier = "装饰"
            result.entities.append(
                EntityData(
                    type=type_name,
                    name=name,
                    path=rel,
                    line=line,
                    explicit_id=_str(item.get("id")),
                    tier=tier,
                    description=_str(item.get("desc") or item.get("description")),
                    base_state={**extra, **state},
                    aliases=_aliases(ctx, item.get("aliases"), line)
                    + _aliases(ctx, item.get("generic_aliases"), line, generic=True),
                    parent=_parent_field(ctx, item, name, line),
                    changes=entry_changes(ctx, item.get("changes"), name, line),
                )
            )


def parse_document(result: FileResult, text: str, kind: str) -> None:
    ctx = _Ctx(result)
    rel = result.info.path
    split = _markdown(ctx, text)
    if split is None:
        return
    fm, _fm_text, body, body_line = split
    name = stem(rel)
    if kind == "volume_outline":
        key = str(numeral_parse(VOLUME_NAME.match(name).group(1)))
    elif kind == "style":
        key = rel.split("/", 1)[1][:-3]
    else:
        key = name
    sections = _sections(body, body_line)
    if kind == "master_outline" and not any(s.heading == "结局" for s in sections):
        ctx.issue("missing_section", "总纲缺少 `## 结局` 一节")
    result.documents.append(
        DocumentData(
            kind=kind,
            key=key,
            path=rel,
            title=_str(fm.get("title")) or title_from_markdown(body) or name,
            front_matter=fm,
            body=body.strip(),
            sections=sections,
        )
    )


def parse_timeline(result: FileResult, text: str) -> None:
    ctx = _Ctx(result)
    rel = result.info.path
    volume = ctx.number_check(numeral_parse(VOLUME_NAME.match(stem(rel)).group(1)), "文件名中的卷号", line=None)
    if volume is None:
        return
    split = _markdown(ctx, text)
    if split is None:
        return
    _fm, _fm_text, body, body_line = split
    for order, (row, line) in enumerate(table_rows(body, first_line=body_line)):
        chapter_cell = row.get("章", "")
        chapter = None
        if chapter_cell:
            match = re.search(NUMERAL, chapter_cell.replace("第", "").replace("章", ""))
            chapter = numeral_parse(match.group(0)) if match else None
            if chapter is None:
                ctx.issue("invalid_value", f"时间线「章」列应为章节号：{chapter_cell!r}", line=line)
            else:
                chapter = ctx.number_check(chapter, "时间线「章」列", line=line)
        event = row.get("事件", "")
        result.timeline.append(
            TimelineRowData(
                volume=volume,
                order=order,
                path=rel,
                chapter=chapter,
                story_time=row.get("书内时间", ""),
                event=event,
                present=names_split(row.get("在场人物", "")),
                changes=timeline_changes(ctx, row.get(CHANGES_COLUMN, ""), chapter, chapter_cell, event, line),
            )
        )


def file_parse(result: FileResult, text: str, *, folder_name: str) -> FileResult:
    """Parse ``text`` (already decoded) into ``result`` according to ``result.info.kind``."""
    kind = result.info.kind
    if kind == "chapter":
        parse_chapter(result, text)
    elif kind == "thread":
        parse_thread(result, text)
    elif kind == "secret":
        parse_secret(result, text)
    elif kind == "character_card":
        parse_card(result, text)
    elif kind == "roster":
        parse_roster(result, text)
    elif kind == "timeline":
        parse_timeline(result, text)
    elif kind == "book":
        parse_book_yaml(result, text, folder_name)
    else:
        parse_document(result, text, kind)
    return result
