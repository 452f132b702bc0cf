"""Reading the files of a tree sparktop does not own: `/proc`, `/sys/fs/cgroup` and `/etc/hostname`, under
`--root DIR` a host mounted by someone else.

A file is opened

- without blocking (`O_NONBLOCK`): a FIFO planted at DIR/proc/meminfo opens at once instead of waiting for a
  writer for ever, and is then refused;
- only when it is a regular file (`fstat`): no FIFO, device or socket is read;
- never through a symbolic link at its last component (`O_NOFOLLOW`), and, with `beneath`, never through any
  link or `..` that leads out of that directory: `openat2(RESOLVE_BENEATH)` (Linux 5.6), else a walk one
  component at a time that follows no link at all. DIR/etc/hostname -> /etc/shadow is not read;
- and read to at most `limit` bytes.

Each refusal is an OSError with a readable `strerror`, so the collectors' messages say why.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import threading
from typing import Any

__all__ = ["LinkRefused", "NotRegularFile", "Refused", "open_file", "read_bytes", "resolve_in_root"]

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437  # the same number on x86_64 and aarch64 (syscalls added since 5.1 share one table)


class Refused(OSError):
    """A file that is there but is not read: what a collector treats like one it may not read."""


class NotRegularFile(Refused):
    """A FIFO, device, socket or directory where a file was expected."""


class LinkRefused(Refused):
    """A symbolic link at the last component, or a link or `..` on the way that leaves the tree."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_syscall() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    return syscall


_syscall = _load_syscall()
_HOW = _OpenHow(_FLAGS, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
_HOW_REF, _HOW_SIZE = ctypes.byref(_HOW), ctypes.sizeof(_HOW)  # made once: the scan opens a file a process
_openat2_works = _syscall is not None  # False once the kernel (or a seccomp filter) says it has none
_dirs: dict[str, int] = {}  # an O_PATH descriptor of each tree's root, opened once
_dirs_lock = threading.Lock()


def _root_fd(beneath: str) -> int:
    fd = _dirs.get(beneath)
    if fd is None:
        with _dirs_lock:
            fd = _dirs.get(beneath)
            if fd is None:
                fd = os.open(beneath, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                _dirs[beneath] = fd
    return fd


def _refuse(code: int, why: str, path: str) -> LinkRefused:
    return LinkRefused(code, why, path)


def _open_beneath(root_fd: int, relative: str, path: str, beneath: str) -> int:
    global _openat2_works
    if _openat2_works:  # never True without _syscall
        fd: int = _syscall(_SYS_OPENAT2, root_fd, relative.encode(), _HOW_REF, _HOW_SIZE)  # restype c_long
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code in (errno.ENOSYS, errno.EPERM, errno.E2BIG):  # an older kernel, or seccomp says no
            _openat2_works = False
        elif code == errno.EXDEV:
            raise _refuse(code, f"a link or .. that leads out of {beneath}: not followed", path)
        elif code == errno.ELOOP:
            raise _refuse(code, "a symbolic link: not followed", path)
        else:
            raise OSError(code, os.strerror(code), path)
    return _walk_beneath(root_fd, relative, path, beneath)


def _walk_beneath(root_fd: int, relative: str, path: str, beneath: str) -> int:
    """Without openat2: one component at a time, following no link at all (stricter than openat2, which
    follows a link that stays inside)."""
    *dirs, name = [part for part in relative.split("/") if part not in ("", ".")]
    if ".." in dirs or name == "..":
        raise _refuse(errno.EXDEV, f"a .. that may lead out of {beneath}: not followed", path)
    fd = root_fd
    try:
        for part in dirs:
            try:
                step = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link (or a file) where a directory was
                    raise _refuse(errno.ELOOP, "a symbolic link on the way: not followed", path) from None
                raise OSError(exc.errno, exc.strerror, path) from None
            if fd != root_fd:
                os.close(fd)
            fd = step
        try:
            return os.open(name, _FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(errno.ELOOP, "a symbolic link: not followed", path) from None
            raise OSError(exc.errno, exc.strerror, path) from None
    finally:
        if fd != root_fd:
            os.close(fd)


def open_file(path: str, beneath: str | None = None) -> int:
    """A descriptor of the regular file at `path` (an absolute path inside `beneath`, when given), opened as
    the module docstring says. Raises OSError (FileNotFoundError, PermissionError, NotRegularFile, ...)."""
    if beneath is not None and path.startswith(top := beneath.rstrip("/") + "/"):
        fd = _open_beneath(_root_fd(beneath), path[len(top) :], path, beneath)
    else:
        try:
            fd = os.open(path, _FLAGS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(errno.ELOOP, "a symbolic link: not followed", path) from None
            raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, "not a regular file: not read", path)
    return fd


def read_bytes(path: str, limit: int, beneath: str | None = None, chunk: int = 65536) -> bytes:
    """At most `limit` bytes of the regular file at `path` (see `open_file`), one read for a small file."""
    fd = open_file(path, beneath)
    try:
        first = min(chunk, limit)
        data = os.read(fd, first)
        if len(data) < first or len(data) >= limit:
            return data
        chunks = [data]
        total = len(data)
        while total < limit:
            more = os.read(fd, min(chunk, limit - total))
            if not more:
                break
            chunks.append(more)
            total += len(more)
        return b"".join(chunks)
    finally:
        os.close(fd)


_MAX_LINKS = 40  # as the kernel's path walk


def resolve_in_root(root: str, relative: str) -> str:
    """`relative` resolved as if `root` were `/` (openat2's RESOLVE_IN_ROOT, done by hand for a path that is
    not opened but given to another library, such as a socket's): an absolute link target starts again at
    `root`, `..` stops at it. The result holds no link (at the time of the call). Raises LinkRefused for a
    loop of links."""
    done = root.rstrip("/")
    todo = [part for part in relative.split("/") if part not in ("", ".")]
    links = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            done = done.rsplit("/", 1)[0] if len(done) > len(root.rstrip("/")) else done
            continue
        here = f"{done}/{part}"
        try:
            target = os.readlink(here)
        except OSError:  # not a link (or not there): taken as it is
            done = here
            continue
        links += 1
        if links > _MAX_LINKS:
            raise LinkRefused(errno.ELOOP, f"too many symbolic links inside {root}", here)
        if target.startswith("/"):
            done = root.rstrip("/")
        todo[:0] = [p for p in target.split("/") if p not in ("", ".")]
    return done or "/"
