"""The rule files, in the order the program loads them, read from the
installed package (or from HARDBOILED_RULES_DIR). Apart from the program's
assembly (``rules``) so that the egglog child can be started on them
before the selector is even loaded (``prestart_rules``)."""

from __future__ import annotations

import os
from pathlib import Path

from hardboiled.select.eqsat import ProgramChunk, prestart
from hardboiled.select.options import DEFAULT_MEMORY_MB
from hardboiled.support.diagnostics import Diagnostic, InputError
from hardboiled.support.package_files import read_package_text

RULE_FILES = (
    "definition.egg",    # sorts and constructors
    "supporting.egg",    # supporting: shapes and hardware facts
    "axioms.egg",        # axiomatic: vector-index and arithmetic identities
    "amx_layouts.egg",   # application-specific: AMX operand layouts
    "wmma_layouts.egg",  # application-specific: WMMA operand layouts
    "amx_lowering.egg",  # lowering: AMX tile instructions
    "wmma_lowering.egg",  # lowering: WMMA fragment operations
)

RULE_FILE_ACCELERATORS = {
    "amx_layouts.egg": "AMX",
    "wmma_layouts.egg": "WMMA",
    "amx_lowering.egg": "AMX",
    "wmma_lowering.egg": "WMMA",
}
"""The accelerator whose stores each file's rulesets select for (the
accelerators as select/extract.py's ACCELERATOR_MEMORY names them); the
other files serve both. A program runs only the rulesets of the
accelerators its stores use (select/rules.py, ``schedule_for``)."""

def rule_text(name: str) -> str:
    """A rule file's text. HARDBOILED_RULES_DIR points at a working copy of
    the rules (for developing them) instead of the installed ones."""
    override = os.environ.get("HARDBOILED_RULES_DIR")
    if override:
        try:
            return (Path(override) / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise InputError(Diagnostic(
                "error", f"HARDBOILED_RULES_DIR: cannot read {name} in '{override}': {reason}",
                notes=("it must hold every rule file (" + ", ".join(RULE_FILES) + ") and schedules/default.egg; "
                       "unset it to use the installed rules",),
            )) from None
    return read_package_text("rules", name)


def rule_file_chunks() -> list[ProgramChunk]:
    """Every rule file, in order: the program's first part, the same for
    every input."""
    override = os.environ.get("HARDBOILED_RULES_DIR")
    if override:
        return [ProgramChunk(str(Path(override) / name), rule_text(name), users=True) for name in RULE_FILES]
    return [ProgramChunk(f"rules/{name}", rule_text(name)) for name in RULE_FILES]


def prestart_rules(memory_mb: int = DEFAULT_MEMORY_MB) -> None:
    """Start the egglog child on the rule files now (hardboiled/select/eqsat.py)."""
    try:
        prestart(rule_file_chunks(), memory_mb)
    except InputError:
        pass  # unreadable rules: the compile reports it where it reads them
