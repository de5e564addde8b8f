"""hardboiled: a tensor instruction selector for Halide IR.

``hardboiled.compile`` (hardboiled/api.py) is the library entry point, and
``hardboiled.halide.tensorize`` the bridge from a halide-python pipeline;
both are imported on first use, so that ``import hardboiled`` stays cheap.
"""

from __future__ import annotations

from hardboiled.support import dataclass_code
from hardboiled.support.version import VERSION

dataclass_code.install()  # before any of the package's classes: their methods' code is kept (support/dataclass_code.py)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (20 ms at every start)
if TYPE_CHECKING:
    from typing import Any

__version__ = VERSION
__all__ = ["__version__", "compile", "CompileError", "Result"]  # noqa: F822 - provided by __getattr__

_API = ("compile", "CompileError", "Result")


def __getattr__(name: str) -> Any:
    if name in _API:
        from hardboiled import api

        return getattr(api, name)
    raise AttributeError(f"module 'hardboiled' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
