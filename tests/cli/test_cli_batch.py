"""The command line as build systems and CI use it: pipelines, batches,
reports, JSON diagnostics, exit codes, caching, parallelism, determinism and
safe output. Everything here drives the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hardboiled.support.diagnostics import ExitCode

from ..conftest import FIXTURES, HARDBOILED, run_cli

SINGLE = FIXTURES / "amx_bf16_matmul_std_single"
BATCH = [FIXTURES / c / "vectorizing.stmt" for c in
         ("amx_bf16_matmul_std_single", "amx_int8_matmul_vnni_tiled", "amx_bf16_std_reorder", "cpu_prefetch")]


def test_stdin_to_stdout_pipeline() -> None:
    text = (SINGLE / "vectorizing.stmt").read_bytes()
    compiled = run_cli("compile", "-", "-q", stdin=text)
    assert compiled.returncode == 0 and compiled.stderr == b""
    assert compiled.stdout == run_cli("compile", str(SINGLE / "vectorizing.stmt"), "-q").stdout
    # ... and the output is Halide IR that hardboiled reads back unchanged.
    again = run_cli("parse", "-", stdin=compiled.stdout)
    assert again.returncode == 0 and again.stdout == compiled.stdout


def test_several_inputs_into_a_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("compile", *map(str, BATCH), "-o", str(out), "--emit", "ir,c,report", "--no-cache")
    assert result.returncode == 0, result.stderr.decode()
    names = sorted(p.name for p in out.iterdir())
    stems = [f"{p.parent.name}_vectorizing" for p in BATCH]
    assert names == sorted(f"{s}{ext}" for s in stems for ext in (".stmt", ".c", ".h", ".report.json"))
    # each function is named after its file, so that they can be linked together
    assert all(f"\nint {stem}(" in (out / f"{stem}.c").read_text() for stem in stems)
    report = json.loads((out / f"{stems[0]}.report.json").read_text())
    assert report["schema"] == "hardboiled-report" and report["schema_version"] == 2
    assert report["lowered"] == report["selected"] == 3
    statement = report["statements"][1]
    assert set(statement) == {"buffer", "line", "target", "outcome", "lowered", "pattern", "intrinsics", "reason",
                              "explanation", "egraph", "seconds", "cached"}
    assert statement["buffer"] == "mm" and statement["target"] == "amx" and statement["line"] > 0
    assert statement["pattern"] == "tile product C + A*B" and "tile_matmul" in statement["intrinsics"]
    assert statement["egraph"]["nodes"] > 0
    # Plain text on a pipe: one summary line per input, no colour codes.
    text = result.stderr.decode()
    assert text.count("lowered") == 3 and "\x1b[" not in text


def test_several_inputs_need_an_output_directory() -> None:
    result = run_cli("compile", *map(str, BATCH[:2]))
    assert result.returncode == 2 and b"need -o DIR" in result.stderr


def test_json_report_on_stderr() -> None:
    result = run_cli("compile", str(SINGLE / "debug.log"), "--report", "json", "-o", os.devnull)
    assert result.returncode == 0
    (report,) = json.loads(result.stderr)
    assert report["stage"] == "vectorizing" and report["schedule"] == {"source": "default", "iterations": 20}


def test_json_diagnostics() -> None:
    result = run_cli("compile", "-", "--diagnostics-format", "json", stdin=b"for (x, 0, 10) {\n a[x] = 1 +\n}\n")
    assert result.returncode == ExitCode.INPUT_ERROR
    (line,) = result.stderr.decode().splitlines()
    diagnostic = json.loads(line)
    assert diagnostic == {"severity": "error", "message": "unexpected end of line", "file": "<stdin>",
                          "line": 2, "column": 12, "source_line": " a[x] = 1 +", "notes": diagnostic["notes"]}
    assert diagnostic["notes"][0].startswith("expected ")


@pytest.mark.parametrize("args, code", [
    (["compile", str(SINGLE / "vectorizing.stmt")], ExitCode.SUCCESS),
    (["compile", str(FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"), "--store-in", "prod=AMXTile"],
     ExitCode.SELECTION_MISS),
    (["compile", "/no/such/file.stmt"], ExitCode.INPUT_ERROR),
    (["verify", str(SINGLE / "debug.log"), str(SINGLE / "extracting_tile_operations.stmt")],
     ExitCode.VERIFICATION_MISMATCH),
], ids=["success", "miss", "input", "mismatch"])
def test_exit_codes(args: list[str], code: int) -> None:
    result = run_cli(*args)
    assert result.returncode == code, result.stderr.decode()
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize("name, addition", [("axioms.egg", "(rewrite (NoSuchConstructor x) x :ruleset axioms)"),
                                            ("amx_lowering.egg", "this is not egglog (((")])
def test_a_broken_rule_file_of_hardboiled_rules_dir_is_an_input_error_located_there(
        tmp_path: Path, name: str, addition: str) -> None:
    """HARDBOILED_RULES_DIR points at the user's working copy of the rules:
    a rule egglog rejects there is the user's error (2), located in that
    file (issue 33: it was exit 70, located in the installed file's name)."""
    rules = tmp_path / "rules"
    shutil.copytree(Path(__file__).resolve().parent.parent.parent / "rules", rules)
    broken = rules / name
    broken.write_text(broken.read_text() + f"\n{addition}\n")
    result = run_cli("compile", str(SINGLE / "vectorizing.stmt"), "--no-cache",
                     env={"HARDBOILED_RULES_DIR": str(rules)})
    assert result.returncode == ExitCode.INPUT_ERROR == 2, result.stderr
    assert result.stderr.decode().startswith(f"{broken}:")
    assert b"comes from HARDBOILED_RULES_DIR" in result.stderr


def test_a_broken_schedule_file_is_an_input_error(tmp_path: Path) -> None:
    schedule = tmp_path / "bad.egg"
    schedule.write_text("(run-schedule (repeat 2 (run no-such-ruleset)))\n")
    result = run_cli("compile", str(SINGLE / "vectorizing.stmt"), "--schedule", str(schedule), "--no-cache")
    assert result.returncode == ExitCode.INPUT_ERROR
    assert str(schedule).encode() + b":1:" in result.stderr


def test_toolchain_and_resource_exit_codes_are_covered_elsewhere() -> None:
    # 3: tests/codegen/test_codegen_c.py::test_a_compiler_failure_is_a_toolchain_error_with_its_message
    # 4: tests/select/test_select.py::test_egglog_timeout_is_a_resource_limit and ..._memory_cap_...
    assert ExitCode.TOOLCHAIN_FAILURE == 3 and ExitCode.RESOURCE_LIMIT == 4
    doc = (Path(__file__).resolve().parent.parent.parent / "docs" / "cli.md").read_text()
    for code in ExitCode:
        assert f"| {int(code)} |" in doc


def test_output_is_byte_identical_across_jobs_hash_seeds_and_cache(tmp_path: Path) -> None:
    runs = []
    cache = tmp_path / "cache"
    for jobs, seed, cache_args in (("1", "0", ["--no-cache"]), ("2", "12345", ["--cache-dir", str(cache)]),
                                   ("2", "999", ["--cache-dir", str(cache)])):
        out = tmp_path / f"out-{jobs}-{seed}"
        result = run_cli("compile", *map(str, BATCH), "-o", str(out), "--emit", "ir,c", "-j", jobs, *cache_args,
                         env={"PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stderr.decode()
        runs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert runs[0] == runs[1] == runs[2]
    # The third run was served from the cache the second one filled.
    assert any(cache.rglob("*.json"))


@pytest.mark.slow
def test_concurrent_runs_share_a_cache_safely(tmp_path: Path) -> None:
    """Four processes fill one cold cache at the same time: every one of them
    writes the same output, and the entries they leave are complete."""
    cache = tmp_path / "cache"
    reference = run_cli("compile", *map(str, BATCH), "-o", str(tmp_path / "reference"), "--no-cache")
    assert reference.returncode == 0, reference.stderr.decode()
    procs = [subprocess.Popen([str(HARDBOILED), "compile", *map(str, BATCH), "-o", str(tmp_path / f"out{i}"),
                               "--cache-dir", str(cache), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i in range(4)]
    for proc in procs:
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr.decode()
    expected = {p.name: p.read_bytes() for p in sorted((tmp_path / "reference").iterdir())}
    for i in range(4):
        assert {p.name: p.read_bytes() for p in sorted((tmp_path / f"out{i}").iterdir())} == expected
    entries = list(cache.rglob("*.json"))
    assert entries and not list(cache.rglob("*.tmp"))
    for entry in entries:
        json.loads(entry.read_text())


def test_warm_cache_is_reported(tmp_path: Path) -> None:
    args = ["compile", str(SINGLE / "vectorizing.stmt"), "--cache-dir", str(tmp_path), "--report", "json",
            "-o", os.devnull]
    cold = json.loads(run_cli(*args).stderr)[0]
    warm = json.loads(run_cli(*args).stderr)[0]
    assert not any(s["cached"] for s in cold["statements"])
    assert all(s["cached"] for s in warm["statements"])


def test_a_failed_input_writes_nothing_and_the_others_are_complete(tmp_path: Path) -> None:
    broken = tmp_path / "broken.stmt"
    broken.write_text("let x = (1 +\n")
    out = tmp_path / "out"
    result = run_cli("compile", str(BATCH[0]), str(broken), "-o", str(out), "--no-cache")
    assert result.returncode == ExitCode.INPUT_ERROR
    assert sorted(p.name for p in out.iterdir()) == [f"{BATCH[0].stem}.stmt"]
    assert (out / f"{BATCH[0].stem}.stmt").read_text().count("tile_matmul(") == 1


@pytest.mark.slow
def test_outputs_get_ordinary_permissions(tmp_path: Path) -> None:
    """Atomic writes go through a private temporary file (mode 0600); the
    result must still be what the umask gives any new file, and a shared
    library stays executable."""
    out = tmp_path / "out"
    library = tmp_path / "kernel.so"
    result = run_cli("compile", str(SINGLE / "vectorizing.stmt"), "-o", str(out), "--emit", "ir,c", "-q",
                     "--no-cache", "--build", str(library))
    assert result.returncode == 0, result.stderr.decode()
    umask = os.umask(0o022)
    os.umask(umask)
    for path in out.iterdir():
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path
    assert library.stat().st_mode & 0o111


def test_special_output_targets_are_written_through(tmp_path: Path) -> None:
    """-o into a symbolic link keeps the link, into a FIFO (like /dev/null or
    /dev/stdout) writes to it instead of renaming a file over it, and into a
    missing directory is a clean input error."""
    expected = run_cli("compile", str(SINGLE / "vectorizing.stmt"), "-q", "--no-cache").stdout
    (tmp_path / "real.stmt").write_text("old")
    link = tmp_path / "link.stmt"
    link.symlink_to("real.stmt")
    assert run_cli("compile", str(SINGLE / "vectorizing.stmt"), "-q", "--no-cache", "-o", str(link)).returncode == 0
    assert link.is_symlink() and (tmp_path / "real.stmt").read_bytes() == expected

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    assert run_cli("compile", str(SINGLE / "vectorizing.stmt"), "-q", "--no-cache", "-o", str(fifo)).returncode == 0
    assert reader.communicate(timeout=60)[0] == expected
    assert not fifo.is_file()

    missing = run_cli("compile", str(SINGLE / "vectorizing.stmt"), "-q", "--no-cache",
                      "-o", str(tmp_path / "no" / "such" / "out.stmt"))
    assert missing.returncode == ExitCode.INPUT_ERROR
    assert missing.stderr.decode().startswith(f"hardboiled: error: cannot write '{tmp_path}/no/such/out.stmt'")


def test_an_interrupted_run_leaves_no_output(tmp_path: Path) -> None:
    schedule = tmp_path / "slow.egg"
    # egglog's own repeat, every round run (a top-level one stops at its fixpoint: select/rounds.py)
    schedule.write_text("(run-schedule (seq (repeat 100000000 (run supporting) (run axioms))))\n")
    out = tmp_path / "out.stmt"
    env = dict(os.environ, HARDBOILED_CACHE_DIR=str(tmp_path / "cache"))
    # A shell's background job starts with SIGINT ignored, and Python keeps
    # that; a user's Ctrl-C reaches a foreground run, which the child is here.
    proc = subprocess.Popen([str(HARDBOILED), "compile", str(SINGLE / "vectorizing.stmt"), "--schedule", str(schedule),
                             "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    assert b"interrupted" in stderr and b"Traceback" not in stderr
    assert list(tmp_path.iterdir()) == [schedule] or not out.exists()
    assert not out.exists()


def test_rules_lists_rule_files_and_rulesets() -> None:
    result = run_cli("rules")
    assert result.returncode == 0
    text = result.stdout.decode()
    for needle in ("rules/axioms.egg:", "  axioms:", "rules/amx_layouts.egg:", "  amx-layouts:",
                   "rules/amx_lowering.egg:", "  amx-lowering:", "rules/supporting.egg:"):
        assert needle in text
