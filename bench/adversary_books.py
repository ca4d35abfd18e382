"""Hostile book folders of issue 19 (items 2, 3, 5–8, 13), as data: each case builds a small valid book
(``base_book``), rebuilds it, then plants one hostile change and names the operation to run on it.

Used by ``bench/bench_adversary.py`` (prints, per case, the answer and whether the database and the
folder are unchanged) and ``tests/hardening/test_hostile_books.py`` (asserts it). No Django import at
module level: the bench sets Django up first.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SLUG = "hostile"
BASE_FILES = {
    "book.yaml": "slug: hostile\ntitle: 敌意之书\nvolumes:\n  - number: 1\n    name: 起\n    chapters: [1, 4]\n",
    "定稿/正文/第1卷/第0001章.md": "---\ntitle: 拾剑\nthreads:\n  opens: [伏笔-001]\n---\n林风在雨夜拾到断剑。\n",
    "定稿/正文/第1卷/第0002章.md": "---\ntitle: 入门\n---\n林风入青岚宗。\n",
    "定稿/正文/第1卷/第0003章.md": "---\ntitle: 试剑\n---\n沈墨拦住林风。\n",
    "定稿/正文/第1卷/第0004章.md": "---\ntitle: 夜行\n---\n林风夜入剑冢。\n",
    "线索/伏笔-001.md": "---\nstrength: 中\nopened: 1\n---\n## 描述\n断剑的来历。\n## 履历\n- 第1章：拾剑\n",
    "设定/角色/林风.md": "---\nname: 林风\naliases: [林师弟]\ntier: 核心\nprotagonist: true\n---\n## 性格\n倔。\n",
    "设定/名册.yaml": "地点:\n  - name: 青岚宗\n    aliases: [宗门]\n",
}


@dataclass(frozen=True)
class Case:
    name: str
    what: str  # the hostile input, in a few words (the bench prints it)
    operation: str  # rebuild | rebuild_elsewhere | sync | finalize:N | import_txt | import_references | persist
    plant: Callable[[Path, Path], None]  # (book root, a folder outside the book) → plants the input
    expect_unchanged: bool = True  # the database and the folder must be as before


def base_book(root: Path) -> Path:
    for rel, text in BASE_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _write(rel: str, text: str | bytes) -> Callable[[Path, Path], None]:
    def plant(root: Path, _outside: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")

    return plant


def _symlink(rel: str, target: str) -> Callable[[Path, Path], None]:
    def plant(root: Path, outside: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            os.rename(path, outside / "moved")
        os.symlink(target.replace("{outside}", str(outside)), path)

    return plant


def _fifo(rel: str) -> Callable[[Path, Path], None]:
    def plant(root: Path, _outside: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / rel)

    return plant


def _nothing(_root: Path, _outside: Path) -> None:
    return None


def _empty_elsewhere(root: Path, outside: Path) -> None:
    (outside / SLUG).mkdir()  # rebuild_elsewhere runs on outside/hostile: an empty folder named like the book


def _other_with_slug(root: Path, outside: Path) -> None:
    (outside / SLUG).mkdir()
    (outside / SLUG / "book.yaml").write_text(f"slug: {SLUG}\ntitle: 冒名\n", encoding="utf-8")


def _card_moved_out(root: Path, outside: Path) -> None:
    os.rename(root / "设定/角色/林风.md", outside / "林风.md")


def _chapters_emptied(root: Path, outside: Path) -> None:
    os.rename(root / "定稿", outside / "定稿")


def _non_utf8_name(root: Path, _outside: Path) -> None:
    folder = os.fsencode(str(root / "定稿" / "正文" / "第1卷"))
    with open(folder + b"/\xe7\xac\xac0005\xe7\xab\xa0\xff.md", "wb") as fh:  # 第0005章<0xff>.md
        fh.write("---\ntitle: 坏名\n---\n正文\n".encode())


def _chapter(number: str, front: str = "title: 新章", body: str = "正文。") -> str:
    return f"定稿/正文/第1卷/第{number}章.md", f"---\n{front}\n---\n{body}\n"


CH5 = "定稿/正文/第1卷/第0005章.md"

CASES: list[Case] = [
    # item 2: a rebuild / sync that would wipe the book
    Case("empty_folder_same_name", "空文件夹，名字等于已有书的 slug", "rebuild_elsewhere", _empty_elsewhere),
    Case(
        "other_folder_same_slug", "另一个文件夹的 book.yaml 写着同一 slug，0 章", "rebuild_elsewhere", _other_with_slug
    ),
    Case("most_chapters_gone", "定稿/ 被移走后 rebuild", "rebuild", _chapters_emptied),
    Case("most_chapters_gone_sync", "定稿/ 被移走后 sync", "sync", _chapters_emptied),
    Case("card_moved_out", "角色卡移出文件夹（实体有已录入数据时保留并归档）", "sync", _card_moved_out, False),
    # items 6, 7: files outside the book, special files
    Case("chapter_link_etc_passwd", "章节是指向 /etc/passwd 的符号链接", "rebuild", _symlink(CH5, "/etc/passwd")),
    Case("chapter_link_etc_passwd_sync", "同上，sync", "sync", _symlink(CH5, "/etc/passwd")),
    Case("folder_link_outside", "线索/ 下的文件夹链接到书外", "rebuild", _symlink("线索/外部", "{outside}")),
    Case("link_proc_cwd", "指向 /proc/1/cwd 的符号链接", "rebuild", _symlink("设定/进程", "/proc/1/cwd")),
    Case("chapter_dev_zero", "章节链接到 /dev/zero（fstat 大小为 0）", "rebuild", _symlink(CH5, "/dev/zero")),
    Case("chapter_dev_urandom", "章节链接到 /dev/urandom", "sync", _symlink(CH5, "/dev/urandom")),
    Case("chapter_fifo", "章节是 FIFO（读取会永远阻塞）", "rebuild", _fifo(CH5)),
    Case("chapter_fifo_finalize", "章节是 FIFO，finalize 该章", "finalize:5", _fifo(CH5)),
    Case("non_utf8_file_name", "文件名不是 UTF-8", "rebuild", _non_utf8_name),
    # item 8: hostile content
    Case(
        "yaml_set_tag",
        "front matter 含 !!set {1, a}（读作列表）",
        "rebuild",
        _write(*_chapter("0005", "title: x\ntags: !!set {1, a}")),
        False,
    ),
    Case(
        "yaml_python_tag",
        "front matter 含 !!python/object/apply",
        "rebuild",
        _write(*_chapter("0005", 'x: !!python/object/apply:os.system ["id"]')),
    ),
    Case(
        "volumes_int",
        "book.yaml 的 volumes: 5（警告，分卷取自章节）",
        "rebuild",
        _write("book.yaml", "slug: hostile\nvolumes: 5\n"),
        False,
    ),
    Case(
        "roster_type_int",
        "名册.yaml 的 地点: 5（警告，该类型无条目）",
        "sync",
        _write("设定/名册.yaml", "地点: 5\n"),
        False,
    ),
    Case("yaml_nan", "front matter 的 volume: .nan", "rebuild", _write(*_chapter("0005", "title: x\nvolume: .nan"))),
    Case(
        "yaml_nan_value",
        "front matter 里任意 .nan 值（JSON 字段）",
        "finalize:5",
        _write(*_chapter("0005", "title: x\nscore: .nan")),
    ),
    Case(
        "chapter_number_64bit",
        "文件名 第9223372036854775808章.md",
        "rebuild",
        _write("定稿/正文/第9223372036854775808章.md", "---\ntitle: x\n---\n正文\n"),
    ),
    Case("chapter_zero", "文件名 第0000章.md（finalize 也拒绝 0）", "rebuild", _write(*_chapter("0000"))),
    Case(
        "volume_64bit",
        "front matter 的 volume: 99999999999999999999",
        "rebuild",
        _write(*_chapter("0005", "title: x\nvolume: 99999999999999999999")),
    ),
    Case(
        "volume_negative",
        "book.yaml 的卷号 -1",
        "rebuild",
        _write("book.yaml", "slug: hostile\nvolumes:\n  - number: -1\n    name: 负\n"),
    ),
    Case(
        "history_64bit",
        "线索履历 第99999999999999999999章",
        "sync",
        _write("线索/伏笔-001.md", "---\nstrength: 中\n---\n## 履历\n- 第99999999999999999999章：x\n"),
    ),
    Case(
        "alias_from_64bit",
        "名册别名 from: 2**70",
        "sync",
        _write(
            "设定/名册.yaml", "地点:\n  - name: 青岚宗\n    aliases: [{alias: 宗门, from: 1180591620717411303424}]\n"
        ),
    ),
    Case("nul_in_body", "章节正文含 NUL 字节", "finalize:5", _write(*_chapter("0005", body="正\x00文"))),
    Case(
        "nul_in_title", "标题含 \\0 转义（YAML 值中的 NUL）", "rebuild", _write(*_chapter("0005", 'title: "坏\\0标题"'))
    ),
    Case("surrogate_in_yaml", "YAML 值含孤立代理 \\ud800", "rebuild", _write(*_chapter("0005", 'title: "\\ud800"'))),
    Case(
        "slug_too_long",
        "book.yaml 的 slug 超过 100 个字符",
        "rebuild_elsewhere",
        lambda root, outside: _write("book.yaml", "slug: " + "s" * 150 + "\n")(outside / SLUG, outside),
    ),
    Case(
        "not_a_book",
        "一个不是书的文件夹（只有 README）",
        "rebuild_elsewhere",
        lambda root, outside: _write("README.md", "# 随便什么\n")(outside / SLUG, outside),
    ),
    # item 3, 13: writes
    Case(
        "persist_symlink_file",
        ".story-system/MASTER_SETTING.md 链接到书外文件",
        "persist",
        _symlink(".story-system/MASTER_SETTING.md", "{outside}/victim.py"),
    ),
    Case("persist_symlink_folder", ".story-system 链接到书外文件夹", "persist", _symlink(".story-system", "{outside}")),
    Case(
        "persist_end_marker_deleted",
        "手工删掉了 END 标记",
        "persist",
        _write(".story-system/MASTER_SETTING.md", "# 总设定\n<!-- STORY-SYSTEM:BEGIN -->\n旧\n\n## 作者笔记\n别删我\n"),
    ),
    Case(
        "persist_truncated",
        "MASTER_SETTING.md 被截断在一个汉字中间",
        "persist",
        _write(".story-system/MASTER_SETTING.md", "# 总设定\n林".encode()[:-1]),
    ),
    # item 5: import_txt
    Case(
        "import_txt_64bit",
        "txt 标题 第9223372036854775808章",
        "import_txt",
        _write("novel.txt", "第1章 起\n一\n第9223372036854775808章 终\n二\n"),
    ),
    Case(
        "import_txt_3000000",
        "txt 标题 第3000000章（报告有界）",
        "import_txt",
        _write("novel.txt", "第1章 起\n一\n第3000000章 终\n二\n"),
        False,
    ),
    # item 7: import_references
    Case("references_fifo", "资料目录里有 FIFO 名为 x.csv", "import_references", _fifo("refs/x.csv")),
    Case(
        "references_dev_zero",
        "资料目录里 x.csv 链接到 /dev/zero",
        "import_references",
        _symlink("refs/x.csv", "/dev/zero"),
    ),
    Case("nothing", "对照：什么都不改，rebuild", "rebuild", _nothing, True),
]


# --- running one case (Django must be set up by the caller) -------------------------------------------

EXTRACTION = {
    "entities_appeared": [{"id": "linfeng", "type": "角色", "mentions": ["林风"], "confidence": 0.95}],
    "state_changes": [
        {"entity_id": "linfeng", "field": "realm", "op": "set", "new": "炼气二层", "reason": "入门", "confidence": 0.95}
    ],
}
OP_TIMEOUT_S = 30  # a FIFO that blocks would hang the run: the alarm turns it into a HANG answer


def folder_state(folder: Path) -> dict[str, str]:
    """{relative path: what it is} of every entry under ``folder``, never following a link nor opening
    a special file: content hashes for regular files, the target for links, the type otherwise."""
    import hashlib
    import stat

    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = "link→" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    out[rel] = hashlib.sha256(fh.read()).hexdigest()
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            else:
                out[rel] = f"special {stat.S_IFMT(st.st_mode):o}"
    return out


def database_state() -> str:
    """Every row a hostile input could damage, without ids or timestamps: the book's canonical dump,
    its entities (with archive state), ingested rows, story settings, and the list of books."""
    import json

    from bookfiles.rebuilder import book_dump
    from core.models import Book
    from entities.models import Entity, Relationship, StateChange
    from storysystem.models import ReferenceLibrary, StorySetting

    books = list(Book.objects.order_by("slug").values_list("slug", "root"))
    state = {
        "books": books,
        "libraries": list(ReferenceLibrary.objects.order_by("name").values_list("name", flat=True)),
    }
    book = Book.objects.filter(slug=SLUG).first()
    if book is not None:
        state["dump"] = book_dump(book=book)
        state["entities"] = list(
            Entity.objects.filter(book=book).order_by("entity_id").values_list("entity_id", "archived", "source_path")
        )
        state["state_changes"] = list(
            StateChange.objects.filter(book=book)
            .order_by("entity__entity_id", "chapter", "field")
            .values_list("entity__entity_id", "chapter", "field", "new")
        )
        state["relationships"] = Relationship.objects.filter(book=book).count()
        state["settings"] = sorted((s.chapter or 0, s.query) for s in StorySetting.objects.filter(book=book))
    return json.dumps(state, ensure_ascii=False, sort_keys=True, default=str)


def _operation(case: Case, root: Path, outside: Path) -> list[str]:
    op = case.operation
    if op == "rebuild":
        return ["rebuild", str(root)]
    if op == "rebuild_elsewhere":
        return ["rebuild", str(outside / SLUG)]
    if op == "sync":
        return ["sync", SLUG]
    if op.startswith("finalize:"):
        return ["finalize", SLUG, op.split(":", 1)[1]]
    if op == "import_txt":
        return ["import_txt", str(root / "novel.txt"), str(outside / "out")]
    if op == "import_references":
        return ["import_references", str(root / "refs"), "--library", "hostile-refs"]
    if op == "persist":
        return ["story_system", "玄幻退婚流", "--book", SLUG, "--persist"]
    raise ValueError(op)


def _first_issue(text: str) -> str:
    """The first ``[code] file:line message`` line of a rebuild / sync / finalize report, if any."""
    for line in text.splitlines():
        if line.startswith("  [") or line.startswith("  无法读取"):
            return line.strip()
    return ""


def case_run(case: Case, workdir: Path) -> dict:
    """Build the base book in ``workdir``, rebuild it, plant the case, run its operation; the answer
    (rc 0 / rc 1 with the first line of the CommandError / CRASH with the exception type / HANG) and
    whether the database and the folder (book + the outside folder) are unchanged."""
    import io
    import signal

    from django.core.management import CommandError, call_command

    from bookfiles.rebuilder import book_rebuild
    from core.models import Book
    from entities.services.ingest import extraction_ingest
    from storysystem.models import ReferenceLibrary

    Book.objects.all().delete()
    ReferenceLibrary.objects.filter(name="hostile-refs").delete()
    root = base_book(workdir / "books" / SLUG)
    outside = workdir / "outside"
    outside.mkdir(parents=True)
    (outside / "victim.py").write_text("SAFE = True\n", encoding="utf-8")
    report = book_rebuild(root=root)
    assert report["ok"], report["errors"]
    book = Book.objects.get(slug=SLUG)
    extraction_ingest(book=book, number=3, payload=EXTRACTION)
    if case.operation == "persist":
        call_command("story_system", "玄幻退婚流", "--book", SLUG, "--persist", stdout=io.StringIO())
    case.plant(root, outside)
    db_before, folder_before = database_state(), folder_state(workdir)
    out, err = io.StringIO(), io.StringIO()

    def hang(_signum, _frame):
        raise TimeoutError(f"no answer after {OP_TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(OP_TIMEOUT_S)
    try:
        call_command(*_operation(case, root, outside), stdout=out, stderr=err)
        answer, message = "rc 0", _first_issue(out.getvalue()) or (out.getvalue().strip().splitlines() or [""])[0]
    except CommandError as exc:
        answer, message = "rc 1", _first_issue(out.getvalue()) or (str(exc).splitlines() or [""])[0]
    except TimeoutError as exc:
        answer, message = "HANG", str(exc)
    except Exception as exc:  # noqa: BLE001 - the point is to report it
        answer, message = f"CRASH {type(exc).__name__}", str(exc).splitlines()[0] if str(exc) else ""
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return {
        "case": case.name,
        "what": case.what,
        "operation": case.operation,
        "answer": answer,
        "message": message[:160],
        "db_unchanged": database_state() == db_before,
        "folder_unchanged": folder_state(workdir) == folder_before,
        "expect_unchanged": case.expect_unchanged,
    }
