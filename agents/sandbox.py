"""A rollout's workspace: every path a tool receives is resolved, checked and opened inside it.

A path is first normalised (no `..` above the root, no absolute path elsewhere)
and resolved with `realpath` (a symlink leading out is refused). It is then
opened one component at a time from a directory descriptor with `O_NOFOLLOW`,
so a symlink swapped in after the check makes the call fail instead of
following it out of the workspace.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Iterator, Literal

from agents.config import SandboxConfig

WriteMode = Literal["write", "append", "create"]  # create: fail when the file exists
Kind = Literal["file", "dir", "link", "other"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO cannot hang the open
_WRITE_FLAGS: dict[str, int] = {
    "write": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "append": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "create": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


class SandboxError(Exception):
    """A path or request the sandbox refuses; the message tells the model why and what to do."""


@dataclass(frozen=True)
class Entry:
    path: PurePosixPath  # workspace-relative
    kind: Kind
    size: int


def _kind(mode: int) -> Kind:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


class Workspace:
    """The directory a rollout owns; tools reach files only through it."""

    def __init__(self, root: Path, config: SandboxConfig | None = None):
        self.root = Path(os.path.realpath(root))
        self.config = config or SandboxConfig()
        if not self.root.is_dir():
            raise SandboxError(f"workspace {root} is not a directory")

    # ------------------------------------------------------------ checking

    def resolve(self, path: str) -> PurePosixPath:
        """The workspace-relative, symlink-free form of `path`; SandboxError when it leads outside."""
        given = PurePosixPath(path)
        if given.is_absolute():
            if not given.is_relative_to(self.root):
                raise SandboxError(f"{path!r} is outside the workspace; use a path relative to the workspace")
            given = given.relative_to(self.root)
        parts: list[str] = []
        for part in given.parts:
            if part == "..":
                if not parts:
                    raise SandboxError(f"{path!r} leaves the workspace ('..' above its root); use a path inside it")
                parts.pop()
            elif part != ".":
                parts.append(part)
        real = Path(os.path.realpath(self.root.joinpath(*parts)))
        if not real.is_relative_to(self.root):
            raise SandboxError(f"{path!r} leads outside the workspace through a symbolic link; it is not followed")
        return PurePosixPath(real.relative_to(self.root))

    # ------------------------------------------------------------ descriptors

    @contextmanager
    def _errors(self, path: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise SandboxError(f"{path!r}: a symbolic link appeared on the path; it is not followed") from exc
            raise SandboxError(f"{path!r}: {exc.strerror}") from exc

    @contextmanager
    def _dir_fd(self, parts: tuple[str, ...], create: bool = False) -> Iterator[int]:
        """A descriptor of root/parts, walked without following any symlink."""
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in parts:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except NotADirectoryError as exc:  # what O_NOFOLLOW | O_DIRECTORY reports for a symlink
                    if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                        raise OSError(errno.ELOOP, "symbolic link") from exc
                    raise
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def _parent(self, path: str, create: bool = False) -> Iterator[tuple[int, str]]:
        """(descriptor of the parent directory, final name) of a path that is not the root."""
        rel = self.resolve(path)
        if not rel.parts:
            raise SandboxError(f"{path!r} is the workspace root itself; name a file inside it")
        with self._errors(path), self._dir_fd(rel.parts[:-1], create) as fd:
            yield fd, rel.name

    @staticmethod
    def _regular(fd: int, path: str, mode: str) -> IO[bytes]:
        """A file object for `fd`, which must be a regular file (not a device, FIFO or directory)."""
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SandboxError(f"{path!r} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode)

    # ------------------------------------------------------------ operations

    @contextmanager
    def open_read(self, path: str) -> Iterator[IO[bytes]]:
        with self._parent(path) as (parent, name):
            fd = os.open(name, os.O_RDONLY | _FILE_FLAGS, dir_fd=parent)
            with self._regular(fd, path, "rb") as handle:
                yield handle

    def read_bytes(self, path: str, limit: int) -> bytes:
        with self.open_read(path) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise SandboxError(f"{path!r} is larger than the {limit:,}-byte limit of one read")
        return data

    def write_bytes(self, path: str, data: bytes, mode: WriteMode = "write") -> None:
        """Write (or append) `data`, creating parent directories as needed."""
        with self._parent(path, create=True) as (parent, name):
            fd = os.open(name, _WRITE_FLAGS[mode] | _FILE_FLAGS, 0o644, dir_fd=parent)
            with self._regular(fd, path, "wb") as handle:
                handle.write(data)

    def mkdir(self, path: str) -> None:
        rel = self.resolve(path)
        with self._errors(path), self._dir_fd(rel.parts, create=True):
            pass

    def stat(self, path: str) -> os.stat_result | None:
        """lstat of the path, or None when it does not exist."""
        rel = self.resolve(path)
        if not rel.parts:
            return os.stat(self.root)
        try:
            with self._parent(path) as (parent, name):
                return os.stat(name, dir_fd=parent, follow_symlinks=False)
        except SandboxError as exc:
            if isinstance(exc.__cause__, FileNotFoundError):
                return None
            raise

    def move(self, source: str, destination: str) -> None:
        if self.stat(destination) is not None:
            raise SandboxError(f"{destination!r} already exists; choose another destination")
        with self._parent(source) as (src_fd, src_name), self._parent(destination, create=True) as (dst_fd, dst_name):
            with self._errors(source):
                os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)

    def entries(self, path: str, depth: int) -> list[Entry]:
        """Entries under a directory, `depth` levels deep, sorted; symlinks are listed, not followed."""
        rel = self.resolve(path)
        found: list[Entry] = []

        def walk(fd: int, prefix: PurePosixPath, level: int) -> None:
            with os.scandir(fd) as it:
                items = sorted(it, key=lambda e: e.name)
            for item in items:
                st = item.stat(follow_symlinks=False)
                kind = _kind(st.st_mode)
                found.append(Entry(prefix / item.name, kind, st.st_size))
                if kind == "dir" and level < depth:
                    child = os.open(item.name, _DIR_FLAGS, dir_fd=fd)
                    try:
                        walk(child, prefix / item.name, level + 1)
                    finally:
                        os.close(child)

        with self._errors(path), self._dir_fd(rel.parts) as fd:
            walk(fd, rel, 1)
        return found
