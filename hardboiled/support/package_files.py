"""The files shipped inside the package (the grammar and its scanner
table, the rules, the C runtime), found beside its code.

hardboiled is installed as files, never zipped (an editable install, or a
wheel's copy of the tree), so a data file is its package's directory
joined with its name. ``importlib.resources`` finds the same file after
loading pathlib, zipfile and its own modules: about 10 ms of every cold
compile, for a few reads.
"""

from __future__ import annotations

import os

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The ``hardboiled`` package's directory."""


def package_path(*parts: str) -> str:
    """The path of a file or directory inside the package, as the parts
    of its name below ``hardboiled/`` (``"rules", "select.egg"``)."""
    return os.path.join(PACKAGE_DIR, *parts)


def read_package_text(*parts: str) -> str:
    """A text file inside the package (``package_path``'s), as UTF-8."""
    with open(package_path(*parts), encoding="utf-8") as handle:
        return handle.read()
