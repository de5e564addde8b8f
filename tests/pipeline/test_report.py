"""What a user meets first (issue 20): the JSON report of every input,
failed ones included, checked against docs/report-schema.json; --require
and the candidate Funcs of an unmarked dump; colour on a terminal only."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from ..conftest import CACHE_DIR, FIXTURES, HARDBOILED, ROOT, run_cli

SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text())
AMX = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
WMMA = FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"


def _valid(report: object) -> object:
    jsonschema.validate(report, SCHEMA)
    return report


def _unmarked(tmp_path: Path, source: Path, memory: str) -> Path:
    """A real dump with nothing in accelerator memory: what a user has who
    has not yet written store_in() in the schedule (stock Halide has no
    WMMAAccumulator memory, so a WMMA dump is always such a one)."""
    text = source.read_text()
    if memory == "WMMAAccumulator":
        return source
    assert f" in {memory}" in text
    path = tmp_path / f"unmarked_{source.parent.name}.stmt"
    path.write_text(text.replace(f" in {memory}", ""))
    return path


def test_the_report_file_holds_every_input_a_failed_one_included(tmp_path: Path) -> None:
    broken = tmp_path / "broken.stmt"
    broken.write_text("allocate f[int32 * 4]\nf[0] = ((\n")
    missed = tmp_path / "missed.stmt"
    # prod in AMX tile memory: f16 operands have no AMX tile.
    missed.write_text(WMMA.read_text().replace("allocate prod[float32 * 16 * 16] in Register",
                                               "allocate prod[float32 * 16 * 16] in AMXTile"))
    report_file = tmp_path / "report.json"
    result = run_cli("compile", str(AMX), str(broken), str(missed), "--no-cache",
                     "-o", str(tmp_path / "out"), "--report-file", str(report_file), "-q")
    assert result.returncode == 2, result.stderr.decode()  # the largest of 0, 2 and 1
    reports = _valid(json.loads(report_file.read_text()))
    assert isinstance(reports, list)
    assert [(r["input"], r["outcome"], r["exit_code"]) for r in reports] == [
        (str(AMX), "success", 0), (str(broken), "input-error", 2), (str(missed), "selection-miss", 1)]
    good, bad, miss = reports
    assert good["lowered"] == good["selected"] == 3 and not good["diagnostics"]
    assert bad["statements"] == [] and bad["diagnostics"][0]["line"] == 2
    assert bad["diagnostics"][0]["severity"] == "error"
    # A miss still lists its statements, each with its outcome and reason.
    assert miss["selected"] >= 1 and miss["lowered"] < miss["selected"]
    missed_statements = [s for s in miss["statements"] if s["outcome"] == "missed"]
    assert missed_statements and all(s["reason"] for s in missed_statements)
    assert any("float16" in s["explanation"] for s in missed_statements)
    assert "cannot be lowered" in miss["diagnostics"][0]["message"]


def test_report_json_on_standard_error_lists_failed_inputs_too(tmp_path: Path) -> None:
    """The review: --report json left failed inputs out (an empty list)."""
    broken = tmp_path / "broken.stmt"
    broken.write_text("f[0] = 1 +\n")
    result = run_cli("compile", str(broken), "--report", "json", "--no-cache")
    assert result.returncode == 2
    # Diagnostics come first on standard error; the report is the JSON list after them.
    stderr = result.stderr.decode()
    reports = _valid(json.loads(stderr[stderr.index("\n[") + 1:]))
    assert [r["outcome"] for r in reports] == ["input-error"]  # type: ignore[union-attr]


def test_emit_report_matches_the_schema_with_verification(tmp_path: Path) -> None:
    result = run_cli("compile", str(AMX), "--no-cache", "--verify", "--emit", "report", "-q")
    assert result.returncode == 0, result.stderr.decode()
    report = _valid(json.loads(result.stdout))
    assert isinstance(report, dict) and report["verification"]["ok"] is True
    assert [s["pattern"] for s in report["statements"]] == [
        "zeroed accumulator tile", "tile product C + A*B", "accumulator tile stored to memory"]


@pytest.mark.parametrize("source, memory, func", [(AMX, "AMXTile", "mm"), (WMMA, "WMMAAccumulator", "prod")])
def test_require_on_an_unmarked_dump_exits_1_and_names_the_candidates(tmp_path: Path, source: Path, memory: str,
                                                                      func: str) -> None:
    path = _unmarked(tmp_path, source, memory)
    out = tmp_path / "out.stmt"
    result = run_cli("compile", str(path), "--require", "--no-cache", "-o", str(out),
                     "--report-file", str(tmp_path / "r.json"))
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "error: --require: no store is in accelerator memory" in stderr
    assert f"note: '{func}' stores a vector_reduce_add of products" in stderr
    assert f"--store-in {func}={memory}" in stderr and f"{func}.store_in(MemoryType::Register)" in stderr
    assert not out.exists()
    [report] = _valid(json.loads((tmp_path / "r.json").read_text()))  # type: ignore[misc]
    assert report["outcome"] == "selection-miss"
    assert [(c["func"], c["memory"]) for c in report["candidates"]] == [(func, memory)]
    # The flag it names does the job.
    marked = run_cli("compile", str(path), "--require", "--no-cache", "--store-in", f"{func}={memory}", "-q")
    assert marked.returncode == 0, marked.stderr.decode()


def test_an_unmarked_run_is_no_longer_silent(tmp_path: Path) -> None:
    path = _unmarked(tmp_path, AMX, "AMXTile")
    result = run_cli("compile", str(path), "--no-cache")
    stderr = result.stderr.decode()
    assert result.returncode == 0
    assert result.stdout == path.read_bytes()  # printed back unchanged
    assert f"{path}:89:4: warning: 'mm' stores a vector_reduce_add of products" in stderr
    assert "the IR is unchanged (1 candidate Func named above)" in stderr


def test_a_dump_with_no_contraction_names_no_candidate(tmp_path: Path) -> None:
    path = FIXTURES / "cpu_math_calls" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--require", "--no-cache")
    stderr = result.stderr.decode()
    assert result.returncode == 1
    assert "no store reduces products with vector_reduce_add" in stderr and "--store-in" not in stderr


def _on_a_terminal(*args: str, env: dict[str, str]) -> bytes:
    """Standard error of ``hardboiled ARGS`` when it is a terminal."""
    primary, secondary = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(HARDBOILED_CACHE_DIR=CACHE_DIR, TERM="xterm", COLUMNS="200", **env)
    process = subprocess.Popen([str(HARDBOILED), *args], stdout=subprocess.DEVNULL, stderr=secondary,
                               stdin=subprocess.DEVNULL, env=full_env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=120)
    os.close(primary)
    return b"".join(chunks)


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    broken = tmp_path / "broken.stmt"
    broken.write_text("f[0] = 1 +\n")
    coloured = _on_a_terminal("compile", str(broken), "--no-cache", env={})
    assert b"\x1b[" in coloured and b"error:" in coloured
    plain = _on_a_terminal("compile", str(broken), "--no-cache", env={"NO_COLOR": "1"})
    assert b"\x1b[" not in plain
    assert plain.replace(b"\r\n", b"\n") == piped_stderr(broken)
    assert b"\x1b[" not in piped_stderr(broken)


def piped_stderr(path: Path) -> bytes:
    result = run_cli("compile", str(path), "--no-cache")
    assert result.returncode == 2
    return result.stderr


LOG = FIXTURES / "amx_bf16_matmul_std_single" / "debug.log"
HALIDE_AMX_STAGE = "extracting tile operations"


def test_halide_s_own_amx_stage_is_recognized_as_already_lowered(tmp_path: Path) -> None:
    """Halide's own AMX result calls tile operations already: nothing to
    select, and --require accepts it; the summary says how to check it."""
    result = run_cli("compile", str(LOG), "--stage", HALIDE_AMX_STAGE, "--require", "--no-cache",
                     "-o", str(tmp_path / "o.stmt"), "--report-file", str(tmp_path / "r.json"))
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    assert "already tensorized: the input calls 5 tile or fragment operations" in stderr
    assert "hardboiled verify" in stderr and "warning" not in stderr
    [report] = _valid(json.loads((tmp_path / "r.json").read_text()))  # type: ignore[misc]
    assert report["already_lowered"] == 5 and report["candidates"] == [] and report["stage"] == HALIDE_AMX_STAGE


def test_verify_reads_halide_s_amx_stage_from_the_same_log() -> None:
    """docs/tutorial.md: upstream Halide's AMX result for a standard-layout
    B is wrong, and `verify LOG LOG --rewritten-stage` shows it; its VNNI
    result is right on buffers dense from 0 and wrong where rows are padded."""
    wrong = run_cli("verify", str(LOG), str(LOG), "--rewritten-stage", HALIDE_AMX_STAGE)
    assert wrong.returncode == 5 and b"mm_global_wrapper$0[0, 0]: expected" in wrong.stderr
    vnni = FIXTURES / "amx_bf16_matmul_vnni_single" / "debug.log"
    padded = run_cli("verify", str(vnni), str(vnni), "--rewritten-stage", HALIDE_AMX_STAGE)
    assert padded.returncode == 5, padded.stderr
    assert b"in the buffer layout 'mins shifted by 3, rows padded by 5'" in padded.stderr
    assert b"the layouts before it agreed" in padded.stderr


@pytest.mark.parametrize("command", ["compile", "parse", "verify", "rules", None])
def test_help_ends_with_examples_and_every_exit_code(command: str | None) -> None:
    from hardboiled.support.diagnostics import EXIT_CODE_MEANINGS, ExitCode

    result = run_cli(*([command] if command else []), "--help")
    assert result.returncode == 0
    text = result.stdout.decode()
    examples, _, codes = text.partition("Exit codes:")
    assert "Examples:" in examples and "  hardboiled " in examples.split("Examples:")[1]
    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)
    for code, meaning in EXIT_CODE_MEANINGS.items():
        assert f"{int(code):>3}  {meaning}" in codes


def test_the_help_examples_that_name_shipped_files_run(tmp_path: Path) -> None:
    """Each example of --help that names only shipped files is run, from
    the repository, as a user would paste it."""
    import shlex

    from hardboiled.cli.commands import main

    made_by_examples = ("mm.c", "mm.h", "mm.html", "amx.stmt")
    before = {name for name in made_by_examples if (ROOT / name).exists()}  # a reader's own tutorial files
    ran = 0
    for command in [main, *main.commands.values()]:
        lines = (command.epilog or "").split("Exit codes:")[0].splitlines()
        for line in (line.strip() for line in lines):
            if not line.startswith("hardboiled ") or any(name in line for name in ("conv.stmt", "dumps/",
                                                                                   "original.stmt")):
                continue
            for part in line.split(" && "):
                words = shlex.split(part)
                assert words[0] == "hardboiled"
                # What an example writes (-o FILE) goes to the scratch directory.
                words = [str(tmp_path / w) if words[i - 1] == "-o" else w
                         for i, w in enumerate(words[1:], start=1)]
                result = subprocess.run([str(HARDBOILED), *words], cwd=ROOT, capture_output=True, timeout=300,
                                        env=dict(os.environ, HARDBOILED_CACHE_DIR=CACHE_DIR))
                expected = 5 if "--rewritten-stage" in words else 0  # upstream Halide's wrong std-layout result
                assert result.returncode == expected, (part, result.stderr.decode()[-500:])
                ran += 1
    assert ran >= 6
    assert {name for name in made_by_examples if (ROOT / name).exists()} == before


def test_the_man_page_is_current_and_installed() -> None:
    """docs/hardboiled.1 is what `make man` generates from the commands
    now, and `make install` put it where man finds it beside .venv/bin."""
    from hardboiled.cli.commands import main
    from hardboiled.cli.manpage import render_man_page

    page = (ROOT / "docs" / "hardboiled.1").read_text()
    assert page == render_man_page(main), "docs/hardboiled.1 is stale: run make man"
    for name in ("compile", "verify", "EXIT STATUS", "143", "\\-\\-require", "\\-\\-report\\-file"):
        assert name in page
    installed = HARDBOILED.parent.parent / "share" / "man" / "man1" / "hardboiled.1"
    assert installed.read_text() == page


def test_the_html_report_shows_each_statement_beside_its_rewrite_and_proof(tmp_path: Path) -> None:
    pages = []
    for attempt in range(2):
        page = tmp_path / f"mm{attempt}.html"
        result = run_cli("compile", str(AMX), "--verify", "--emit", "html", "-o", str(page), "--no-cache", "-q")
        assert result.returncode == 0, result.stderr.decode()
        pages.append(page.read_text())
    assert pages[0] == pages[1]  # byte-identical from run to run: no times in it
    html = pages[0]
    assert html.startswith("<!DOCTYPE html>") and html.count('<section class="statement">') == 3
    for title in ("Halide statement", "Rewritten IR", "Selected instructions", "E-graph", "Verification"):
        assert html.count(f"<h3>{title}</h3>") == 3
    assert "vector_reduce_add" in html and "tile_matmul(16, 64, 32" in html and ">equal<" in html
    # One file that works offline: no script, no link to anything outside it.
    assert "<script" not in html and "http://" not in html and "https://" not in html and "<link" not in html


def test_the_html_report_explains_a_statement_left_as_it_was(tmp_path: Path) -> None:
    missed = tmp_path / "missed.stmt"
    missed.write_text(WMMA.read_text().replace("allocate prod[float32 * 16 * 16] in Register",
                                               "allocate prod[float32 * 16 * 16] in AMXTile"))
    page = tmp_path / "missed.html"
    result = run_cli("compile", str(missed), "--allow-fallback", "--emit", "html", "-o", str(page), "--no-cache",
                     "-q")
    assert result.returncode == 0, result.stderr.decode()
    html = page.read_text()
    assert "<h3>Why not lowered</h3>" in html and "float16" in html and "left as it was" in html


def test_a_failed_input_still_writes_its_html_report(tmp_path: Path) -> None:
    """Issue 33, item 13: the page that explains a miss was written only
    under --allow-fallback, when the input did not fail; a failed input
    now writes it, and nothing else."""
    missed = tmp_path / "missed.stmt"
    missed.write_text(WMMA.read_text().replace("allocate prod[float32 * 16 * 16] in Register",
                                               "allocate prod[float32 * 16 * 16] in AMXTile"))
    out = tmp_path / "out"
    result = run_cli("compile", str(missed), "--emit", "ir,html", "-o", str(out), "--no-cache")
    assert result.returncode == 1, result.stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == ["missed.html"]
    assert "<h3>Why not lowered</h3>" in (out / "missed.html").read_text()
    assert "failed (exit 1), only the HTML report written" in result.stderr.decode()


@pytest.mark.slow
@pytest.mark.skipif(not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")),
                    reason="no Chromium on this machine (apt-get install chromium): the page is not rendered")
def test_the_html_report_renders_in_a_real_browser(tmp_path: Path) -> None:
    """Headless Chromium draws the page (tools/html_screenshot.py, which
    made docs/html-report.png)."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    from html_screenshot import WINDOW, chromium, html_report, screenshot

    png = tmp_path / "page.png"
    browser = chromium()
    assert browser is not None
    assert screenshot(html_report(tmp_path), png, browser) == WINDOW
    assert png.stat().st_size > 50_000  # a blank page of this size compresses to a few kilobytes
