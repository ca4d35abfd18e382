"""The one way the product writes a file into a book folder (or any folder it was pointed at).

Every write goes through ``book_file_write``: the target must resolve inside ``root`` with no symlink on
the way (a symlink planted in a book folder must not redirect a write into site-packages), the text goes
to a temporary file in the same folder, is fsynced, then renamed over the target (atomic on POSIX: a
crash or a full disk leaves the old file or the new one, never a truncated one), and the folder entry
is fsynced too. Kernel module: no Django model imports.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from webnovel.exceptions import InvalidInput


def path_inside(*, root: Path, relative: str | Path) -> Path:
    """The absolute path of ``relative`` under ``root``; refuses ``..``, absolute paths and symlinks on the way."""
    root_abs = Path(os.path.abspath(root))
    rel = Path(relative)
    if rel.is_absolute():
        try:
            rel = Path(os.path.abspath(rel)).relative_to(root_abs)
        except ValueError:
            raise InvalidInput(
                f"拒绝写入：{relative} 不在书籍目录 {root_abs} 之内", extra={"path": str(relative)}
            ) from None
    if any(part == ".." for part in rel.parts) or not rel.parts:
        raise InvalidInput(f"拒绝写入：路径 {relative} 越出了书籍目录", extra={"path": str(relative)})
    target = root_abs / rel
    # Walk every component from root down: a symlink anywhere (a folder or the file itself) is refused,
    # so the write can never land outside the folder whatever the link points at.
    current = root_abs
    if current.is_symlink():
        raise InvalidInput(f"拒绝写入：书籍目录 {root_abs} 是符号链接", extra={"path": str(root_abs)})
    for part in rel.parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(st.st_mode):
            raise InvalidInput(
                f"拒绝写入：{current.relative_to(root_abs)} 是符号链接（可能指向书籍目录之外）",
                extra={"path": str(current.relative_to(root_abs))},
            )
    return target


def book_file_write(*, root: Path, relative: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) atomically at ``root / relative``; returns the target path.

    Raises ``InvalidInput`` (a clear Chinese message) for symlinks, paths outside ``root`` and a target that
    is not a regular file; an ``OSError`` of the disk (full, read-only) is turned into ``InvalidInput`` too,
    with the old file left intact.
    """
    target = path_inside(root=root, relative=relative)
    if target.exists() and not target.is_file():
        raise InvalidInput(f"拒绝写入：{relative} 不是普通文件", extra={"path": str(relative)})
    data = text.encode("utf-8")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if target.exists():
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
            else:
                os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise InvalidInput(
            f"写入 {relative} 失败：{exc.strerror or exc}（原文件未改动）", extra={"path": str(relative)}
        ) from None
    return target
