"""The manual page, hardboiled(1), generated from the click commands, so
that it says what --help says: every command with its options, the
examples, and the exit codes. ``make man`` writes docs/hardboiled.1 (a
test checks that it is current) and ``make install`` installs it where
``man`` finds it beside .venv/bin (.venv/share/man/man1).

    python -m hardboiled.cli.manpage > docs/hardboiled.1
"""

from __future__ import annotations

import sys

import click

from hardboiled.support.diagnostics import EXIT_CODE_MEANINGS
from hardboiled.support.version import VERSION

ENVIRONMENT = (
    ("HARDBOILED_CACHE_DIR", "the default cache directory"),
    ("HARDBOILED_RULES_DIR", "read the rule files from this directory instead of the installed ones"),
    ("HARDBOILED_TRACEBACK", "set to 1 to print the Python traceback of an internal error"),
    ("CC, NVCC", "the C compiler and nvcc, with arguments if any"),
    ("NO_COLOR", "no colour, even on a terminal"),
)


def _roff(text: str) -> str:
    """``text`` safe in a roff line: backslashes doubled, and a line that
    would start with a control character guarded."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in text.split("\n"))


def _paragraphs(help_text: str) -> list[str]:
    return [" ".join(p.split()) for p in help_text.strip().split("\n\n") if p.strip()]


def _options(command: click.Command, context: click.Context) -> list[str]:
    lines = []
    for param in command.get_params(context):
        record = param.get_help_record(context) if isinstance(param, click.Option) else None
        if record is None:
            continue
        names, help_text = record
        lines += [".TP", f"\\fB{_roff(names)}\\fR", _roff(" ".join(help_text.split()))]
    return lines


def _examples(commands: list[click.Command]) -> list[str]:
    """The examples of every command's epilog, each once."""
    lines: list[str] = []
    seen: set[str] = set()
    comment = ""
    for command in commands:
        for line in (command.epilog or "").split("Exit codes:")[0].splitlines():
            line = line.strip()
            if line.startswith("# "):
                comment = line[2:]
            elif line.startswith("hardboiled ") and line not in seen:
                seen.add(line)
                lines += [".PP", _roff(comment[:1].upper() + comment[1:]) + ":",
                          ".RS 4", ".nf", _roff(line), ".fi", ".RE"]
    return lines


def render_man_page(group: click.Group) -> str:
    context = click.Context(group, info_name="hardboiled", **group.context_settings)
    out = [
        f'.TH HARDBOILED 1 "" "hardboiled {VERSION}" "User Commands"',
        ".SH NAME",
        "hardboiled \\- a tensor instruction selector for Halide IR (Intel AMX, NVIDIA Tensor Cores)",
        ".SH SYNOPSIS",
    ]
    for name, command in group.commands.items():
        usage = " ".join(command.collect_usage_pieces(click.Context(command, info_name=name, parent=context)))
        out += [f"\\fBhardboiled {name}\\fR {_roff(usage)}", ".br"]
    out += [".SH DESCRIPTION"]
    for paragraph in _paragraphs(group.help or ""):
        out += [_roff(paragraph), ".PP"]
    out += [_roff("hardboiled reads the IR Halide prints (a stmt, a whole HL_DEBUG_CODEGEN=2 log, or "
                  "compile_to_lowered_stmt output), finds the stores whose buffers live in accelerator memory "
                  "(AMXTile, WMMAAccumulator), and selects tile or fragment operations for them by equality "
                  "saturation. The full reference is docs/cli.md.")]
    out += [".SH COMMANDS"]
    for name, command in group.commands.items():
        sub = click.Context(command, info_name=name, parent=context)
        out += [".SS " + name]
        for paragraph in _paragraphs(command.help or ""):
            out += [_roff(paragraph), ".PP"]
        out += _options(command, sub)
    out += [".SH GLOBAL OPTIONS", *_options(group, context)]
    out += [".SH EXAMPLES", *_examples([*group.commands.values(), group])]
    out += [".SH EXIT STATUS"]
    for code, meaning in EXIT_CODE_MEANINGS.items():
        out += [".TP", f"\\fB{int(code)}\\fR", _roff(meaning)]
    out += [".SH ENVIRONMENT"]
    for name, meaning in ENVIRONMENT:
        out += [".TP", f"\\fB{name}\\fR", _roff(meaning)]
    out += [".SH SEE ALSO", "docs/cli.md, docs/tutorial.md and docs/report-schema.json in the hardboiled sources"]
    return "\n".join(out) + "\n"


def main() -> None:
    from hardboiled.cli.commands import main as hardboiled

    sys.stdout.write(render_man_page(hardboiled))


if __name__ == "__main__":
    main()
