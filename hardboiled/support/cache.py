"""A content-addressed cache of equality-saturation results.

The key hashes everything that can change what egglog extracts: the program
it runs (rule files, hardware facts, the encoded statements, the schedule),
the roots, hardboiled's own code (every source, rule file, grammar and
runtime header: ``code_identity``, so that an entry made by other code is
never served) and egglog's build. Entries are JSON files
written atomically (a temporary file, then ``os.replace``), so concurrent
runs sharing a cache directory never see a half-written entry. An entry is
checked before it is served (``ResultCache``): a corrupt, wrong-shaped or
unreadable one is a miss, and so is one that another user could have
written. Inputs and schedules are untrusted, and so is a cache directory
others can write (docs/security.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path

from hardboiled.support import identity
from hardboiled.support.identity import code_identity, egglog_identity, path_problem
from hardboiled.support.version import VERSION

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:
    from typing import Any

    Shape = Any
    """What ``matches`` checks a decoded JSON value against: a type; a list of
    one shape (every item); a dict of shapes (exactly those keys, or any string
    keys for ``{"*": shape}``); a tuple of alternative shapes; None."""

CACHE_FORMAT = 9
"""Bumped whenever the stored layout or its meaning changes."""


def default_cache_dir() -> Path:
    return Path(identity.default_cache_dir())


def cache_key(texts: list[str], roots: list[str]) -> str:
    """Hash of the program texts (not their file names: a schedule read from
    another path is the same schedule), hardboiled's code and egglog's build."""
    digest = hashlib.sha256()
    header = {"format": CACHE_FORMAT, "hardboiled": VERSION, "code": code_identity(), "egglog": egglog_identity(),
              "roots": roots}
    digest.update(json.dumps(header, sort_keys=True).encode())
    for text in texts:
        digest.update(b"\0" + str(len(text)).encode() + b"\0" + text.encode())
    return digest.hexdigest()


def cache_directory_problem(directory: Path) -> str | None:
    """Why ``directory`` must not be used as a cache, or None (also when it
    does not exist yet: it is then created private, mode 0700)."""
    if not os.path.lexists(directory):
        return None
    problem = path_problem(directory)
    if problem is None and not directory.is_dir():
        return "is not a directory"
    return problem




def matches(value: Any, shape: Shape) -> bool:
    if shape is None:
        return value is None
    if isinstance(shape, tuple):
        return any(matches(value, alternative) for alternative in shape)
    if isinstance(shape, list):
        return isinstance(value, list) and all(matches(item, shape[0]) for item in value)
    if isinstance(shape, dict) and set(shape) == {"*"}:
        return isinstance(value, dict) and all(isinstance(k, str) and matches(v, shape["*"]) for k, v in value.items())
    if isinstance(shape, dict):
        return (isinstance(value, dict) and set(value) == set(shape)
                and all(matches(value[name], part) for name, part in shape.items()))
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, shape)


class ResultCache:
    """Entries are JSON files, each holding its key, its value, and a
    SHA-256 checksum of both. An entry is served only if it is intact, has
    the shape its reader expects, and neither it nor its directories could
    have been put there by another user (``path_problem``); anything else
    is a miss, and the entry is replaced by the next result."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.hits = 0
        self.misses = 0

    def entry_path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, shape: Shape = dict) -> Any:
        value = self._read(key, shape)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def _read(self, key: str, shape: Shape) -> Any:
        path = self.entry_path(key)
        if path_problem(self.directory) or path_problem(path.parent):
            return None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            status = os.fstat(fd)
            if status.st_uid != os.geteuid() or status.st_mode & 0o022 or not stat.S_ISREG(status.st_mode):
                return None
            with os.fdopen(fd, "rb") as handle:
                fd = -1
                entry = json.loads(handle.read())
        except (OSError, ValueError):
            return None
        finally:
            if fd >= 0:
                # A signal between fdopen and `fd = -1` leaves the file
                # closed by the handle: the signal's exception, not EBADF,
                # is what must go on.
                with contextlib.suppress(OSError):
                    os.close(fd)
        if (not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT or entry.get("key") != key
                or entry.get("checksum") != _checksum(key, entry.get("value"))):
            return None
        value = entry["value"]
        return value if matches(value, shape) else None

    def put(self, key: str, value: Any) -> None:
        path = self.entry_path(key)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if path_problem(self.directory):
                return
            path.parent.mkdir(mode=0o700, exist_ok=True)
            if path_problem(path.parent):
                return
            import tempfile  # here: a cache hit never writes

            fd, tmp = tempfile.mkstemp(prefix=".entry-", suffix=".tmp", dir=path.parent)
        except OSError:
            # A cache that cannot be written is just a cache that misses.
            return
        entry = {"format": CACHE_FORMAT, "key": key, "value": value, "checksum": _checksum(key, value)}
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(entry, handle, sort_keys=True)
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError):
            Path(tmp).unlink(missing_ok=True)


def _checksum(key: str, value: Any) -> str:
    return hashlib.sha256(json.dumps([key, value], sort_keys=True).encode()).hexdigest()
