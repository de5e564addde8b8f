"""The grammar of Halide's IR text (grammars/halide_ir.lark) and what is
made of it: the LALR parser, built once per process (and cached on disk by
Lark), with hardboiled's contextual lexer; and the scanner table of the
recursive-descent reader (grammars/halide_ir.scanner.json), made from the
same terminals, so that the reader need not load Lark.

    python -m hardboiled.frontend.grammar    # rewrite the scanner table
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hardboiled.support.digest import hex_digest
from hardboiled.support.package_files import read_package_text

if TYPE_CHECKING:
    from lark import Lark

SCANNER_TABLE = "halide_ir.scanner.json"


def grammar_text() -> str:
    return read_package_text("grammars", "halide_ir.lark")


@lru_cache(maxsize=1)
def halide_parser() -> Lark:
    from lark import Lark

    from hardboiled.frontend.lexer import HalideLexer

    return Lark(grammar_text(), parser="lalr", lexer=HalideLexer, maybe_placeholders=True, cache=True)


def current_scanner_table() -> dict[str, Any]:
    """The scanner table as the grammar makes it now (loads Lark)."""
    from hardboiled.frontend.lexer import scanner_table

    return {"grammar_sha256": _digest(grammar_text()), **scanner_table(halide_parser().lexer_conf)}


def stored_scanner_table() -> dict[str, Any] | None:
    """The shipped scanner table, or None if the grammar changed since it
    was written (the reader then makes it with Lark)."""
    try:
        table: dict[str, Any] = json.loads(read_package_text("grammars", SCANNER_TABLE))
    except (OSError, ValueError):
        return None
    return table if table.get("grammar_sha256") == _digest(grammar_text()) else None


def scanner_table_text() -> str:
    return json.dumps(current_scanner_table(), indent=1, sort_keys=True) + "\n"


def _digest(text: str) -> str:
    """The grammar's SHA-256, without loading OpenSSL (``hashlib``), which
    a compile without the cache has no other use for (3 ms)."""
    return hex_digest(text.encode())


if __name__ == "__main__":
    from pathlib import Path

    target = Path(__file__).resolve().parents[2] / "grammars" / SCANNER_TABLE
    target.write_text(scanner_table_text())
    print(f"wrote {target}")
