"""Which hardboiled this is, and where its caches live, with the standard
library's lightest modules alone: the ``hardboiled`` command asks before
anything else loads (cli/client.py names the compile server's socket by
it, cli/direct.py keys its records by it), and support/cache.py keys
results by it.

* ``code_signature``: every Python source by name, size and modification
  time, as Python's bytecode cache judges a source fresh (so it names the
  code that runs), without reading it; every rule file
  (HARDBOILED_RULES_DIR's too), grammar and runtime header by its bytes
  (100 KB, read at run time: an edit that keeps a file's size and time, as
  ``cp -p``, ``rsync -a`` and tar make, must change it);
* ``code_identity``: the same files by content;
* ``egglog_identity``: egglog's build, the size and time of its compiled
  module, found without importing egglog.

Each is worked out once per process and HARDBOILED_RULES_DIR, until
``forget`` (the compile server's worker is a copy of a process that may
have worked them out for other code).
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:
    from collections.abc import Callable

CODE_SUFFIXES = (".py", ".egg", ".lark", ".h")
_known: dict[tuple[str, str | None], str] = {}


def default_cache_dir() -> str:
    override = os.environ.get("HARDBOILED_CACHE_DIR")
    if override:
        return override
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hardboiled")


def path_problem(path: str | os.PathLike[str]) -> str | None:
    """Why another user could have put ``path`` (a cache directory, or a
    file or directory in it) there, or None: a symbolic link, something
    owned by another user, or something others may write. A cache entry
    is trusted as a compile result, so none of these is read."""
    try:
        status = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link"
    if status.st_uid != os.geteuid():
        return "belongs to another user"
    if status.st_mode & 0o022:
        return "is writable by other users"
    return None


def forget() -> None:
    """Work everything out again on the next question."""
    _known.clear()


def _remembered(kind: str, work_out: Callable[[], str]) -> str:
    key = (kind, os.environ.get("HARDBOILED_RULES_DIR"))
    value = _known.get(key)
    if value is None:
        value = _known[key] = work_out()
    return value


def code_roots() -> list[str]:
    """Where hardboiled's code and data live: the package (its rules and
    grammars inside it, in a checkout as links), and HARDBOILED_RULES_DIR."""
    roots = [os.path.dirname(os.path.dirname(os.path.realpath(__file__)))]
    override = os.environ.get("HARDBOILED_RULES_DIR")
    if override:
        roots.append(override)
    return roots


def code_files() -> list[tuple[str, str]]:
    """Every source, rule file, grammar and runtime header, with its path
    relative to its root, in a fixed order."""
    files: list[tuple[str, str]] = []

    def visit(directory: str, relative: str) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name == "__pycache__":
                continue
            if entry.is_dir():
                visit(entry.path, f"{relative}{entry.name}/")
            elif entry.name.endswith(CODE_SUFFIXES) and entry.is_file():
                files.append((entry.path, relative + entry.name))

    for root in code_roots():
        visit(root, "")
    return files


def code_signature() -> str:
    def work_out() -> str:
        from hardboiled.support.digest import sha256  # not hashlib: OpenSSL costs a start 3 ms

        digest = sha256()
        for path, relative in code_files():
            try:
                if path.endswith(".py"):
                    status = os.stat(path)
                    digest.update(f"{relative}\0{status.st_size}\0{status.st_mtime_ns}\0".encode())
                else:
                    with open(path, "rb") as handle:
                        data = handle.read()
                    digest.update(f"{relative}\0{len(data)}\0".encode() + data)
            except OSError:
                digest.update(f"{relative}\0unreadable\0".encode())
        return digest.hexdigest()

    return _remembered("signature", work_out)


def code_identity() -> str:
    def work_out() -> str:
        from hardboiled.support.digest import new_code_digest

        digest = new_code_digest()
        for path, relative in code_files():
            digest.update(relative.encode() + b"\0")
            try:
                with open(path, "rb") as handle:
                    digest.update(handle.read())
            except OSError:
                digest.update(b"unreadable")
        return digest.hexdigest()

    return _remembered("identity", work_out)


def egglog_identity() -> str:
    def work_out() -> str:
        for entry in sys.path:
            package = os.path.join(entry or ".", "egglog")
            if not os.path.isfile(os.path.join(package, "__init__.py")):
                continue
            for name in sorted(os.listdir(package)):
                if name.startswith("bindings"):
                    status = os.stat(os.path.join(package, name))
                    return f"{name}:{status.st_size}:{status.st_mtime_ns}"
            return "unknown"
        return "absent"

    return _remembered("egglog", work_out)
