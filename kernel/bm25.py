"""BM25, shared by the two indexes the product keeps: the reference library's BM25F search
(storysystem/search.py) and the memory's chunk recall (memory/retrieval.py).

Both score with the same two formulas (``idf``, ``length_norm``: one expression each, so a score is the
same float whichever index computes it) and keep their built index on disk between processes through the
same file cache (``IndexFile``): a folder from one setting (``None``: memory only), file names keyed by the
database (two databases may hold different rows under one folder, and ids are reused from one database to
the next), a frame (magic, CRC32, size) that a damaged or truncated file fails, a write to a temporary file
per process and thread renamed over the target (two workers saving at once never rename a half-written
file), and the older versions of the same file removed. Bodies are marshal of plain values, never pickle:
the folder is one a user can write.

What stays in each app is what differs: the reference index stores final BM25F contributions per (term,
entry), since its statistics are fixed per library version; the memory index stores term frequencies per
segment of chapters and scores at query time, since its statistics are over the whole book.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import math
import os
import struct
import threading
import zlib
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)


def idf(n: int, df: int) -> float:
    """BM25's inverse document frequency of a term found in ``df`` of ``n`` documents (never negative)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def length_norm(length: float, avg: float, b: float) -> float:
    """BM25's length normalisation of a document (or field) of ``length`` terms against the average ``avg``."""
    return 1 - b + b * length / avg


class IndexFile:
    """The disk cache of one kind of index. ``setting`` names the folder's setting (read at each call:
    tests and admins change it); ``kind`` starts every file name (two kinds never remove each other's
    files, even in one folder); ``magic`` (8 bytes) names the body's layout, so a change of layout never
    reads an older file; ``label`` names the cache in the log, in Chinese."""

    def __init__(self, *, setting: str, kind: str, magic: bytes, label: str) -> None:
        if len(magic) != 8:
            raise ValueError("magic must be 8 bytes")
        self.setting, self.kind, self.magic, self.label = setting, kind, magic, label

    def folder(self) -> Path | None:
        configured = getattr(settings, self.setting)
        return Path(configured) if configured else None

    def family(self, *key: object) -> str:
        """The name every version of one file shares: the kind, then a hash of the database and ``key``."""
        db = settings.DATABASES["default"]
        parts = (db.get("ENGINE"), db.get("HOST"), db.get("PORT"), db.get("NAME"), *key)
        return f"{self.kind}-{hashlib.sha1('|'.join(map(str, parts)).encode()).hexdigest()[:16]}-"

    def path(self, *key: object, version: object) -> Path | None:
        """The file of the ``version`` of the index named by ``key``; None when no folder is set."""
        folder = self.folder()
        if folder is None:
            return None
        stamp = hashlib.sha1(f"{self.magic!r}|{marshal.version}|{version}".encode()).hexdigest()[:20]
        return folder / f"{self.family(*key)}{stamp}.marshal"

    def read(self, path: Path) -> memoryview | None:
        """The body of ``path``: None when the file is absent, or damaged (logged: the caller rebuilds)."""
        try:
            data = path.read_bytes()
            if data[: len(self.magic)] != self.magic:
                raise ValueError("not an index file")
            crc, size = struct.unpack_from("<II", data, len(self.magic))
            body = memoryview(data)[len(self.magic) + 8 :]
            if len(body) != size or zlib.crc32(body) != crc:
                raise ValueError("truncated or damaged")
            return body
        except FileNotFoundError:
            return None
        except (OSError, ValueError, struct.error):
            self.damaged(path)
            return None

    def damaged(self, path: Path) -> None:
        """Log a file whose frame held but whose body did not decode (or whose frame failed)."""
        logger.warning("%s无法读取，重建：%s", self.label, path, exc_info=True)

    def write(self, path: Path, body: bytes) -> None:
        """Frame ``body`` into ``path`` and remove the older versions of that file (best effort: a read
        never fails for a cache it cannot write)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            family = path.name[: path.name.rindex("-") + 1]
            for old in path.parent.glob(f"{family}*.marshal"):
                if old != path:
                    old.unlink(missing_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(self.magic + struct.pack("<II", zlib.crc32(body), len(body)) + body)
            tmp.replace(path)
        except (OSError, ValueError):
            logger.warning("无法写入%s %s", self.label, path, exc_info=True)
