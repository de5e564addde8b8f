"""What a function of immutable trees computed for the last few trees it
was asked about, remembered by the trees' identity.

The IR is frozen, so an analysis of a tree holds as long as the tree
lives. Remembering it by equality would hash the whole tree at every call
(the nodes do not keep their hashes); identity costs nothing. Each entry
keeps its trees alive, so that no other tree can take their ids while it
stands, and the oldest entries go first once ``size`` are kept.

A verification asks the same questions of the same two programs once per
layout it runs (verify/inputs.py ``SHAPES``), and ``--run`` once more;
the interpreter asks each loop's facts at every run (verify/interp.py).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def by_identity(size: int, trees: int = 1) -> Callable[[F], F]:
    """Remember ``function``'s results for its last ``size`` distinct
    arguments: the first ``trees`` positional arguments by identity, the
    others (hashable) by equality. The result is shared by every caller
    that asks again, so it must be immutable, or copied by the caller."""
    def decorate(function: F) -> F:
        kept: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = OrderedDict()
        lock = threading.Lock()  # the API compiles from several threads

        @functools.wraps(function)
        def remembered(*args: Any) -> Any:
            identities, rest = args[:trees], args[trees:]
            key = (*map(id, identities), *rest)
            with lock:
                entry = kept.get(key)
                if entry is not None and all(a is b for a, b in zip(entry[0], identities)):
                    kept.move_to_end(key)
                    return entry[1]
            result = function(*args)
            with lock:
                kept[key] = (identities, result)
                kept.move_to_end(key)
                while len(kept) > size:
                    kept.popitem(last=False)
            return result

        remembered.forget = kept.clear  # type: ignore[attr-defined]
        return remembered  # type: ignore[return-value]
    return decorate
