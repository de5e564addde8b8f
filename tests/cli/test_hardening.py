"""Hardening (issue 18): one regression test per defect found by the outside
review, with inputs, schedules and a shared cache directory untrusted
(docs/security.md)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from hardboiled.support.cache import RecordCache, ResultCache, cache_directory_problem, matches

from ..conftest import FIXTURES, run_cli

LOG = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"


# ------------------------------------------------------------------ 4. the cache
def _fill(cache: Path, out: Path) -> list[Path]:
    """Compile once with a fresh cache; its entries."""
    result = run_cli("compile", str(LOG), "--cache-dir", str(cache), "-q", "-o", str(out))
    assert result.returncode == 0, result.stderr
    return sorted(p for p in cache.rglob("*.json") if "direct" not in p.parts)


@pytest.mark.parametrize("kind", [ResultCache, RecordCache])
def test_no_single_byte_corruption_of_an_entry_is_served(tmp_path: Path, kind: type[ResultCache]) -> None:
    """Each entry carries a checksum of its key and value (a record, of its
    encoded bytes): a flipped byte anywhere, or an entry cut short, is a
    miss (the result is computed again and the entry replaced), never a
    different result nor an exception. The review found 79% served."""
    store = kind(tmp_path / "c")
    value = {"terms": ["(Store \"mm\" (TileZero 16 64) (IntImm 0))"], "costs": [3], "size": None}
    store.put("k" * 64, value)
    (path,) = (tmp_path / "c").rglob(f"*{kind.suffix}")
    original = path.read_bytes()
    served_wrong = 0
    rng = random.Random(18)
    for position in range(len(original)):
        corrupted = bytearray(original)
        corrupted[position] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(corrupted))
        got = store.get("k" * 64)
        served_wrong += got is not None and got != value
        path.write_bytes(original[:position])
        served_wrong += store.get("k" * 64) is not None
    assert served_wrong == 0
    path.write_bytes(original)
    assert store.get("k" * 64) == value


@pytest.mark.parametrize("kind", [ResultCache, RecordCache])
def test_a_value_the_encoding_cannot_hold_is_not_cached_and_leaves_nothing(tmp_path: Path,
                                                                          kind: type[ResultCache]) -> None:
    import os

    store = kind(tmp_path / "c")
    descriptors = len(os.listdir("/proc/self/fd"))
    store.put("k" * 64, {"a": object()})
    assert store.get("k" * 64) is None
    assert not [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert len(os.listdir("/proc/self/fd")) == descriptors


def test_a_wrong_shaped_entry_is_a_miss_not_an_internal_error(tmp_path: Path) -> None:
    """An intact entry of the wrong shape (another version's, a hand-made
    one) is recomputed and replaced: the review found exit 70 on every run
    until the cache was deleted."""
    cache, out = tmp_path / "cache", tmp_path / "out.stmt"
    entries = _fill(cache, out)
    expected = out.read_bytes()
    for path in entries:
        entry = json.loads(path.read_text())
        entry["value"] = {"outputs": 3}
        from hardboiled.support.cache import _checksum

        entry["checksum"] = _checksum(entry["key"], entry["value"])
        path.write_text(json.dumps(entry))
    out.unlink()
    again = run_cli("compile", str(LOG), "--cache-dir", str(cache), "-q", "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert out.read_bytes() == expected
    assert all(json.loads(p.read_text())["value"] != {"outputs": 3} for p in entries)  # replaced


def test_a_cache_directory_others_can_write_or_a_link_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    result = run_cli("compile", str(LOG), "--cache-dir", str(shared), "-q", "-o", str(tmp_path / "o.stmt"))
    assert result.returncode == 2
    assert f"cache directory '{shared}' is writable by other users" in result.stderr.decode()
    assert not (tmp_path / "o.stmt").exists()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "private")
    assert cache_directory_problem(link) == "is a symbolic link"
    assert run_cli("compile", str(LOG), "--cache-dir", str(link), "-q", "-o", str(tmp_path / "o.stmt")).returncode == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user's needs root")
def test_a_cache_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    assert cache_directory_problem(theirs) == "belongs to another user"


def test_a_new_cache_directory_is_private_and_links_inside_are_not_followed(tmp_path: Path) -> None:
    cache, out = tmp_path / "new" / "cache", tmp_path / "out.stmt"
    entries = _fill(cache, out)
    assert cache.stat().st_mode & 0o777 == 0o700
    assert all(p.parent.stat().st_mode & 0o777 == 0o700 for p in entries)
    store = ResultCache(cache)
    planted = tmp_path / "planted.json"
    for path in entries:
        planted.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(planted)
        key = path.stem
        assert store.get(key) is None
        path.unlink()
        planted.rename(path)
        assert store.get(key) is not None


def test_shapes() -> None:
    shape = {"terms": [str], "size": (None, {"nodes": int}), "outputs": {"*": str}}
    assert matches({"terms": ["a"], "size": None, "outputs": {"ir": "x"}}, shape)
    assert matches({"terms": [], "size": {"nodes": 3}, "outputs": {}}, shape)
    assert not matches({"terms": [1], "size": None, "outputs": {}}, shape)
    assert not matches({"terms": [], "size": {"nodes": True}, "outputs": {}}, shape)
    assert not matches({"terms": [], "size": None, "outputs": {"ir": 3}}, shape)
    assert not matches({"terms": [], "size": None}, shape)


# ------------------------------------------------------------------ 10. outputs
def test_a_link_planted_in_the_output_directory_is_replaced_not_written_through(tmp_path: Path) -> None:
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious\n")
    (out / "debug.stmt").symlink_to(victim)
    result = run_cli("compile", str(LOG), "--no-cache", "-q", "--emit", "ir,report", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert not (out / "debug.stmt").is_symlink() and (out / "debug.stmt").read_text().startswith("assert(")


def test_overwriting_keeps_a_private_file_private(tmp_path: Path) -> None:
    out = tmp_path / "out.stmt"
    out.write_text("old\n")
    os.chmod(out, 0o600)
    assert run_cli("compile", str(LOG), "--no-cache", "-q", "-o", str(out)).returncode == 0
    assert out.stat().st_mode & 0o777 == 0o600 and out.read_text() != "old\n"
    fresh = tmp_path / "fresh.stmt"
    assert run_cli("compile", str(LOG), "--no-cache", "-q", "-o", str(fresh)).returncode == 0
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_output_directories_as_documented(tmp_path: Path) -> None:
    """docs/cli.md: -o DIR is created with its parents; -o FILE in a
    missing directory is exit 2 and writes nothing."""
    made = tmp_path / "a" / "b"
    assert run_cli("compile", str(LOG), "--no-cache", "-q", "--emit", "ir,report", "-o", str(made)).returncode == 0
    assert sorted(p.name for p in made.iterdir()) == ["debug.report.json", "debug.stmt"]
    missing = run_cli("compile", str(LOG), "--no-cache", "-q", "-o", str(tmp_path / "no" / "x.stmt"))
    assert missing.returncode == 2 and b"cannot write" in missing.stderr
    assert not (tmp_path / "no").exists()


# ------------------------------------------------------------------ 8. literals and lanes
@pytest.mark.parametrize("value, line, column, message", [
    ("9" * 4301, 2, 8, "integer literal " + "9" * 20 + "...(4301 digits) does not fit in int32"),
    ("3000000000", 2, 8, "integer literal 3000000000 does not fit in int32 (-2147483648 to 2147483647)"),
    ("(int64)99999999999999999999", 2, 15, "integer literal 99999999999999999999 does not fit in int64"),
    ("(uint8)256", 2, 15, "integer literal 256 does not fit in uint8 (0 to 255)"),
    ("(uint16)-1", 2, 16, "integer literal -1 does not fit in uint16"),
])
def test_an_integer_literal_must_fit_its_type(tmp_path: Path, value: str, line: int, column: int,
                                              message: str) -> None:
    """The review crashed the parser with a 4,301-digit literal (Python's
    int-to-string limit) and saw int32 and int64 overflow accepted."""
    source = tmp_path / "lit.stmt"
    source.write_text(f"allocate f[int32 * 1]\nf[0] = {value}\nfree f\n")
    result = run_cli("parse", str(source))
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert stderr.startswith(f"{source}:{line}:{column}: error: {message}"), stderr[:300]
    assert "Traceback" not in stderr and len(stderr) < 2000


def test_the_extreme_literals_halide_prints_are_read(tmp_path: Path) -> None:
    source = tmp_path / "edges.stmt"
    text = ("allocate f[int64 * 1]\nf[0] = (int64)-9223372036854775808\nf[0] = (int64)9223372036854775807\n"
            "allocate g[uint64 * 1]\ng[0] = (uint64)18446744073709551615\nfree g\nfree f\n")
    source.write_text(text)
    result = run_cli("parse", str(source))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == text


@pytest.mark.parametrize("statement, column, message", [
    ("f[ramp(0, 1, 8)] = ramp(0, 1, 4)", 1, "store of 4 lanes at an index of 8 lanes"),
    ("f[ramp(0, 1, 4)] = select(x8(1 < 2), ramp(0, 1, 4), ramp(0, 1, 4))", 20,
     "select needs a boolean condition"),
])
def test_a_lane_count_mismatch_is_a_located_input_error(tmp_path: Path, statement: str, column: int,
                                                         message: str) -> None:
    """The review saw lane mismatches end in exit 70."""
    source = tmp_path / "lanes.stmt"
    source.write_text(f"allocate f[int32 * 8]\n{statement}\nfree f\n")
    for args in (("parse", str(source)), ("compile", str(source), "--emit", "c", "--no-cache")):
        result = run_cli(*args)
        assert result.returncode == 2, result.stderr
        assert result.stderr.decode().startswith(f"{source}:2:{column}: error: {message}"), result.stderr


@pytest.mark.parametrize("statement, message", [
    ("f[x70000(0)] = x70000(0)", "a vector has 1 to 65535 lanes in Halide, not 70000"),
    ("f[ramp(0, 1, 0)] = x1(0)", "a vector has 1 to 65535 lanes in Halide, not 0"),
    ("f[0] = (uint" + "7" * 5000 + ")0", "unknown type 'uint" + "7" * 36 + "...'"),
    ("f[0] = (int32x" + "7" * 5000 + ")0", "unknown type"),
    ("f[0] = f[0 aligned(" + "7" * 5000 + ", 0)]", "alignment out of range"),
])
def test_numbers_in_types_lanes_and_alignments_are_bounded(tmp_path: Path, statement: str, message: str) -> None:
    """Found by fuzzing: numbers past Python's int-to-string limit in a
    type, a lane count or an alignment were internal errors; lane counts
    past Halide's 16-bit limit were accepted."""
    source = tmp_path / "n.stmt"
    source.write_text(f"allocate f[int32 * 8]\n{statement}\nfree f\n")
    result = run_cli("parse", str(source))
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert stderr.startswith(f"{source}:2:") and message in stderr.splitlines()[0], stderr[:300]


def test_a_huge_type_code_in_a_buffer_assert_is_not_an_internal_error(tmp_path: Path) -> None:
    source = tmp_path / "assert.stmt"
    source.write_text(f"assert(b.type == (uint32){'7' * 5000}, 0)\nallocate f[int32 * 1]\nf[0] = 1\nfree f\n")
    result = run_cli("parse", str(source))
    assert result.returncode in (0, 2) and b"internal error" not in result.stderr, result.stderr[:300]


# ------------------------------------------------------------------ fuzzing
@pytest.mark.slow
def test_a_seeded_fuzz_sample_ends_in_no_internal_error_signal_or_timeout() -> None:
    """500 inputs (tests/fuzzing.py, seed 18): grammar strings (committed
    in tests/fixtures/fuzz), byte mutations, semantic mutations and (a
    quarter) structural mutations of real dumps, through parse, compile and
    compile --verify. bench/fuzz.py runs 10,000."""
    from ..fuzzing import STRUCTURAL_KINDS, inputs, run

    items = inputs(18, 500)
    strategies = Counter(i.strategy.split("-")[0] for i in items)
    assert len(items) == 500 and strategies == {"grammar": 125, "bytes": 125, "semantic": 125, "structural": 125}
    # Every kind of structural mutation is drawn.
    assert {kind for i in items if i.strategy.startswith("structural-")
            for kind in i.strategy.removeprefix("structural-").split("+")} == set(STRUCTURAL_KINDS)
    outcomes = run(items)
    assert sum(outcomes.counts.values()) == 500
    assert outcomes.bad() == 0, [(i.strategy, i.target, outcome, said) for i, outcome, said in outcomes.failures]
    # The sample reaches past the parser: some inputs compile, some verify.
    assert outcomes.counts[("compile", "exit 0")] > 0 and outcomes.counts[("verify", "exit 0")] > 0


# ------------------------------------------------------------------ 11. Halide's own AMX stage
HALIDE_AMX_STAGES = sorted(p.parent.name for p in FIXTURES.glob("*/extracting_tile_operations.stmt"))


@pytest.mark.parametrize("case", HALIDE_AMX_STAGES)
def test_halide_s_own_amx_stage_compiles_to_c(case: str) -> None:
    """The stage after "extracting tile operations" is Halide's own AMX
    result; its tile shapes are casts (``int16(16)``), which legalization
    took for a bug (exit 70 on these 18 real dumps)."""
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions

    data = (FIXTURES / case / "extracting_tile_operations.stmt").read_bytes()
    result = compile_text(f"{case}.stmt", data, CompileOptions.from_flags(emit=("ir", "c")))
    assert result.exit_code == 0, [d.message for d in result.diagnostics]
    assert "tile_matmul" in result.outputs["ir"] and "_tile_loadd" in result.outputs["c"]


def test_verify_catches_halide_s_wrong_amx_output_for_a_standard_layout_b() -> None:
    """``hardboiled verify VECTORIZING EXTRACTED`` runs Halide's own AMX
    stage against the stage it came from: upstream Halide's result for a
    standard-layout B is wrong; its VNNI one is right on buffers dense from
    0, wrong where rows are padded (docs/tutorial.md)."""
    wrong = FIXTURES / "amx_bf16_matmul_std_single"
    result = run_cli("verify", str(wrong / "vectorizing.stmt"), str(wrong / "extracting_tile_operations.stmt"))
    assert result.returncode == 5, result.stderr
    assert b"mm_global_wrapper$0[0, 0]: expected" in result.stderr
    right = FIXTURES / "amx_bf16_matmul_vnni_single"
    result = run_cli("verify", str(right / "vectorizing.stmt"), str(right / "extracting_tile_operations.stmt"))
    assert result.returncode == 5 and b"the layouts before it agreed" in result.stderr, result.stderr


# ------------------------------------------------------------------ 2. recursion
def _nested_calls(n: int) -> str:
    e = "x"
    for i in range(n):
        e = f"max({e}, {i})"
    return f"allocate g[int32 * 1]\ng[0] = {e}\nfree g\n"


def _nested_ifs(n: int) -> str:
    body = "g[0] = 1\n"
    for i in range(n):
        body = f"if (x > {i}) {{\n{body}}}\n"
    return f"allocate g[int32 * 1]\n{body}free g\n"


@pytest.mark.slow
@pytest.mark.parametrize("name, text", [
    ("calls", _nested_calls(1000)),
    ("ifs", _nested_ifs(1000)),
    ("sum", "allocate g[int32 * 1]\ng[0] = " + " + ".join(f"y{i}" for i in range(3000)) + "\nfree g\n"),
])
def test_deep_programs_meet_no_recursion_limit(tmp_path: Path, name: str, text: str) -> None:
    """The review hit recursion limits at 245 nested calls, 327 nested ifs
    and a 493-term sum; every command now runs on a deep stack (issue 19,
    support/deep.py)."""
    source = tmp_path / f"{name}.stmt"
    source.write_text(text)
    parsed = run_cli("parse", str(source))
    assert parsed.returncode == 0, parsed.stderr[-300:]
    source.write_bytes(parsed.stdout)  # Halide's own indentation: printing it again changes nothing
    again = run_cli("parse", str(source))
    assert again.returncode == 0 and again.stdout == parsed.stdout
    compiled = run_cli("compile", str(source), "--no-cache", "-q", "--emit", "c", "-o", str(tmp_path / f"{name}.c"))
    assert compiled.returncode == 0, compiled.stderr[-300:]



# ------------------------------------------------------------------ 9. memory per input byte
@pytest.mark.slow
@pytest.mark.parametrize("piece", ["abcdefgh", "abc\\tdef", "\\x01\\\"\\\\"])
def test_a_long_string_literal_costs_little_memory(tmp_path: Path, piece: str) -> None:
    """Item 9: an 8 MB string literal (an escape every few characters, or
    none) is read and printed back byte for byte under a 1 GB address-space
    limit. The review's lexer took 845 B per byte of a literal; the
    possessive pattern keeps no backtracking state per character or escape
    (bench/memory.py measures the bytes per input byte)."""
    text = (FIXTURES / "cpu_strings_and_types" / "vectorizing.stmt").read_text()
    literal = '"Input buffer A"'
    assert literal in text
    source = tmp_path / "long.stmt"
    source.write_text(text.replace(literal, '"' + piece * ((8 << 20) // len(piece)) + '"', 1))
    result = _under_address_limit(1_000_000, "parse", str(source), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == source.read_bytes()


# ------------------------------------------------------------------ 6. signals and children
import signal  # noqa: E402
import time  # noqa: E402

from ..conftest import HARDBOILED  # noqa: E402

SLOW_SCHEDULE = "(run-schedule (seq (repeat 100000000 (run supporting) (run axioms))))\n"
"""A schedule that keeps the egglog child busy: egglog's own repeat, which
runs every round (the child stops a top-level repeat at its fixpoint,
select/rounds.py, and these rules reach theirs at once)."""


def _slow_compiler(tmp_path: Path) -> Path:
    script = tmp_path / "slowcc"
    script.write_text("#!/bin/sh\nsleep 60\n")
    script.chmod(0o755)
    return script


def _egglog_children_of(parent: int) -> set[int]:
    """The egglog children of process ``parent`` (other runs, such as a
    benchmark beside the suite, have their own)."""
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
            cmdline = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(parent) and b"hardboiled.select.eqsat" in cmdline:
            found.add(int(status.parent.name))
    return found


def _alive(pid: int) -> bool:
    """Running: not gone, and not a zombie (an orphan waits for init to
    reap it, which a container's init may never do)."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _start(tmp_path: Path, *args: str, sigint: bool = False) -> subprocess.Popen[bytes]:
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), HARDBOILED_CACHE_DIR=str(tmp_path / "cache"))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.Popen([str(HARDBOILED), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if sigint else None)


def test_sigterm_in_saturation_exits_143_with_no_output_and_no_child(tmp_path: Path) -> None:
    schedule = tmp_path / "slow.egg"
    schedule.write_text(SLOW_SCHEDULE)
    proc = _start(tmp_path, "compile", str(LOG), "--schedule", str(schedule), "-o", str(tmp_path / "out.stmt"))
    time.sleep(2.0)
    egglog = _egglog_children_of(proc.pid)
    assert egglog, "no egglog child was running"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr.decode()
    assert stderr.decode().endswith("hardboiled: error: terminated\n") and b"Traceback" not in stderr
    assert not (tmp_path / "out.stmt").exists()
    time.sleep(0.5)
    assert not [pid for pid in egglog if _alive(pid)]  # the egglog child went with it


def test_sigterm_while_a_compiler_hangs_removes_the_temporary_directory(tmp_path: Path) -> None:
    """The review found SIGTERM killing hardboiled (-15) and leaving its
    temporary directories behind."""
    proc = _start(tmp_path, "compile", str(LOG), "--no-cache", "--run", "--cc", str(_slow_compiler(tmp_path)),
                  "-o", str(tmp_path / "out.stmt"))
    ours = tmp_path / "tmp"
    deadline = time.monotonic() + 30
    while not list(ours.glob("hardboiled-cc-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(ours.glob("hardboiled-cc-*")), "the compile never reached the compiler"
    time.sleep(0.5)  # the compiler is running
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr.decode()
    assert list(ours.glob("hardboiled-*")) == []  # (lark keeps its grammar cache there too)
    assert not (tmp_path / "out.stmt").exists()


@pytest.mark.slow
def test_sigint_with_two_jobs_never_hangs_nor_leaves_workers(tmp_path: Path) -> None:
    """The review saw 2 hangs in 100 tries."""
    schedule = tmp_path / "slow.egg"
    schedule.write_text(SLOW_SCHEDULE)
    second = tmp_path / "second.log"
    second.write_bytes(LOG.read_bytes())
    for attempt in range(5):
        proc = _start(tmp_path, "compile", str(LOG), str(second), "-j", "2", "--schedule", str(schedule), "--no-cache",
                      "-o", str(tmp_path / f"out{attempt}"), sigint=True)
        time.sleep(1.5 + 0.3 * attempt)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr.decode()
        assert not (tmp_path / f"out{attempt}").exists() or not list((tmp_path / f"out{attempt}").iterdir())
    time.sleep(0.5)
    workers = subprocess.run(["pgrep", "-f", f"{tmp_path}"], capture_output=True, text=True).stdout.split()
    assert workers == []


@pytest.mark.parametrize("where", ["forward", "replay", "replay in a server's worker"])
def test_ctrl_c_before_the_command_line_runs_is_exit_130_not_a_traceback(where: str, monkeypatch, capsys) -> None:
    """Ctrl-C while the command loads (offering itself to a server, or
    replaying a record, alone or in a compile server's worker) ends it as
    an interruption: exit 130, one line."""
    from hardboiled import cli
    from hardboiled.cli import client, direct, server

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(client if where == "forward" else direct, where.split()[0], interrupted)
    if where.endswith("worker"):
        import atexit

        monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: None)  # the worker's, not this test process's
        assert server._run(["compile", str(LOG), "-q"]) == 130
    else:
        with pytest.raises(SystemExit) as exit:
            cli.main(["compile", str(LOG), "-q"])
        assert exit.value.code == 130
    assert capsys.readouterr().err == "hardboiled: error: interrupted\n"


def test_a_compiler_that_hangs_is_a_toolchain_error(tmp_path: Path, monkeypatch) -> None:
    from hardboiled.codegen import toolchain
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions

    monkeypatch.setattr(toolchain, "COMPILER_TIMEOUT_S", 1.0)
    result = compile_text("mm.log", LOG.read_bytes(), CompileOptions.from_flags(run=True, cc=str(_slow_compiler(tmp_path))))
    assert result.exit_code == 3, [d.message for d in result.diagnostics]
    assert "did not finish within 1 s" in result.diagnostics[0].message


# ------------------------------------------------------------------ 3. the interpreter
REGRESSIONS = sorted((FIXTURES.parent / "fuzz" / "regressions").glob("*.stmt"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_what_the_10000_input_fuzz_run_found_is_a_diagnostic(path: Path) -> None:
    """Six semantic mutations of real dumps (bench/fuzz.py, seed 1) ended in
    exit 70 in verification: a dimension the buffer lacks, an empty loop's
    variable, a call on vectors of different lengths, a negative
    allocation. Each is now the program's error, exit 2. Four structural
    mutations (seed 2027: extents near 2^31 and past it) made passes fold
    int32 constants past int32 (OverflowError, exit 70); constants now
    wrap as the program's arithmetic does (ir/exprs.py, IntImm). A byte
    mutation (seed 4711) passed a buffer as a dimension number
    (TypeError, exit 70)."""
    from hardboiled.pipeline.driver import compile_text
    from hardboiled.pipeline.options import CompileOptions

    result = compile_text(path.name, path.read_bytes(), CompileOptions.from_flags(verify=True))
    assert result.exit_code in (0, 1, 2, 4, 5), [d.message for d in result.diagnostics]


def test_the_interpreter_refuses_a_buffer_too_large_to_hold(tmp_path: Path) -> None:
    """The review saw 15 GB used at 2e9 lanes."""
    text = (FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt").read_text()
    source = tmp_path / "big.stmt"
    source.write_text(text.replace("allocate mm[float32 * 16 * 16] in AMXTile", "allocate mm[float32 * 16 * 100000000]"))
    result = run_cli("compile", str(source), "--no-cache", "--verify", "-q", "-o", str(tmp_path / "o.stmt"))
    assert result.returncode == 4, result.stderr
    assert b"'mm' needs 1600000000 elements, more than the interpreter's 1024 MiB per buffer" in result.stderr


@pytest.mark.slow
def test_the_interpreter_stops_at_its_time_limit(tmp_path: Path) -> None:
    """The review: the interpreter had no time bound. A real dump whose
    loop runs 2^31 - 1 times (its extent changed) stops at --verify-timeout
    with exit 4 and no output, for compile --verify and for verify."""
    import time

    lines = (FIXTURES / "amx_bf16_matmul_std_tiled" / "vectorizing.stmt").read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("for ("))
    indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
    end = next(i for i in range(start, len(lines)) if lines[i] == indent + "}")
    # The first loop nest, run again and again by a loop around it.
    lines[end:end + 1] = [lines[end], indent + "}"]
    lines[start:start] = [indent + "for (spin, 0, 2147483647) {"]
    source = tmp_path / "endless.stmt"
    source.write_text("\n".join(lines))
    started = time.monotonic()
    result = run_cli("compile", str(source), "--no-cache", "--verify", "--verify-timeout", "2", "-q",
                     "-o", str(tmp_path / "o.stmt"))
    assert result.returncode == 4, result.stderr
    assert b"error: the reference interpreter did not finish within 2 s" in result.stderr
    assert b"raise the limit with --verify-timeout" in result.stderr
    assert not (tmp_path / "o.stmt").exists() and time.monotonic() - started < 60
    checked = run_cli("verify", str(source), str(source), "--verify-timeout", "1")
    assert checked.returncode == 4, checked.stderr
    assert b"did not finish within 1 s" in checked.stderr


# ------------------------------------------------------------------ 1. generated code out of process
def _library(tmp_path: Path, body: str) -> Path:
    """A shared library whose raw entry point ``k_raw`` runs ``body``
    (built with the C compiler the toolchain finds: clang or gcc)."""
    from hardboiled.codegen.toolchain import find_compiler

    source, library = tmp_path / "k.c", tmp_path / "k.so"
    source.write_text(f"int k_raw(void) {{ {body} }}\nint k(void) {{ return 0; }}\n")
    compiler = find_compiler(None)
    subprocess.run([*compiler.command, "-O0", "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    return library


@pytest.mark.slow
@pytest.mark.parametrize("body, signal_name", [
    ("volatile int *p = 0; return *p;", "SIGSEGV"),
    ("volatile char big[64 << 20]; big[0] = 1; return big[0];", "SIGSEGV"),  # past the 8 MB stack
])
def test_generated_code_that_crashes_is_exit_6_and_hardboiled_survives(tmp_path: Path, body: str,
                                                                        signal_name: str) -> None:
    """The review: a heap overflow reported "equal", a 4M-lane stack array
    killed hardboiled (exit 139). --run now calls the kernel in a child."""
    from hardboiled.support.diagnostics import ExitCode
    from hardboiled.verify.run import KernelCrashed, run_isolated

    with pytest.raises(KernelCrashed) as raised:
        run_isolated("raw", _library(tmp_path, body), "k", [], {})
    assert raised.value.exit_code == ExitCode.KERNEL_CRASHED == 6
    assert f"the generated kernel's raw entry point crashed ({signal_name})" in raised.value.diagnostic.message


@pytest.mark.slow
def test_generated_code_that_never_returns_is_stopped(tmp_path: Path, monkeypatch) -> None:
    from hardboiled.verify import run

    monkeypatch.setattr(run, "KERNEL_TIMEOUT_S", 1.0)
    with pytest.raises(run.KernelCrashed) as raised:
        run.run_isolated("raw", _library(tmp_path, "for (;;) {} return 0;"), "k", [], {})
    assert "did not finish within 1 s" in raised.value.diagnostic.message


def _closure_kernel(tmp_path: Path) -> tuple[Path, list]:
    """The C of a real CPU dump whose allocation is sized by the output's
    extents (``allocate g[float32 * f.extent.0 * f.extent.1]``), built as
    ``k``, and its arguments."""
    from hardboiled.codegen.abi import kernel_signature
    from hardboiled.frontend.parse import parse_input

    source = FIXTURES / "cpu_parallel_closure" / "vectorizing.stmt"
    library = tmp_path / "k.so"
    result = run_cli("compile", str(source), "--no-cache", "--build", str(library), "--name", "k", "-q",
                     "--emit", "c", "-o", str(tmp_path / "k.c"))
    assert result.returncode == 0, result.stderr
    return library, kernel_signature(parse_input(source.read_text()).ir)


def _tiny_buffers(extent1: int, stride1: int, min1: int = 0) -> dict:
    """Buffers A and f that claim (1 x extent1) elements with row stride
    stride1 from row min1, over 16 bytes of memory: only a kernel that
    checks before it reads or allocates survives them."""
    import numpy as np

    from hardboiled import ir
    from hardboiled.verify.interp import BufferT

    return {name: BufferT(name, ir.Float(32), np.zeros(4, np.float32), (0, min1), (1, extent1), (1, stride1))
            for name in ("A", "f")}


def test_the_raw_entry_point_s_own_failures_are_documented() -> None:
    """Each status NAME_raw returns for itself is in docs/cli.md's table,
    with the Halide error code NAME turns it into."""
    from hardboiled.codegen.abi import RAW_FAILURES, halide_error_code

    doc = (Path(__file__).resolve().parent.parent.parent / "docs" / "cli.md").read_text()
    for status, name in RAW_FAILURES.items():
        assert f"| {status} |" in doc and f"| {halide_error_code(name)} (`" in doc, name

@pytest.mark.slow
@pytest.mark.parametrize("entry, status", [("raw", -200001), ("halide_buffer_t", -6)])
def test_the_entry_points_refuse_a_buffer_past_int32_indexing(tmp_path: Path, entry: str, status: int) -> None:
    """The review: an int32 size overflow wrote past a heap buffer and was
    reported "equal". Index arithmetic is int32, as in Halide, so both entry
    points refuse, before anything runs, a buffer whose elements lie more
    than 2^31 - 1 apart (here 2^29 rows of stride 8), whatever checks the
    dump itself carries: buffer_extents_too_large (-6) for NAME."""
    from hardboiled.verify.run import run_isolated

    library, arguments = _closure_kernel(tmp_path)
    assert run_isolated(entry, library, "k", arguments, _tiny_buffers(1 << 29, 8)) == status


@pytest.mark.slow
@pytest.mark.parametrize("entry, status", [("raw", -200001), ("halide_buffer_t", -6)])
def test_rows_that_end_at_int32_s_last_coordinate_are_refused(tmp_path: Path, entry: str, status: int) -> None:
    """The ABI fuzz (bench/abi_fuzz.py): min.1 = 2^31 - 19 with 19 rows
    ends exactly at int32's largest coordinate; Halide's own checks compute
    min + extent, which overflowed (UBSan) and let a read 2 GiB away through
    (ASan: SEGV). One past the last coordinate must fit int32 too."""
    from hardboiled.verify.run import run_isolated

    library, arguments = _closure_kernel(tmp_path)
    assert run_isolated(entry, library, "k", arguments, _tiny_buffers(19, 1, (1 << 31) - 19)) == status


@pytest.mark.slow
@pytest.mark.parametrize("entry, status", [("raw", -200004), ("halide_buffer_t", -28)])
def test_a_negative_extent_is_refused_with_halide_s_code(tmp_path: Path, entry: str, status: int) -> None:
    """Issue 33, item 13: a negative extent returned -6 (extents too
    large), where Halide returns buffer_extents_negative (-28)."""
    from hardboiled.verify.run import run_isolated

    library, arguments = _closure_kernel(tmp_path)
    assert run_isolated(entry, library, "k", arguments, _tiny_buffers(-4, 1)) == status


@pytest.mark.slow
@pytest.mark.parametrize("entry, status", [("raw", -200002), ("halide_buffer_t", -5)])
def test_an_allocation_past_2_gib_is_refused_not_wrapped(tmp_path: Path, entry: str, status: int) -> None:
    """2^29 elements fit int32 indexing, but g = 4 bytes x 2^29 does not fit
    Halide's 2^31 - 1 bytes: its size is computed in 64 bits and refused
    (buffer_allocation_too_large, -5), where an int32 product would wrap."""
    from hardboiled.verify.run import run_isolated

    library, arguments = _closure_kernel(tmp_path)
    assert run_isolated(entry, library, "k", arguments, _tiny_buffers(1 << 29, 1)) == status
    source = (tmp_path / "k.c").read_text()
    assert "int64_t t2 = hb_allocation_elements(4, 3, t1);" in source


@pytest.mark.slow
def test_wide_vectors_live_on_the_heap_not_the_stack(tmp_path: Path) -> None:
    """The review: a 4M-lane stack array killed hardboiled. Lanes are now
    at most 65,535 (Halide's limit), and a vector value over 4 KiB lives in
    a scratch block from the heap: forty 65,535-lane statements (about
    20 MB of vector values, more than a thread's 8 MB stack) run, and
    agree with the interpreter."""
    import numpy as np

    from hardboiled import ir
    from hardboiled.codegen.abi import kernel_signature
    from hardboiled.codegen.c import generate_c
    from hardboiled.codegen.toolchain import compile_c, find_compiler
    from hardboiled.frontend.parse import parse_input
    from hardboiled.verify.compare import run_program
    from hardboiled.verify.interp import BufferT
    from hardboiled.verify.run import run_isolated

    lanes = 65535
    lines = []
    for b in ("A", "out"):
        lines += [f"let {b} = (void *)_halide_buffer_get_host((struct halide_buffer_t *){b}.buffer)",
                  f"let {b}.type = (uint32)_halide_buffer_get_type((struct halide_buffer_t *){b}.buffer)",
                  f"let {b}.dimensions = _halide_buffer_get_dimensions((struct halide_buffer_t *){b}.buffer)",
                  f'assert({b}.type == (uint32)73730, halide_error_bad_type("{b}", {b}.type, (uint32)73730))',
                  f'assert({b}.dimensions == 1, halide_error_bad_dimensions("{b}", {b}.dimensions, 1))']
    lines += [f"out[ramp(0, 1, {lanes})] = ((float32x{lanes})out[ramp(0, 1, {lanes})]*x{lanes}(0.500000f)) + "
              f"((float32x{lanes})A[ramp(0, 1, {lanes})]*x{lanes}({k}.000000f))" for k in range(40)]
    stmt = parse_input("\n".join(lines) + "\n", buffer_types={"A": ir.Float(32), "out": ir.Float(32)}).ir
    source = generate_c(stmt, "wide")
    assert "char *hb_scratch = (char *)malloc(" in source
    library = tmp_path / "wide.so"
    compile_c(source, library, shared=True, amx="emulate", compiler=find_compiler(None))
    rng = np.random.default_rng(18)
    buffers = {name: BufferT(name, ir.Float(32), rng.standard_normal(lanes).astype(np.float32), (0,), (lanes,), (1,))
               for name in ("A", "out")}
    expected = run_program(stmt, buffers)["out"].data
    assert run_isolated("raw", library, "wide", kernel_signature(stmt), buffers) == 0
    np.testing.assert_array_equal(buffers["out"].data, expected)


# ------------------------------------------------------------------ 7. the environment
def test_a_rules_directory_without_the_rule_files_is_an_input_error(tmp_path: Path) -> None:
    """The review: a bad HARDBOILED_RULES_DIR was exit 70. (A rule file there
    that egglog rejects is exit 2 too, located in it: tests/cli/test_cli_batch.py.)"""
    empty = tmp_path / "rules"
    empty.mkdir()
    result = run_cli("compile", str(LOG), "--no-cache", "-q", "-o", str(tmp_path / "o.stmt"),
                     env={"HARDBOILED_RULES_DIR": str(empty)})
    assert result.returncode == 2, result.stderr
    assert result.stderr.decode().startswith("hardboiled: error: HARDBOILED_RULES_DIR: cannot read ")
    assert b"unset it to use the installed rules" in result.stderr


def _under_address_limit(kilobytes: int, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    """``hardboiled ARGS`` in a shell that ran ``ulimit -v KILOBYTES`` (soft
    and hard: a child cannot raise it, root or not)."""
    from ..conftest import HARDBOILED

    command = f"ulimit -v {kilobytes} && exec {HARDBOILED} " + " ".join(f"'{a}'" for a in args)
    return subprocess.run(["bash", "-c", command], capture_output=True, timeout=120, cwd=tmp_path)


@pytest.mark.slow
def test_an_address_space_limit_below_egglog_s_cap_is_respected(tmp_path: Path) -> None:
    """The review: ``ulimit -v`` below the egglog child's 4 GB cap was exit
    70 (the child could not raise its limit). The child now takes the lower
    limit, and selection runs under it."""
    result = _under_address_limit(3_000_000, "compile", str(LOG), "--no-cache", "-q", "-o", "o.stmt",
                                  tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "o.stmt").read_text().count("tile_matmul") == 1


@pytest.mark.slow
@pytest.mark.parametrize("kilobytes", [60_000, 100_000, 150_000, 170_000, 190_000, 200_000, 230_000, 300_000])
def test_too_little_memory_is_exit_4_with_the_limit_named(tmp_path: Path, kilobytes: int) -> None:
    """Under a small limit something fails to load or to start (numpy's
    BLAS, a thread, the egglog child): exit 4, naming the limit, never 70,
    and never OpenBLAS's own exit(1) (CI saw both, at 170 and 200 MB)."""
    result = _under_address_limit(kilobytes, "compile", str(LOG), "--no-cache", "--verify", "-q",
                                  "-o", "o.stmt", tmp_path=tmp_path)
    stderr = result.stderr.decode()
    assert result.returncode in (0, 4), stderr
    if result.returncode == 4:
        assert "ran out of memory" in stderr and "(ulimit -v)" in stderr, stderr
        assert not (tmp_path / "o.stmt").exists()


@pytest.mark.slow
def test_a_limit_that_leaves_room_for_numpy_verifies(tmp_path: Path) -> None:
    """400 MB is enough to select and verify: the compile's thread shares
    the main malloc arena (its own reserved 64 MB) and numpy loads with one
    OpenBLAS thread."""
    result = _under_address_limit(400_000, "compile", str(LOG), "--no-cache", "--verify", "-q",
                                  "-o", "o.stmt", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "o.stmt").read_text().count("tile_matmul") == 1


def test_a_system_error_under_an_address_limit_is_out_of_memory() -> None:
    """A C extension whose allocation failed returns NULL without an
    exception; under ``ulimit -v`` that is exit 4, without one a bug."""
    script = ("from hardboiled.support.environment import environment_fault\n"
              "fault = environment_fault(SystemError('error return without exception set'))\n"
              "print(fault and (int(fault.exit_code), fault.diagnostic.message))\n")
    limited = subprocess.run(["bash", "-c", f"ulimit -v 3000000 && exec {sys.executable} -c \"{script}\""],
                             capture_output=True, text=True, timeout=60)
    free = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert limited.stdout.strip() == "(4, 'hardboiled ran out of memory')", limited.stderr
    assert free.stdout.strip() == "None", free.stderr


def _broken_package(root: Path, package: str, init: str) -> Path:
    """A package that shadows ``package`` and loads a shared object that is
    not one (the loader's "invalid ELF header")."""
    directory = root / package
    directory.mkdir(parents=True)
    (directory / "__init__.py").write_text(init)
    (directory / "broken.cpython-311-x86_64-linux-gnu.so").write_bytes(b"not an ELF file\n" * 64)
    (directory / "broken.cpython-312-x86_64-linux-gnu.so").write_bytes(b"not an ELF file\n" * 64)
    return root


def test_a_broken_egglog_is_a_diagnosis_not_an_internal_error(tmp_path: Path) -> None:
    """The egglog child cannot load its bindings: exit 3, naming egglog."""
    path = _broken_package(tmp_path / "site", "egglog", "from egglog.broken import *\n")
    (path / "egglog" / "bindings.cpython-311-x86_64-linux-gnu.so").write_bytes(b"junk")
    result = run_cli("compile", str(LOG), "--no-cache", "-q", "-o", str(tmp_path / "o.stmt"),
                     env={"PYTHONPATH": str(path)})
    stderr = result.stderr.decode()
    assert result.returncode == 3, stderr
    assert "error: the egglog child process cannot load egglog" in stderr
    assert "invalid ELF header" in stderr and "reinstall it" in stderr
    assert not (tmp_path / "o.stmt").exists()


def test_a_broken_numpy_is_a_diagnosis_not_an_internal_error(tmp_path: Path) -> None:
    """numpy loads for verification; a damaged one is exit 3, naming it."""
    path = _broken_package(tmp_path / "site", "numpy", "from numpy.broken import *\n")
    result = run_cli("compile", str(LOG), "--no-cache", "--verify", "-q", "-o", str(tmp_path / "o.stmt"),
                     env={"PYTHONPATH": str(path)})
    stderr = result.stderr.decode()
    assert result.returncode == 3, stderr
    assert "error: hardboiled cannot load numpy" in stderr and "invalid ELF header" in stderr


def test_a_compiler_that_writes_a_broken_shared_object_is_a_toolchain_error(tmp_path: Path) -> None:
    """--run loads what the compiler built in a child: a file that is no
    shared object is exit 3 (the toolchain's), not a crash of the code."""
    fake = tmp_path / "fake-cc"
    fake.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && { echo junk > "$2"; exit 0; }; shift; done\n')
    fake.chmod(0o755)
    result = run_cli("compile", str(LOG), "--no-cache", "--run", "--cc", str(fake), "-q",
                     "-o", str(tmp_path / "o.stmt"))
    stderr = result.stderr.decode()
    assert result.returncode == 3, stderr
    assert "error: the built kernel 'kernel.so' cannot be loaded" in stderr
    assert not (tmp_path / "o.stmt").exists()


def _read_only_mount_works() -> bool:
    return subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o ro tmpfs /mnt"],
                          capture_output=True).returncode == 0 if shutil.which("unshare") else False


@pytest.mark.slow
@pytest.mark.skipif(not _read_only_mount_works(), reason="unshare cannot mount a read-only file system here")
def test_a_read_only_disk_is_a_diagnosis(tmp_path: Path) -> None:
    """A real read-only file system (tmpfs mounted ro in a mount namespace):
    outputs, -o DIR and the cache on it. The review: exit 70."""
    from ..conftest import HARDBOILED

    read_only = tmp_path / "ro"
    read_only.mkdir()
    script = f"""
        mount -t tmpfs -o ro tmpfs '{read_only}' || exit 99
        cd '{read_only}'
        h() {{ '{HARDBOILED}' "$@" --no-cache -q '{LOG}'; echo "exit $?"; }}
        h compile -o out.stmt
        h compile --emit c,ir -o out
        '{HARDBOILED}' compile -q '{LOG}' --cache-dir '{read_only}/cache' -o /dev/null; echo "exit $?"
    """
    result = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.split("\n")[:3] == ["exit 2", "exit 2", "exit 0"], result.stderr
    assert f"error: cannot write '{read_only}/out.stmt': Read-only file system" in result.stderr
    assert "error: cannot write 'out': Read-only file system" in result.stderr
    assert "internal error" not in result.stderr


# ------------------------------------------------------------------ round 2 (issue 33), item 7
@pytest.mark.parametrize("case, extent", [("amx_bf16_matmul_std_tiled", "0"), ("amx_bf16_std_ref", "0"),
                                          ("wmma_f16_matmul", "0"), ("amx_bf16_matmul_std_8x16", "-16")])
@pytest.mark.parametrize("memory", ["WMMAAccumulator", "AMXTile"])
def test_an_accumulator_of_no_columns_is_not_an_internal_error(tmp_path: Path, case: str, extent: str,
                                                                 memory: str) -> None:
    """The review: a WMMA accumulator allocated with extent 0 and
    --store-in divided by zero while cutting it into tiles (exit 70)."""
    import re

    text = (FIXTURES / case / "vectorizing.stmt").read_text()
    allocation = re.search(r"allocate ([\w.$]+)\[(\w+) \* \d+", text)
    assert allocation is not None
    source = tmp_path / "zero.stmt"
    source.write_text(text[:allocation.start()] + f"allocate {allocation.group(1)}[{allocation.group(2)} * {extent}"
                      + text[allocation.end():])
    result = run_cli("compile", str(source), "--no-cache", "-q", "-o", str(tmp_path / "out.stmt"),
                     "--store-in", f"{allocation.group(1)}={memory}")
    assert result.returncode in (0, 1, 2), result.stderr
    assert b"internal error" not in result.stderr
