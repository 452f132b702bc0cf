"""The one way sparktop creates a file or a directory of its own (the action log, the footprint database, the
black box, recordings, the history `B` writes, guard.json, saved plans).

sparktop often runs as root, and what it writes holds command lines: every file is created 0600 in a 0700
directory, opened without following a symlink (O_NOFOLLOW: another user could otherwise point root's writes
at any file), created with O_EXCL where it must be new, and refused when it belongs to another user or is
not a regular file. A refusal is an `UnsafeFileError` (an OSError) whose text is one readable line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import IO, Literal

FILE_MODE = 0o600
DIR_MODE = 0o700

OpenMode = Literal["new", "append", "overwrite", "existing"]


class UnsafeFileError(OSError):
    """A path sparktop will not write through: a symlink, another user's file, not a regular file."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(errno.EPERM, why, str(path))
        self.why = why

    def __str__(self) -> str:
        return f"{self.filename}: {self.why}"


def make_dirs(path: str | os.PathLike[str]) -> Path:
    """Create `path` and every missing parent 0700 (Path.mkdir gives the parents the umask's mode)."""
    path = Path(path)
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked like any other
            os.mkdir(directory, DIR_MODE)
    return path


def private_dir(path: str | os.PathLike[str]) -> Path:
    """A directory of sparktop's own (the state dir, the black box's): created 0700 if missing; an existing
    one must be a directory of this user (a symlink to one is followed: ~/.local/state may live elsewhere)
    and loses group/other access. A sticky directory (/tmp) is used as it is: files are made there with
    O_EXCL and O_NOFOLLOW, so a name another user planted is refused, never followed."""
    path = make_dirs(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise UnsafeFileError(path, "could not be created") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFileError(path, "not a directory")
    if info.st_mode & stat.S_ISVTX:
        return path  # a shared drop zone such as /tmp, named by the user: never chmod it; O_EXCL protects
    if info.st_uid != os.geteuid():
        raise UnsafeFileError(path, f"the directory belongs to another user (uid {info.st_uid}); not used")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)  # made by an older sparktop (0755)
    return path


def open_private(path: str | os.PathLike[str], mode: OpenMode = "new", *, own_dir: bool = True) -> int:
    """An fd open for writing at `path`, created 0600. `new`: the file must not exist (O_EXCL); `append`
    and `overwrite` (truncate) create it or reuse one of this user's regular files; `existing` opens it for
    reading and writing and creates it if missing. Never through a symlink. `own_dir`: the directory is
    sparktop's (checked and made 0700, see `private_dir`); False: one the user named (a recording, a saved
    plan), only created 0700 where missing."""
    path = Path(path)
    if own_dir:
        private_dir(path.parent)
    else:
        make_dirs(path.parent)
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= {
        "new": os.O_WRONLY | os.O_EXCL,
        "append": os.O_WRONLY | os.O_APPEND,
        "overwrite": os.O_WRONLY,  # truncated below, once the file is known to be ours
        "existing": os.O_RDWR,
    }[mode]
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(path, "it is a symbolic link (not followed)") from None
        if exc.errno == errno.EEXIST and os.path.islink(path):
            raise UnsafeFileError(path, "it is a symbolic link (not followed)") from None
        raise
    try:
        info = os.fstat(fd)
        check_own_file(path, info)
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)  # made by an older sparktop (0644)
        if mode == "overwrite":
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private_file(
    path: str | os.PathLike[str], mode: OpenMode = "new", *, text: bool = True, own_dir: bool = True
) -> IO:
    """`open_private` as a file object (text in UTF-8, or binary)."""
    fd = open_private(path, mode, own_dir=own_dir)
    if text:
        return os.fdopen(fd, "w", encoding="utf-8")
    return os.fdopen(fd, "wb")


def check_own_file(path: str | os.PathLike[str], info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFileError(path, "not a regular file")
    if info.st_uid != os.geteuid():
        raise UnsafeFileError(path, f"it belongs to another user (uid {info.st_uid}), not written")


def check_not_planted(path: str | os.PathLike[str]) -> None:
    """For files another library opens by name (SQLite and its -wal/-shm/-journal): a missing file is fine;
    one that exists must be this user's regular file, not a symlink."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFileError(path, "it is a symbolic link (not followed)")
    check_own_file(path, info)
