"""The one write helper and the bounded reader (issue 19 items 3, 6, 7): planted symlinks, special
files, a full disk. Nothing is written outside the folder; nothing outside it is read."""

import errno
import os
import threading
from pathlib import Path

import pytest

from bookfiles.parser import ReadLimits, book_files_list, book_read
from kernel import safefs
from kernel.exceptions import InvalidInput
from kernel.safefs import book_file_write, regular_file_read


@pytest.fixture
def root(tmp_path) -> Path:
    book = tmp_path / "book"
    book.mkdir()
    return book


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim.py").write_text("SAFE = True\n", encoding="utf-8")
    return folder


def test_writes_atomically_and_keeps_the_mode(root):
    target = book_file_write(root=root, relative="a/b/c.md", text="一\n")
    assert target == root / "a" / "b" / "c.md" and target.read_text(encoding="utf-8") == "一\n"
    os.chmod(target, 0o600)
    book_file_write(root=root, relative="a/b/c.md", text=b"\xe4\xba\x8c\n")
    assert target.read_text(encoding="utf-8") == "二\n" and (target.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.md"]  # no temp file left


def test_a_symlinked_file_pointing_outside_is_refused(root, outside):
    (root / "MASTER.md").symlink_to(outside / "victim.py")
    with pytest.raises(InvalidInput) as exc:
        book_file_write(root=root, relative="MASTER.md", text="import os\n")
    assert exc.value.message == "拒绝写入：MASTER.md 是符号链接（可能指向书籍目录之外）"
    assert (outside / "victim.py").read_text(encoding="utf-8") == "SAFE = True\n"


def test_a_symlinked_folder_pointing_outside_is_refused(root, outside):
    (root / ".story-system").symlink_to(outside)
    with pytest.raises(InvalidInput, match=r"拒绝写入：\.story-system 是符号链接"):
        book_file_write(root=root, relative=".story-system/victim.py", text="import os\n")
    assert sorted(p.name for p in outside.iterdir()) == ["victim.py"]
    assert (outside / "victim.py").read_text(encoding="utf-8") == "SAFE = True\n"


@pytest.mark.parametrize("relative", ["../outside/victim.py", "/etc/passwd", "a/../../x"])
def test_paths_leaving_the_root_are_refused(root, outside, relative):
    with pytest.raises(InvalidInput, match="拒绝写入"):
        book_file_write(root=root, relative=relative, text="x")
    assert (outside / "victim.py").read_text(encoding="utf-8") == "SAFE = True\n"


def test_a_folder_swapped_for_a_symlink_after_the_check_still_cannot_redirect(root, outside, monkeypatch):
    (root / "sub").mkdir()
    real_check = safefs.path_inside

    def check_then_swap(**kwargs):
        target = real_check(**kwargs)
        (root / "sub").rmdir()
        (root / "sub").symlink_to(outside)  # the race: after the check, before the write
        return target

    monkeypatch.setattr(safefs, "path_inside", check_then_swap)
    with pytest.raises(InvalidInput, match="符号链接"):
        book_file_write(root=root, relative="sub/victim.py", text="import os\n")
    assert (outside / "victim.py").read_text(encoding="utf-8") == "SAFE = True\n"


def test_a_full_disk_leaves_the_old_file_whole(root, monkeypatch):
    book_file_write(root=root, relative="MASTER_SETTING.md", text="旧内容\n" * 100)

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safefs.os, "fsync", no_space)
    with pytest.raises(InvalidInput) as exc:
        book_file_write(root=root, relative="MASTER_SETTING.md", text="新内容\n" * 100)
    assert exc.value.message == "写入 MASTER_SETTING.md 失败：No space left on device（原文件未改动）"
    assert (root / "MASTER_SETTING.md").read_text(encoding="utf-8") == "旧内容\n" * 100
    assert [p.name for p in root.iterdir()] == ["MASTER_SETTING.md"]


# --- the bounded reader ---------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_not_read(device):
    if not os.path.exists(device):
        pytest.skip(f"{device} absent")
    with pytest.raises(OSError) as exc:
        regular_file_read(Path(device), max_bytes=1024)
    assert exc.value.strerror == "不是普通文件（设备、管道或套接字），拒绝读取"


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = {}

    def read():
        try:
            regular_file_read(fifo, max_bytes=1024)
        except OSError as exc:
            result["error"] = exc.strerror

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert result == {"error": "不是普通文件（设备、管道或套接字），拒绝读取"}


def test_the_read_is_bounded_even_when_fstat_understates(tmp_path, monkeypatch):
    path = tmp_path / "big.md"
    path.write_bytes(b"x" * 5000)
    real_fstat = os.fstat

    def lying_fstat(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 0, *st[7:]))

    monkeypatch.setattr(safefs.os, "fstat", lying_fstat)
    with pytest.raises(OSError) as exc:
        regular_file_read(path, max_bytes=1000)
    assert exc.value.errno == errno.EFBIG
    assert regular_file_read(path, max_bytes=5000)[0] == b"x" * 5000


def _book(root: Path) -> Path:
    (root / "定稿" / "正文").mkdir(parents=True)
    (root / "book.yaml").write_text("slug: links\ntitle: 链接\n", encoding="utf-8")
    (root / "定稿" / "正文" / "第0001章.md").write_text("---\ntitle: 一\n---\n正文\n", encoding="utf-8")
    return root


def test_a_chapter_symlinked_to_etc_passwd_is_an_outside_book_error(root):
    _book(root)
    (root / "定稿" / "正文" / "第0002章.md").symlink_to("/etc/passwd")
    parsed = book_read(root)
    assert [(i.code, i.file, i.level) for i in parsed.errors] == [("outside_book", "定稿/正文/第0002章.md", "error")]
    assert "WEBNOVEL_BOOK_LINKS_OUTSIDE=1" in parsed.errors[0].message
    assert [c.number for c in parsed.chapters] == [1]


def test_folder_links_out_of_the_book_are_not_walked(root, outside):
    _book(root)
    (root / "线索").symlink_to(outside)
    os.symlink("/proc/1/cwd", root / "设定")
    listing = book_files_list(root)
    assert ("线索", "outside_book") in listing and ("设定", "outside_book") in listing
    assert [c.code for c in book_read(root).errors] == ["outside_book", "outside_book"]


def test_links_inside_the_book_are_still_fine(root):
    _book(root)
    (root / "定稿" / "正文" / "第0002章.md").symlink_to(root / "定稿" / "正文" / "第0001章.md")
    parsed = book_read(root)
    assert parsed.errors == []
    assert sorted(c.number for c in parsed.chapters) == [1, 2]


def test_links_outside_are_read_when_explicitly_allowed(root, outside):
    _book(root)
    (outside / "第0002章.md").write_text("---\ntitle: 外\n---\n外面\n", encoding="utf-8")
    (root / "定稿" / "正文" / "第0002章.md").symlink_to(outside / "第0002章.md")
    parsed = book_read(root, limits=ReadLimits(links_outside=True))
    assert not parsed.errors and [c.title for c in parsed.chapters] == ["一", "外"]


def test_a_fifo_chapter_is_unreadable_not_a_hang(root):
    _book(root)
    os.mkfifo(root / "定稿" / "正文" / "第0002章.md")
    parsed = book_read(root)
    assert [(i.code, i.file) for i in parsed.errors] == [("unreadable", "定稿/正文/第0002章.md")]
    assert "不是普通文件" in parsed.errors[0].message


def test_a_non_utf8_file_name_is_a_clear_error(root):
    _book(root)
    name = os.fsencode(str(root / "定稿" / "正文")) + b"/\xe7\xac\xac0003\xe7\xab\xa0\xff.md"  # 第0003章<0xff>.md
    with open(name, "wb") as fh:
        fh.write(b"---\ntitle: x\n---\n")
    parsed = book_read(root)
    assert [(i.code, i.file) for i in parsed.errors] == [("bad_name", "定稿/正文/第0003章\\xff.md")]
