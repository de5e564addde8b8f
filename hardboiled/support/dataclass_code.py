"""Compiled code for the methods ``dataclasses`` writes, kept between runs,
as Python keeps a module's bytecode.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__`` and ``__delattr__`` as source text and
compiles it with ``exec``. A compile imports 93 of hardboiled's classes
before it parses anything, and their 545 compilations took 40 of the
105 ms those imports cost. A method's text depends only on its class's
fields, so its code can be compiled once: ``make install`` (``build``)
imports every module and writes the code of every text it saw to
``__pycache__``, and later runs execute that code instead of compiling the
same text again.

Only the ``exec`` of the ``dataclasses`` module is served, and only for
classes of hardboiled's own modules (and, through ``compiled``, other
source hardboiled writes for itself); a text not in the file (a class
edited since) is compiled as ``dataclasses`` compiles it. The file names
the exact Python build it was written by, and any other file is ignored.

``install`` is called by the package's ``__init__``, before any of its
classes exist. It does not import ``dataclasses`` (15 ms, which a command
answered from the cache does without): where that is not loaded yet, it
serves the module's ``exec`` once it is.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import CodeType, ModuleType
    from typing import Any

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__pycache__",
                    f"dataclass-code.{sys.implementation.cache_tag}.marshal")
"""Beside the package's own bytecode (the code identity of support/identity.py leaves ``__pycache__`` out)."""

_HEADER = f"hardboiled dataclass code 2\n{sys.version}\n".encode()
"""Marshalled code is only readable by the Python build that wrote it."""

_known: dict[str, bytes] | None = None
"""The file's code by source text, each still marshalled, read on the first
class: a command answered from the cache uses some 50 of the 700 texts,
and unmarshalling every one took 3 ms of its start (the strings alone:
0.3 ms)."""

seen: dict[str, CodeType] = {}
"""Every text this process compiled or served for hardboiled's classes (what ``write`` keeps)."""


_CODE = type(compile("", "<string>", "exec"))


def _read() -> dict[str, bytes]:
    """The file's texts and their code, still marshalled (``_stored``)."""
    try:
        with open(PATH, "rb") as handle:
            data = handle.read()
        if not data.startswith(_HEADER):
            return {}
        code = marshal.loads(data[len(_HEADER):])
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return code if isinstance(code, dict) else {}


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """``exec`` as ``dataclasses`` calls it: ``globals`` is the class's
    module's namespace."""
    if not isinstance(source, (str, bytes)):  # code: no flags to inherit
        builtins.exec(source, globals, locals)
        return
    text = source if type(source) is str else None
    ours = text is not None and type(globals) is dict and str(globals.get("__name__", "")).startswith("hardboiled.")
    code = _stored(text) if ours and text is not None else None
    if code is None:
        # dont_inherit: the text is compiled with the flags of dataclasses.py
        # (none), as its own exec would, not with this module's ``from
        # __future__ import annotations`` (which an exec of the text here
        # would take on: every class's annotations would become strings).
        code = compile(source, "<string>", "exec", dont_inherit=True)
    if ours and text is not None:
        seen[text] = code
    builtins.exec(code, globals, locals)


def compiled(text: str) -> CodeType:
    """The code of ``text``, source that hardboiled writes for itself the
    same way in every run (ir/traversal.py's children functions): served
    from the file as the classes' methods are, and kept by ``write``."""
    code = _stored(text)
    if code is None:
        code = compile(text, "<string>", "exec", dont_inherit=True)
    seen[text] = code
    return code


def _stored(text: str) -> CodeType | None:
    """The file's code of ``text``, or None (not there, or damaged); the
    file is read on the first call."""
    global _known
    if _known is None:
        _known = _read()
    data = _known.get(text)
    if type(data) is not bytes:
        return None
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is _CODE else None


def _serve(module: ModuleType) -> None:
    # A name in the module's namespace comes before the builtin, so this is
    # what dataclasses' own ``exec(txt, globals, ns)`` calls. A module that
    # already has one (someone else's) is left alone.
    if "exec" not in vars(module):
        module.exec = _exec  # type: ignore[attr-defined]


class _ServeOnImport:
    """A finder that lets ``dataclasses`` load as usual, then serves it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "dataclasses":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = None
        for finder in list(sys.meta_path):  # the finders the import would ask, in order, this one gone
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        load = getattr(loader, "exec_module", None)
        if load is None:
            return spec  # not a module we can watch load: the import goes on without it

        def exec_module(module: ModuleType) -> None:
            load(module)
            _serve(module)

        loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec


def install() -> None:
    """Serve ``dataclasses``' exec from now on, or once it is loaded."""
    module = sys.modules.get("dataclasses")
    if module is not None:
        _serve(module)
    elif not any(isinstance(finder, _ServeOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _ServeOnImport())


def write(path: str | None = None) -> int:
    """Write the code of every text seen to ``path`` (``PATH``),
    atomically; how many."""
    path = path or PATH
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(_HEADER + marshal.dumps({text: marshal.dumps(code) for text, code in sorted(seen.items())}))
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return len(seen)


def build() -> int:
    """Import every module of hardboiled and write what their classes
    compiled; how many texts."""
    import importlib
    import pkgutil

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for info in pkgutil.walk_packages([package], "hardboiled."):
        if info.name.endswith("__main__"):
            continue  # running it is what importing it does
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional dependency missing (the Halide bridge): its classes are compiled when used
            continue
    return write()

