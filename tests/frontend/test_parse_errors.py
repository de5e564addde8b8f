"""Bad input: every case is a GNU diagnostic with a location, the source line
and a caret, a documented exit code (2), and never a traceback.

These tests drive the installed console script, as a user would.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hardboiled.support.diagnostics import ExitCode

from ..conftest import FIXTURES, LOG_FIXTURES, run_cli

GOOD = (FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt").read_bytes()


def _check_diagnostic(stderr: bytes, where: str, message: str) -> list[str]:
    """``where`` and ``message`` are regular expressions."""
    text = stderr.decode()
    assert "Traceback" not in text
    lines = text.splitlines()
    head = where + r": error: " + message
    assert re.match(head, lines[0]), lines[0]
    return lines


def _caret_column(lines: list[str]) -> int:
    return lines[2].index("^") + 1


def test_syntax_error_points_at_the_token(tmp_path: Path) -> None:
    bad = tmp_path / "bad.stmt"
    bad.write_text("for (x, 0, 10) {\n a[x] = 1 +\n}\n")
    result = run_cli("parse", str(bad))
    assert result.returncode == ExitCode.INPUT_ERROR == 2
    assert result.stdout == b""
    lines = _check_diagnostic(result.stderr, re.escape(f"{bad}:2:12"), "unexpected end of line")
    assert lines[1] == " a[x] = 1 +"
    assert _caret_column(lines) == 12
    assert lines[3].startswith("note: expected ")


def test_error_inside_a_real_dump_has_the_right_line_and_column(tmp_path: Path) -> None:
    lines = GOOD.decode().split("\n")
    target = next(i for i, line in enumerate(lines) if "vector_reduce_add" in line)
    column = lines[target].index("vector_reduce_add") + 1
    lines[target] = lines[target].replace("vector_reduce_add(", "vector_reduce_add((", 1)
    bad = tmp_path / "broken.stmt"
    bad.write_text("\n".join(lines))
    result = run_cli("parse", str(bad))
    assert result.returncode == 2
    diag = result.stderr.decode().splitlines()
    match = re.match(re.escape(str(bad)) + r":(\d+):(\d+): error: ", diag[0])
    assert match, diag[0]
    assert int(match.group(1)) == target + 1
    assert int(match.group(2)) > column
    assert diag[1] == lines[target]


def test_truncated_file() -> None:
    cut = GOOD[: len(GOOD) // 2]
    cut = cut[: cut.rindex(b"\n") + 1]  # cut at a line boundary: braces left open
    result = run_cli("parse", "-", stdin=cut)
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, "<stdin>:" + str(cut.count(b"\n")) + r":\d+", r"unexpected end of input; the IR is truncated")
    assert "expected" in lines[-1]


def test_file_cut_mid_line() -> None:
    cut = GOOD[:300]
    result = run_cli("parse", "-", stdin=cut)
    assert result.returncode == 2
    _check_diagnostic(result.stderr, "<stdin>:3:\\d+", r".*the input ends in the middle of a line")


def test_binary_junk() -> None:
    junk = bytes(range(128, 256)) * 4
    result = run_cli("parse", "-", stdin=junk)
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, "<stdin>:1:\\d+", r"input is not UTF-8 text \(byte 0x80\)")
    # Control bytes are not echoed to the terminal.
    assert all(ch.isprintable() for ch in lines[1])


def test_nul_bytes_in_text() -> None:
    result = run_cli("parse", "-", stdin=b"let x = 1\n\x00\x01\x02\n")
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, "<stdin>:2:1", r"unexpected character '\\x00'")
    assert lines[1] == "???"


@pytest.mark.parametrize("payload", [b"", b"\n\n  \n"], ids=["empty", "blank"])
def test_empty_input(payload: bytes) -> None:
    result = run_cli("parse", "-", stdin=payload)
    assert result.returncode == 2
    _check_diagnostic(result.stderr, "<stdin>:1:1", "empty input: expected Halide IR")


def test_unknown_statement_name() -> None:
    result = run_cli("parse", "-", stdin=b"let t = 1\nfrobnicate (x, 0, 10) {\n a[x] = t\n}\n")
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, "<stdin>:2:1", "unknown statement 'frobnicate'")
    assert lines[1].startswith("frobnicate")
    assert _caret_column(lines) == 1


def test_unknown_loop_kind_with_device() -> None:
    result = run_cli("parse", "-", stdin=b"gpu_warp<CUDA> (x, 0, 32) {\n}\n")
    assert result.returncode == 2
    _check_diagnostic(result.stderr, "<stdin>:1:1", "unknown statement 'gpu_warp'")


def test_unknown_vector_reduction() -> None:
    source = b"allocate a[int32 * 8]\na[ramp(0, 1, 2)] = (int32x2)vector_reduce_xor(a[ramp(0, 1, 8)])\n"
    result = run_cli("parse", "-", stdin=source)
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, "<stdin>:2:29", "unknown vector reduction 'vector_reduce_xor'")
    assert "vector_reduce_add" in lines[3]


def test_unknown_memory_type() -> None:
    result = run_cli("parse", "-", stdin=b"allocate a[int32 * 8] in FastMem\na[0] = 1\n")
    assert result.returncode == 2
    _check_diagnostic(result.stderr, "<stdin>:1:\\d+", "unknown memory type 'FastMem'")


def test_unknown_type_name() -> None:
    result = run_cli("parse", "-", stdin=b"let t = (float33)1\n")
    assert result.returncode == 2
    _check_diagnostic(result.stderr, "<stdin>:1:9", "unknown type 'float33'")


def test_load_with_unknown_element_type_says_what_is_missing() -> None:
    result = run_cli("parse", "-", stdin=b"out[0] = in[3]\n")
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, "<stdin>:1:10", "cannot determine the element type of buffer 'in'")
    notes = "\n".join(lines[3:])
    assert "allocate in[" in notes and "in.type == (uint32)N" in notes and "--buffer-type" in notes


def test_buffer_type_option_supplies_the_missing_type() -> None:
    result = run_cli("parse", "-", "--buffer-type", "in=bfloat16", stdin=b"out[0] = in[3]\n")
    assert result.returncode == 0, result.stderr.decode()
    # `in` is bound nowhere in this snippet, so Halide's convention is to
    # print the load with its type.
    assert result.stdout == b"out[0] = (bfloat16)in[3]\n"


def test_bad_buffer_type_option_is_a_usage_error() -> None:
    result = run_cli("parse", "-", "--buffer-type", "in=float7", stdin=b"out[0] = 1\n")
    assert result.returncode == 2
    assert b"--buffer-type" in result.stderr and b"Traceback" not in result.stderr


def test_unknown_stage_lists_the_stages() -> None:
    result = run_cli("parse", str(LOG_FIXTURES[0]), "--stage", "no such pass")
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, re.escape(f"{LOG_FIXTURES[0]}:1:1"), "no stage named 'no such pass'")
    assert "vectorizing" in lines[-1] and lines[-1].startswith("note: stages in this log:")


def test_stage_option_on_a_plain_stmt_is_an_error() -> None:
    path = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
    result = run_cli("parse", str(path), "--stage", "vectorizing")
    assert result.returncode == 2
    _check_diagnostic(result.stderr, re.escape(f"{path}:1:1"), "--stage 'vectorizing' needs an HL_DEBUG_CODEGEN log")


def test_error_in_a_log_stage_reports_the_line_in_the_log(tmp_path: Path) -> None:
    log = LOG_FIXTURES[0].read_text().split("\n")
    header = log.index("Lowering after vectorizing:")
    broken_line = header + 3  # the second line of the stage body
    log[broken_line - 1] = log[broken_line - 1] + " )"
    path = tmp_path / "debug.log"
    path.write_text("\n".join(log))
    result = run_cli("parse", str(path))
    assert result.returncode == 2
    diag = result.stderr.decode().splitlines()
    assert diag[0].startswith(f"{path}:{broken_line}:"), diag[0]
    assert diag[1] == log[broken_line - 1]


def test_missing_file() -> None:
    result = run_cli("parse", "/nonexistent/dump.stmt")
    assert result.returncode == 2
    _check_diagnostic(result.stderr, "/nonexistent/dump.stmt:1:1", "cannot read '/nonexistent/dump.stmt'")


def test_failed_parse_leaves_no_output_file(tmp_path: Path) -> None:
    out = tmp_path / "out.stmt"
    result = run_cli("parse", "-", "-o", str(out), stdin=b"for (x, 0, 10) {\n")
    assert result.returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_unknown_option_is_a_usage_error() -> None:
    result = run_cli("parse", "--frobnicate", "x")
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert re.fullmatch(rb"hardboiled \S+ \(egglog \S+, lark \S+\)\n", result.stdout)



_NULL_CHECK = ("assert(reinterpret<uint64>((struct halide_buffer_t *)f.buffer) != (uint64)0, "
               "halide_error_buffer_argument_is_null(\"f\"))\n")


def test_a_loop_variable_read_after_its_loop_is_located(tmp_path: Path) -> None:
    """Issue 33, item 3: a name no loop or let defines is a scalar Param
    (Halide prints Params bare); one that a loop or let defines, read
    outside it, is an input error at the read, not C that fails to
    compile."""
    bad = tmp_path / "bad.stmt"
    bad.write_text(_NULL_CHECK + "for (f.s0.x, 0, 4) {\n let t = 3\n f[f.s0.x] = t\n}\nf[1] = f.s0.x\n")
    result = run_cli("compile", str(bad), "--emit", "c", "-o", str(tmp_path / "k.c"))
    assert result.returncode == 2
    lines = _check_diagnostic(result.stderr, r".*bad\.stmt:6:8", "'f.s0.x' is read outside the loop or let "
                              "that defines it")
    assert _caret_column(lines) == 8
    assert not (tmp_path / "k.c").exists()
    bad.write_text(_NULL_CHECK + "for (f.s0.x, 0, 4) {\n let t = 3\n f[f.s0.x] = t\n}\nf[1] = t\n")
    _check_diagnostic(run_cli("parse", str(bad)).stderr, r".*bad\.stmt:6:8", "'t' is read outside")


def test_names_read_as_params_are_named(tmp_path: Path) -> None:
    """A misspelt name would be read as a Param too: the run says which
    names it took as Params."""
    source = FIXTURES / "wmma_scaled_matmul_params" / "vectorizing.stmt"
    result = run_cli("compile", str(source), "--emit", "cuda", "-o", str(tmp_path / "k.cu"))
    assert result.returncode == 0, result.stderr
    assert ("scalar params gain (float32), offset (int32), rows (int32): names the IR reads but never defines"
            in result.stderr.decode())
    assert "float gain" in (tmp_path / "k.cu").read_text()


def test_type_names_are_remembered_but_an_unknown_one_is_an_error_every_time(monkeypatch) -> None:
    """The builder remembers what each type name it read spells
    (builder_base.py's ``_TYPE_NAMES``): a name read again is the same
    type, a name that is no type is reported at each of its places, and
    the memory stays within its bound."""
    from hardboiled import ir
    from hardboiled.frontend import builder_base
    from hardboiled.frontend.parse import parse_text
    from hardboiled.support.diagnostics import InputError

    first = parse_text("let a = (float32)1.0f\nlet b = (float32)2.0f\n")
    assert isinstance(first, ir.LetStmt) and first.value.type == ir.Float(32)
    assert "(float32)" in builder_base._TYPE_NAMES
    for line in (1, 2):
        text = "let ok = (int16)1\n" * (line - 1) + "let t = (float33)1\n"
        with pytest.raises(InputError) as raised:
            parse_text(text)
        location = raised.value.diagnostic.location
        assert location is not None and (location.line, location.column) == (line, 9)
        assert raised.value.diagnostic.message == "unknown type 'float33'"
    assert "(float33)" not in builder_base._TYPE_NAMES
    monkeypatch.setattr(builder_base, "_TYPE_NAMES_LIMIT", 8)  # (as many types would empty ir's shared ones)
    for lanes in range(2, 20):
        parse_text(f"let v = (int32x{lanes})x\n")
    assert 0 < len(builder_base._TYPE_NAMES) <= 8
