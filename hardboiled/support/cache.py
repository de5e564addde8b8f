"""A content-addressed cache of equality-saturation results.

The key hashes everything that can change what egglog extracts: the program
it runs (rule files, hardware facts, the encoded statements, the schedule),
the roots, hardboiled's own code (every source, rule file, grammar and
runtime header: ``code_identity``, so that an entry made by other code is
never served) and egglog's build. Entries are JSON files
written atomically (a temporary file, then ``os.replace``), so concurrent
runs sharing a cache directory never see a half-written entry; a corrupt or
unreadable entry is a miss.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hardboiled.support.version import VERSION

CACHE_FORMAT = 8
"""Bumped whenever the stored layout or its meaning changes."""


def default_cache_dir() -> Path:
    override = os.environ.get("HARDBOILED_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hardboiled"


@functools.cache
def egglog_identity() -> str:
    """egglog's build: the size and time of its compiled module (found
    without importing egglog, nor importlib.metadata: a cache hit must be
    quick)."""
    import importlib.util

    spec = importlib.util.find_spec("egglog")
    if spec is None or not spec.submodule_search_locations:
        return "absent"
    for location in spec.submodule_search_locations:
        for path in sorted(Path(location).glob("bindings*")):
            stat = path.stat()
            return f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}"
    return "unknown"


_CODE_SUFFIXES = (".py", ".egg", ".lark", ".h")


def _code_roots() -> list[Path]:
    """Where hardboiled's code and data live: the package, the rule files
    and grammars (beside it in a checkout), and HARDBOILED_RULES_DIR."""
    package = Path(__file__).resolve().parent.parent
    roots = [package]
    if not (package / "rules").is_dir():  # a checkout: they are not inside the package
        roots += [package.parent / "rules", package.parent / "grammars"]
    override = os.environ.get("HARDBOILED_RULES_DIR")
    if override:
        roots.append(Path(override))
    return roots


def _code_files() -> list[tuple[Path, str]]:
    """Every source, rule file, grammar and runtime header, with its path
    relative to its root, in a fixed order."""
    files: list[tuple[Path, str]] = []

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
            elif entry.name.endswith(_CODE_SUFFIXES) and entry.is_file():
                files.append((Path(entry.path), relative + entry.name))

    for root in _code_roots():
        visit(str(root), "")
    return files


@functools.cache
def code_identity() -> str:
    """A digest of hardboiled's code and data: every source, rule file
    (HARDBOILED_RULES_DIR's too), grammar and runtime header."""
    digest = hashlib.sha256()
    for path, relative in _code_files():
        digest.update(relative.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


@functools.cache
def code_signature() -> str:
    """The same files as ``code_identity``, by name, size and modification
    time, without reading them (as make and Python's bytecode cache judge
    freshness): cheap enough for every start of the command (cli/direct.py)."""
    digest = hashlib.sha256()
    for path, relative in _code_files():
        try:
            stat = path.stat()
            digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        except OSError:
            digest.update(f"{relative}\0unreadable\0".encode())
    return digest.hexdigest()


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


class ResultCache:
    def __init__(self, directory: Path):
        self.directory = directory
        self.hits = 0
        self.misses = 0

    def entry_path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            entry = json.loads(self.entry_path(key).read_text())
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self.entry_path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".entry-", suffix=".tmp", dir=path.parent)
        except OSError:
            # A cache that cannot be written is just a cache that misses.
            return
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(dict(value, format=CACHE_FORMAT), handle, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
