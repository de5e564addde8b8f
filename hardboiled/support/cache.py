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

import marshal
import os
import stat

from hardboiled.support import identity
from hardboiled.support.fileio import open_new_private
from hardboiled.support.identity import code_identity, egglog_identity, path_problem
from hardboiled.support.version import VERSION

# json and pathlib are loaded where used (hashes through support/digest.py): a direct answer
# (cli/direct.py) reads its record through this module, before anything
# else loads, and they cost a start as much as Python's own (9 ms).
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    Shape = Any
    """What ``matches`` checks a decoded JSON value against: a type; a list of
    one shape (every item); a dict of shapes (exactly those keys, or any string
    keys for ``{"*": shape}``); a tuple of alternative shapes; None."""

CACHE_FORMAT = 9
"""Bumped whenever the stored layout or its meaning changes."""


def default_cache_dir() -> Path:
    from pathlib import Path

    return Path(identity.default_cache_dir())


def cache_key(texts: list[str], roots: list[str]) -> str:
    """Hash of the program texts (not their file names: a schedule read from
    another path is the same schedule), hardboiled's code by content and
    egglog's build."""
    import json

    from hardboiled.support.digest import new_sha256

    digest = new_sha256()
    header = {"format": CACHE_FORMAT, "hardboiled": VERSION, "code": code_identity(), "egglog": egglog_identity(),
              "roots": roots}
    digest.update(json.dumps(header, sort_keys=True).encode())
    for text in texts:
        digest.update(b"\0" + str(len(text)).encode() + b"\0" + text.encode())
    return digest.hexdigest()


def cache_directory_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why ``directory`` must not be used as a cache, or None (also when it
    does not exist yet: it is then created private, mode 0700)."""
    if not os.path.lexists(directory):
        return None
    problem = path_problem(directory)
    if problem is None and not os.path.isdir(directory):
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

    suffix = ".json"

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = os.fspath(directory)
        self.hits = 0
        self.misses = 0

    def entry_path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], f"{key}{self.suffix}")

    def get(self, key: str, shape: Shape = dict) -> Any:
        value = self._read(key, shape)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def _read(self, key: str, shape: Shape) -> Any:
        path = self.entry_path(key)
        if path_problem(self.directory) or path_problem(os.path.dirname(path)):
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
                data = handle.read()
        except OSError:
            return None
        finally:
            if fd >= 0:
                # A signal between fdopen and `fd = -1` leaves the file
                # closed by the handle: the signal's exception, not EBADF,
                # is what must go on.
                try:
                    os.close(fd)
                except OSError:
                    pass
        found = self._decoded(data, key)
        if found is None:
            return None
        (value,) = found
        return value if matches(value, shape) else None

    def put(self, key: str, value: Any) -> None:
        try:
            data = self._encoded(key, value)
        except (TypeError, ValueError):
            return  # a value the encoding cannot hold: nothing is cached
        path = self.entry_path(key)
        parent = os.path.dirname(path)
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            if path_problem(self.directory):
                return
            os.makedirs(parent, mode=0o700, exist_ok=True)
            if path_problem(parent):
                return
            # Not tempfile.mkstemp: a whole-file hit writes its direct-mode
            # record through here, and tempfile loads shutil and random.
            tmp = os.path.join(parent, f".entry-{os.urandom(8).hex()}.tmp")
            fd = open_new_private(tmp)
        except OSError:
            # A cache that cannot be written is just a cache that misses.
            return
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def _encoded(self, key: str, value: Any) -> bytes:
        import json

        entry = {"format": CACHE_FORMAT, "key": key, "value": value, "checksum": _checksum(key, value)}
        return json.dumps(entry, sort_keys=True).encode()

    def _decoded(self, data: bytes, key: str) -> tuple[Any] | None:
        """``(value,)`` of an intact entry for ``key``, else None."""
        import json

        try:
            entry = json.loads(data)
        except ValueError:
            return None
        if (not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT or entry.get("key") != key
                or entry.get("checksum") != _checksum(key, entry.get("value"))):
            return None
        return (entry["value"],)


class RecordCache(ResultCache):
    """A ``ResultCache`` whose entries are ``marshal``'s encoding, read
    without loading ``json`` (cli/direct.py's records, read before anything
    else loads): a checksum of the encoded bytes (support/digest.py's
    BLAKE2b), a newline, then the format, key and value. Tuples are stored
    as lists, as JSON stores them, so that an entry reads back with the
    shape it was checked for."""

    suffix = ".record"

    def _encoded(self, key: str, value: Any) -> bytes:
        from hardboiled.support.digest import hex_content_digest

        payload = marshal.dumps((CACHE_FORMAT, key, _as_lists(value)))
        return hex_content_digest(payload).encode() + b"\n" + payload

    def _decoded(self, data: bytes, key: str) -> tuple[Any] | None:
        from hardboiled.support.digest import hex_content_digest

        checksum, newline, payload = data.partition(b"\n")
        if not newline or checksum != hex_content_digest(payload).encode():
            return None
        try:
            entry = marshal.loads(payload)
        except (EOFError, ValueError, TypeError):
            return None
        if not isinstance(entry, tuple) or len(entry) != 3 or entry[0] != CACHE_FORMAT or entry[1] != key:
            return None
        return (entry[2],)


def _as_lists(value: Any) -> Any:
    """``value`` with every tuple a list, as JSON would read it back."""
    if isinstance(value, (list, tuple)):
        return [_as_lists(item) for item in value]
    if isinstance(value, dict):
        return {name: _as_lists(item) for name, item in value.items()}
    return value


def _checksum(key: str, value: Any) -> str:
    import json

    from hardboiled.support.digest import hex_digest

    return hex_digest(json.dumps([key, value], sort_keys=True).encode())
