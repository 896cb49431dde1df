"""The judge's verdict cache: SQLite on local or network filesystems, one row per request key."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator

from lmms_eval_earthsci.core.judge.config import JudgeResult

logger = logging.getLogger("lmms_eval_earthsci")

# --------------------------------------------------------------------------- cache


# Filesystems on which SQLite's WAL mode is unsafe (its shared-memory index needs one host's mmap):
# there the cache uses the rollback journal, which relies on POSIX locks (NFSv4, or v3 with lockd).
_NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p", "afs", "fuse.sshfs", "fuse.glusterfs", "fuse.ceph", "wekafs")
_OPEN_RETRY_SECONDS = 60.0


def filesystem_type(path: str) -> str | None:
    """The type of the filesystem holding ``path`` (longest mount point in /proc/mounts), or None."""
    try:
        with open("/proc/mounts") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return None
    real = os.path.realpath(path)
    best, kind = "", None
    for point, fstype in mounts:
        point = point.replace("\\040", " ")
        # >=: of stacked mounts on one point (autofs, then the NFS it mounts) the last one is in effect
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def journal_mode_for(directory: str, requested: str | None = None) -> str:
    if requested:
        mode = requested.strip().lower()
        if mode not in ("wal", "delete", "truncate", "persist"):
            raise ValueError(f"EARTHSCI_JUDGE_CACHE_JOURNAL must be wal or delete, not {requested!r}")
        return mode
    return "delete" if (filesystem_type(directory) or "") in _NETWORK_FS else "wal"


@contextlib.contextmanager
def _exclusive(lock_path: str) -> Iterator[None]:
    """An exclusive advisory lock on ``lock_path`` for the block (``flock``; on filesystems without
    it, the block runs unlocked and the busy-retry below is what keeps opening safe)."""
    fd = None
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        import fcntl  # noqa: PLC0415 - fcntl is POSIX-only: without it the block runs unlocked

        fcntl.flock(fd, fcntl.LOCK_EX)
    except (OSError, ImportError):
        pass
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


def _is_busy(exc: sqlite3.Error) -> bool:
    msg = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)


# a reply's reasoning_content is stored beside its token counts (the cache's `usage` column)
REASONING_KEY = "_reasoning_content"


class VerdictCache:
    """SQLite, one row per request key; replies are committed in batches within ``FLUSH_SECONDS`` of
    arriving, so a run killed mid-judging keeps everything obtained up to then.

    Opening is safe for any number of processes at once (all ranks of every node sharing a home
    directory): the file is created and its journal mode set under an exclusive lock on a sidecar
    ``.lock`` file, with a busy timeout and retries on top. WAL on local disks; the rollback journal on
    network filesystems, where WAL is unsafe (:func:`journal_mode_for`)."""

    def __init__(self, directory: str, journal: str | None = None):
        self.path = os.path.join(directory, "verdicts.sqlite3")
        self.journal = journal_mode_for(directory, journal)
        self._lock = threading.Lock()
        self._pending: dict[str, tuple] = {}
        self._pending_lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._wake = threading.Event()
        self._closed = False
        self.on_error: Callable[[BaseException], None] | None = None
        os.makedirs(directory, exist_ok=True)
        deadline = time.monotonic() + _OPEN_RETRY_SECONDS
        delay = 0.05
        while True:
            try:
                self._conn = self._open()
                break
            except sqlite3.Error as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, 1.0)

    def _open(self) -> sqlite3.Connection:
        with _exclusive(self.path + ".lock"):
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=_OPEN_RETRY_SECONDS)
            try:
                conn.execute(f"PRAGMA busy_timeout={int(_OPEN_RETRY_SECONDS * 1000)}")
                mode = conn.execute(f"PRAGMA journal_mode={self.journal}").fetchone()[0]
                self.journal = str(mode).lower()
                # NORMAL: a commit survives the process being killed (not a power cut), without an fsync each
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, content TEXT, usage TEXT, created REAL)")
                conn.commit()
            except BaseException:
                conn.close()
                raise
        return conn

    # replies are committed in small batches by one writer thread, at most this long after they arrive:
    # one transaction per batch instead of one per reply keeps the cache off the pass's critical path
    FLUSH_SECONDS = 0.02

    def get(self, key: str) -> JudgeResult | None:
        with self._pending_lock:
            row = self._pending.get(key)
        if row is None:
            with self._lock:
                row = self._conn.execute("SELECT key, content, usage FROM verdicts WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        usage = json.loads(row[2] or "{}")
        reasoning = usage.pop(REASONING_KEY, None)
        return JudgeResult(row[1], cached=True, usage=usage, reasoning=reasoning)

    def put(self, key: str, result: JudgeResult) -> None:
        with self._pending_lock:
            usage = {**result.usage, REASONING_KEY: result.reasoning} if result.reasoning else result.usage
            self._pending[key] = (key, result.content, json.dumps(usage), time.time())
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="earthsci-judge-cache", daemon=True)
                self._writer.start()
        self._wake.set()

    def _write_loop(self) -> None:
        while not self._closed:
            self._wake.wait()
            time.sleep(self.FLUSH_SECONDS)  # let a batch gather
            self._wake.clear()
            try:
                self.flush()
            except Exception as exc:  # reported once by the client; the rows stay readable from memory
                if self.on_error is not None:
                    self.on_error(exc)
                return

    def flush(self) -> None:
        """Commit every reply received so far (also called by :meth:`close`)."""
        with self._pending_lock:
            rows = list(self._pending.values())
        if not rows:
            return
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)", rows)
            self._conn.commit()
        with self._pending_lock:
            for row in rows:
                if self._pending.get(row[0]) is row:
                    del self._pending[row[0]]

    def close(self) -> None:
        try:
            self.flush()
        except sqlite3.Error:
            pass
        self._closed = True
        self._wake.set()
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass

