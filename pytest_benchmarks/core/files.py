"""Files that readers may see at any moment: written whole, or not at all."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str | bytes, fsync: bool = True) -> None:
    """Write ``text`` (or bytes) to a temporary file beside ``path``, then rename it over it.

    Readers see the old file or the new one, never a mix; a failed write leaves no temporary
    file. ``fsync`` makes the new content durable before the rename.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        binary = isinstance(text, bytes)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            handle.write(text)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp's 0600 is for the temporary name only
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path) -> None:
    """Raise OSError when ``path`` could not be written, before any work that would fill it.

    The nearest existing directory is probed by creating (and removing) a file in it: only an
    attempt sees a read-only filesystem, or a directory root may not write to (``/proc``).
    """
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link (to {os.readlink(path)}); give the file itself")
    if path.is_dir():
        raise OSError(f"{path} is a directory")
    if path.exists() and not path.is_file():
        raise OSError(f"{path} is not a regular file; give a new path or a regular file")
    if path.exists() and not os.access(path, os.W_OK):
        raise OSError(f"{path} is not writable")
    existing = path.parent
    while not existing.exists() and not existing.is_symlink():
        existing = existing.parent
    if not existing.is_dir():
        raise OSError(f"{existing} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=existing)
    except OSError as exc:
        raise OSError(f"directory {existing} is not writable ({exc.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def current_umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def parts_dir(record_dir: Path) -> Path:
    """Where a run recording into ``record_dir`` keeps its part files until the dataset is built."""
    return record_dir.with_name(record_dir.name + ".parts")


def file_hash(path: Path) -> str:
    """The first 12 hex digits of a file's SHA-256: identifies a local checkpoint."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:12]


def lock_file(target: Path) -> Path:
    """Where a session's lock on the output ``target`` lives (``engine.output_lock``)."""
    return target.with_name(target.name + ".lock")


def owner_file(target: Path) -> Path:
    """Where the session holding ``target``'s lock writes its PID (for the refusal's words)."""
    return lock_file(target).with_name(lock_file(target).name + ".owner")


def read_owner(target: Path) -> int | None:
    """The PID in ``target``'s owner file, if it holds one."""
    try:
        return int(owner_file(target).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def lock_holder(target: Path) -> int | None:
    """The PID of a live session that holds ``target``'s lock (0 when it wrote none); None when
    none does."""
    from filelock import FileLock, Timeout

    if not lock_file(target).is_file():
        return None  # no session ever locked it (and none is made here)
    lock = FileLock(str(lock_file(target)), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return read_owner(target) or 0
    except OSError:
        return None
    lock.release()
    return None
