"""The one way the product writes a file into a book folder (or any folder it was pointed at).

Every write goes through ``book_file_write``: the target must resolve inside ``root`` with no symlink on
the way (a symlink planted in a book folder must not redirect a write into site-packages), the text goes
to a temporary file in the same folder, is fsynced, then renamed over the target (atomic on POSIX: a
crash or a full disk leaves the old file or the new one, never a truncated one), and the folder entry
is fsynced too. Kernel module: no Django model imports.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kernel.exceptions import InvalidInput


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


@contextmanager
def _book_folder_open(*, root: Path, relative: str | Path, failed: str) -> Iterator[tuple[Path, int, str]]:
    """The folder of ``root / relative`` opened from ``root`` down with ``O_NOFOLLOW`` (missing folders are
    made): yields (target, the folder's descriptor, the file name). An ``OSError`` inside becomes
    ``InvalidInput`` naming the file (``failed`` is appended to the message of a disk error)."""
    target = path_inside(root=root, relative=relative)
    root_abs = Path(os.path.abspath(root))
    parts = target.relative_to(root_abs).parts
    nofollow_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fds: list[int] = []
    try:
        fds.append(os.open(root_abs, nofollow_dir))
        for part in parts[:-1]:
            try:
                fds.append(os.open(part, nofollow_dir, dir_fd=fds[-1]))
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=fds[-1])
                fds.append(os.open(part, nofollow_dir, dir_fd=fds[-1]))
        yield target, fds[-1], parts[-1]
    except OSError as exc:
        if exc.errno == errno.ELOOP or exc.errno == errno.ENOTDIR:
            raise InvalidInput(
                f"拒绝写入：{relative} 的路径上有符号链接或非文件夹（可能指向书籍目录之外）",
                extra={"path": str(relative)},
            ) from None
        raise InvalidInput(
            f"写入 {relative} 失败：{exc.strerror or exc}{failed}", extra={"path": str(relative)}
        ) from None
    finally:
        for fd_ in reversed(fds):
            os.close(fd_)


def book_file_write(*, root: Path, relative: str | Path, text: str | bytes, durable: bool = True) -> Path:
    """Write ``text`` (UTF-8; or ``bytes`` as they are) atomically at ``root / relative``; returns the target.

    ``durable=False`` skips both fsyncs (the file's and its folder's): still renamed into place, so a
    reader sees the old file or the new one, but a crash of the machine may leave it missing, empty or
    cut short. Only for a copy whose durable original is elsewhere (a journal attachment: its log line).

    Raises ``InvalidInput`` (a clear Chinese message) for symlinks, paths outside ``root`` and a target that
    is not a regular file; an ``OSError`` of the disk (full, read-only) is turned into ``InvalidInput`` too,
    with the old file left intact.

    The folders are walked with ``openat`` and ``O_NOFOLLOW`` from ``root`` down, and the temporary file is
    created and renamed relative to the folder's descriptor: a folder swapped for a symlink between the
    check above and the write (a race) still cannot redirect the write outside ``root``.
    """
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    with _book_folder_open(root=root, relative=relative, failed="（原文件未改动）") as (target, folder, name):
        try:
            existing = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            kind = "符号链接" if stat.S_ISLNK(existing.st_mode) else "普通文件"
            raise InvalidInput(
                f"拒绝写入：{relative} {'是' if kind == '符号链接' else '不是'}{kind}", extra={"path": str(relative)}
            )
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o644
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except FileNotFoundError:
                pass
            raise
        if durable:
            os.fsync(folder)
    return target


def file_write(*, path: Path, text: str | bytes) -> Path:
    """``book_file_write`` for a file the user named (``--output``): atomic, and a symlink at the target
    is refused; the folder it sits in is the root."""
    path = Path(os.path.abspath(path))
    # The folder the user named is taken as it resolves (``/tmp`` may itself be a link); only a link at
    # the file itself is refused.
    return book_file_write(root=path.parent.resolve(), relative=path.name, text=text)


class OutsideRoot(OSError):
    """A path that resolves outside the folder it was listed in (a symlink out of the book)."""


def regular_file_open(path: Path, *, max_bytes: int, root: Path | None = None) -> tuple[int, os.stat_result]:
    """An open descriptor of a regular file and its ``fstat``, with the refusals of ``regular_file_read``
    (outside ``root``, not a regular file, over ``max_bytes``); the caller closes it."""
    if root is not None:
        real_root = os.path.realpath(root)
        real = os.path.realpath(path)
        if real != real_root and not real.startswith(real_root + os.sep):
            raise OutsideRoot(errno.EXDEV, f"指向书籍文件夹之外（{real}），拒绝读取")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "不是普通文件（设备、管道或套接字），拒绝读取")
        if st.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"文件过大（{st.st_size} 字节，上限 {max_bytes} 字节）")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def regular_file_read(path: Path, *, max_bytes: int, root: Path | None = None) -> tuple[bytes, int]:
    """The bytes and mtime of a regular file, read at most ``max_bytes`` (+1 to detect more).

    Raises ``OSError`` with a Chinese ``strerror``: ``OutsideRoot`` when ``root`` is given and the path
    resolves outside it; EINVAL for anything but a regular file (a device such as ``/dev/zero`` reports
    size 0, a FIFO would block the open forever: opened with ``O_NONBLOCK`` and refused on ``fstat``);
    EFBIG past ``max_bytes``, checked on ``fstat`` and again while reading (a file that grows, or lies).
    """
    fd, st = regular_file_open(path, max_bytes=max_bytes, root=root)
    try:
        chunks, total = [], 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise OSError(errno.EFBIG, f"文件过大（超过上限 {max_bytes} 字节）")
        return b"".join(chunks), st.st_mtime_ns
    finally:
        os.close(fd)


def book_file_append(
    *,
    root: Path,
    relative: str | Path,
    text: str,
    tail_whole: Callable[[bytes], bool] | None = None,
    tail_max: int = 1 << 20,
) -> Path:
    """Append ``text`` (UTF-8, one or more whole lines) to ``root / relative`` and fsync it; returns the target.

    The same refusals as ``book_file_write`` (symlinks on the way or at the file, paths outside ``root``).
    An append is not a rename, so a crash mid-write can leave a torn last line. A file that does not end
    with a newline has its last line asked to ``tail_whole``: a whole record (an editor saved the file
    without its final newline) is kept and the newline added; anything else — or any line when
    ``tail_whole`` is None, or a line longer than ``tail_max`` — is a torn record its writer never
    finished (it died before the fsync returned) and is cut, so every line stays one whole record.
    """
    data = text.encode("utf-8")
    with _book_folder_open(root=root, relative=relative, failed="") as (target, folder, name):
        try:
            os.stat(name, dir_fd=folder, follow_symlinks=False)
            created = False
        except FileNotFoundError:
            created = True
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644, dir_fd=folder)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InvalidInput(f"拒绝写入：{relative} 不是普通文件", extra={"path": str(relative)})
            if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
                keep = _last_newline_end(fd, st.st_size)
                last = st.st_size - keep
                if tail_whole is not None and last <= tail_max and tail_whole(os.pread(fd, last, keep)):
                    data = b"\n" + data
                else:
                    os.ftruncate(fd, keep)
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:  # only a new file needs its folder entry made durable
            os.fsync(folder)
    return target


def _last_newline_end(fd: int, size: int) -> int:
    """The offset just after the last newline of the file (0 when it has none), read backwards in blocks."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        at = block.rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0
