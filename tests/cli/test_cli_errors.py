"""Errors a user can make on the command line: each one is a diagnostic in
hardboiled's own format (never click's "Usage: ... Error:" block, never a
traceback) with its documented exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hardboiled.codegen.toolchain import cpu_has_amx
from hardboiled.support.diagnostics import ExitCode

from ..conftest import FIXTURES, run_cli

SINGLE = FIXTURES / "amx_bf16_matmul_std_single"
LOG = str(SINGLE / "debug.log")
STMT = str(SINGLE / "vectorizing.stmt")


@pytest.mark.parametrize("args, message", [
    (["compile", STMT, "--emit", "foo"], "Invalid value for --emit: unknown kind foo"),
    (["compile", STMT, "--nosuch"], "No such option '--nosuch'"),
    (["compile", STMT, "-j", "-1"], "-1 is not in the range x>=0"),
    (["verify", LOG, STMT, "--seed", "-1"], "-1 is not in the range x>=0"),
    (["compile", "-", "-"], "standard input can be read only once"),
    (["verify", "-", "-"], "standard input can be read only once"),
    (["compile", STMT, "--param", "A.extent.0=4"], "--param and --input set buffers for --verify and --run"),
    (["verify", LOG, STMT, "--param", "B.stride1=40"], "--param B.stride1: no such buffer field"),
    (["verify", LOG, STMT, "--param", "Q.extent.0=5"], "--param Q.extent.0: no such buffer field"),
    (["verify", LOG, STMT, "--param", "A.extent.7=5"], "buffer 'A' has 2 dimensions"),
    (["verify", LOG, STMT, "--param", "A.extent.1=99999999999"], "Halide buffer fields are int32"),
    (["verify", LOG, STMT, "--param", "A.extent.1=2000000000"], "too large for the reference interpreter"),
    (["bogus"], "No such command 'bogus'"),
])
def test_usage_errors_are_diagnostics(args: list[str], message: str) -> None:
    result = run_cli(*args)
    stderr = result.stderr.decode()
    assert result.returncode == ExitCode.INPUT_ERROR, stderr
    assert stderr.startswith("hardboiled: error: ") and message in stderr.splitlines()[0], stderr
    assert "Traceback" not in stderr and "Usage:" not in stderr


def test_usage_errors_follow_diagnostics_format_json() -> None:
    result = run_cli("compile", STMT, "--diagnostics-format", "json", "--emit", "foo")
    assert result.returncode == ExitCode.INPUT_ERROR
    (line,) = result.stderr.decode().splitlines()
    diagnostic = json.loads(line)
    assert diagnostic["severity"] == "error" and "unknown kind foo" in diagnostic["message"]
    assert diagnostic["notes"] == ["see 'hardboiled compile --help'"]


def test_a_bare_command_prints_its_help_and_fails() -> None:
    result = run_cli()
    assert result.returncode == ExitCode.INPUT_ERROR
    assert result.stderr.decode().startswith("Usage: hardboiled")


def test_a_schedule_that_is_not_utf8_is_located(tmp_path: Path) -> None:
    schedule = tmp_path / "s.egg"
    schedule.write_bytes(b"(run axioms 3)\n\xff\n")
    result = run_cli("compile", STMT, "--schedule", str(schedule), "--no-cache")
    assert result.returncode == ExitCode.INPUT_ERROR
    assert result.stderr.decode().startswith(f"{schedule}:1:1: error: schedule '{schedule}' is not UTF-8 text")


def test_a_compiler_that_writes_nothing_is_a_toolchain_error(tmp_path: Path) -> None:
    result = run_cli("compile", STMT, "-q", "--cc", "true", "--build", str(tmp_path / "k.o"), "-o", str(tmp_path / "o"))
    assert result.returncode == ExitCode.TOOLCHAIN_FAILURE
    assert "true reported success but wrote no .o file" in result.stderr.decode()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(cpu_has_amx(), reason="this CPU has AMX, so --amx native can run")
def test_running_native_amx_without_amx_is_refused_not_reported_as_wrong_code() -> None:
    result = run_cli("compile", STMT, "-q", "--amx", "native", "--run", "-o", "-")
    assert result.returncode == ExitCode.INPUT_ERROR
    assert "this CPU has no AMX" in result.stderr.decode() and result.stdout == b""


def test_a_failure_after_selection_is_not_summarized_as_success(tmp_path: Path) -> None:
    result = run_cli("compile", STMT, "--cc", "true", "--build", str(tmp_path / "k.o"), "-o", str(tmp_path / "o"))
    summary = result.stderr.decode().splitlines()[-1]
    assert f"failed (exit {int(ExitCode.TOOLCHAIN_FAILURE)}), nothing written" in summary


def test_a_huge_junk_line_is_shown_as_a_window_around_the_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.stmt"
    junk.write_text("let x = 1\n" + "y" * 100_000 + " = = 3\n")
    result = run_cli("parse", str(junk))
    assert result.returncode == ExitCode.INPUT_ERROR
    head, shown, caret, *_ = result.stderr.decode().splitlines()
    assert head.startswith(f"{junk}:2:")
    column = int(head.split(":")[2])
    assert column > 100_000
    assert len(shown) <= 1006 and shown.startswith("...") and shown.endswith("= = 3")
    # The caret still sits under the offending character.
    assert shown[len(caret) - 1] == "="


@pytest.mark.parametrize("text, line, column, message", [
    # A schedule file is untrusted: only combinators over the shipped
    # rulesets, each refusal located before egglog sees anything (egglog
    # used to panic on the first, and to read any file for the third).
    ("(run-schedule (repeat 5 (run axioms) (run (unknownset))))\n", 1, 43, "the schedule runs an unknown ruleset"),
    ("(run axioms 3)\n(ruleset axioms)\n", 2, 1, "a schedule file may only run the shipped rulesets"),
    ('(include "/etc/passwd")\n', 1, 1, "a schedule file may only run the shipped rulesets"),
    ("(run-schedule (repeat 2\n  (rule ((= e (IntImm t v))) ((union e e)))))\n", 2, 3,
     "not a schedule: expected run, repeat, saturate or seq"),
    ("(run-schedule (repeat -1 (run axioms)))\n", 1, 23, "expected a count"),
    ("(run-schedule (seq (run axioms))\n", 1, 1, "unbalanced '('"),
])
def test_a_schedule_file_may_only_combine_the_shipped_rulesets(tmp_path: Path, text: str, line: int, column: int,
                                                                message: str) -> None:
    schedule = tmp_path / "s.egg"
    schedule.write_text(text)
    result = run_cli("compile", STMT, "--schedule", str(schedule), "--no-cache")
    stderr = result.stderr.decode()
    assert result.returncode == ExitCode.INPUT_ERROR, stderr
    assert stderr.startswith(f"{schedule}:{line}:{column}: error: {message}"), stderr
    assert "note: a schedule file may contain: (run-schedule S...)" in stderr


@pytest.mark.slow
@pytest.mark.parametrize("stream", ["closed standard output", "full standard output", "closed standard error",
                                    "closed standard input"])
def test_a_closed_or_full_standard_stream_is_a_diagnostic_also_when_a_record_answers(stream: str,
                                                                                  tmp_path: Path) -> None:
    """>&-, >/dev/full, 2>&-, <&-: the ordinary command line and a direct-
    mode answer (the third run of the same command) end alike, with a
    diagnostic where one can be printed, never a traceback."""
    import os
    import subprocess

    from ..conftest import CACHE_DIR, HARDBOILED

    args = [str(HARDBOILED), "compile", "-" if "input" in stream else STMT, "--cache-dir", str(tmp_path / "c"),
            "-q"]
    for _ in range(2):  # the second run records what the cache answered
        subprocess.run(args, capture_output=True, stdin=subprocess.DEVNULL, check=False, timeout=120,
                       env=dict(os.environ, HARDBOILED_CACHE_DIR=CACHE_DIR))

    def redirect() -> None:
        if stream == "closed standard output":
            os.close(1)
        elif stream == "full standard output":
            os.dup2(os.open("/dev/full", os.O_WRONLY), 1)
        elif stream == "closed standard error":
            os.close(2)
        else:
            os.close(0)

    runs = [subprocess.run(args + extra, capture_output="output" not in stream, preexec_fn=redirect, timeout=120,
                           stderr=subprocess.PIPE if "output" in stream else None,
                           env=dict(os.environ, HARDBOILED_CACHE_DIR=CACHE_DIR))
            for extra in ([], ["--no-cache"])]
    for run in runs:
        assert b"Traceback" not in (run.stderr or b"")
        if stream == "closed standard error":
            assert run.returncode == 0
        else:
            assert run.returncode == ExitCode.INPUT_ERROR, run.stderr
            assert b"cannot " in run.stderr and b"standard " in run.stderr
