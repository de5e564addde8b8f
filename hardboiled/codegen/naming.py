"""The generated functions' names: the entry point a file gets by default,
the names it may be given, and the raw-pointer one beside it. Kept apart
from the ABI (which needs the IR) so that the command line checks --name
and names a batch's functions without loading the IR."""

from __future__ import annotations

import re
from pathlib import PurePath

DEFAULT_ENTRY_POINT = "hb_kernel"
"""The entry point of code generated from standard input, or from a name
with no letter or digit in it."""

C_KEYWORDS = frozenset((
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "_Bool _Complex _Imaginary alignas alignof bool class constexpr delete explicit false friend mutable namespace "
    "new nullptr operator private protected public template this throw true try typeid typename using virtual"
).split())
"""C and C++ keywords: an entry point may not be one (the .cu is C++)."""

STANDARD_INPUT_NAMES = ("-", "<stdin>", "<string>")
"""Inputs with no file name: standard input, and text given to the Python API."""


HELPER_PREFIX = "hb_"
"""The generated code's own helpers and runtime are named hb_*: an entry
point may not be (hb_div would clash with Halide's division helper), except
the default one."""
ESCAPE_PREFIX = "k_"
"""Put in front of an input's stem that cannot be a function name as it is."""


def is_entry_point_name(name: str) -> bool:
    """A name C and C++ accept for the generated function, that clashes with
    nothing the generated code defines (nor with a program's main)."""
    return (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None and name not in C_KEYWORDS
            and name != "main" and (name == DEFAULT_ENTRY_POINT or not name.startswith(HELPER_PREFIX)))


def entry_point_name(filename: str) -> str:
    """The default entry point for an input: its stem (every suffix off),
    made a C identifier. ``conv-layer.debug.log`` gives ``conv_layer``,
    ``3x3.stmt`` ``k_3x3``, ``int.stmt`` ``k_int``."""
    if filename in STANDARD_INPUT_NAMES:
        return DEFAULT_ENTRY_POINT
    stem = PurePath(filename).name.split(".", 1)[0]
    name = re.sub(r"[^A-Za-z0-9_]", "_", stem).strip("_")
    if not name:
        return DEFAULT_ENTRY_POINT
    return name if is_entry_point_name(name) else ESCAPE_PREFIX + name


RAW_SUFFIX = "_raw"
"""The raw-pointer entry point is NAME_raw; NAME takes halide_buffer_t."""


def raw_entry_point(name: str) -> str:
    return name + RAW_SUFFIX
