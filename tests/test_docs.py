"""Docs that cannot go stale: every command of the README and of the
tutorial runs here as written, and the figures they quote are compared
with what the commands print.

The tutorial runs in a scratch directory, in order, as a reader would run
it: its Python blocks that start with ``# NAME.py`` are written to NAME.py,
and every ``sh`` block runs in bash (``-e -o pipefail``). ``.venv`` and
``tests`` are links to this checkout, and ``make`` runs in it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import CACHE_DIR, ROOT

TUTORIAL = ROOT / "docs" / "tutorial.md"
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_SECONDS = re.compile(r"\d+\.\d+ s$")


def code_blocks(markdown: str) -> list[tuple[str, str]]:
    return [(language, body) for language, body in _BLOCK.findall(markdown)]


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if command.lstrip().startswith("make "):
        cwd = ROOT  # the Makefile's commands name the checkout's .venv and apps/
    env = dict(os.environ, HARDBOILED_CACHE_DIR=str(cwd / ".cache"))
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=env)


def _quoted_summary(markdown: str, input_name: str) -> str:
    """The summary line the document quotes for ``input_name``."""
    [line] = [line for line in markdown.splitlines() if line.startswith(f"hardboiled: {input_name}: lowered")]
    return line


def _same_but_seconds(quoted: str, printed: str) -> bool:
    return _SECONDS.sub("", quoted) == _SECONDS.sub("", printed)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="the tutorial builds PTX with nvcc")
def test_every_command_of_the_tutorial_runs_and_its_figures_hold(tmp_path: Path) -> None:
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    markdown = TUTORIAL.read_text()
    commands = 0
    for language, body in code_blocks(markdown):
        first_line = body.splitlines()[0] if body else ""
        if language == "python" and re.fullmatch(r"# \w+\.py", first_line):
            (tmp_path / first_line[2:]).write_text(body)
        elif language == "sh":
            result = _run(body, tmp_path)
            assert result.returncode == 0, f"{body}\n{result.stderr[-2000:]}"
            commands += 1
            if "--rewritten-stage" in body:
                assert "exit 5" in result.stdout and "mm_global_wrapper$0[0, 0]: expected" in result.stderr
            if "compile mm.log -o mm.tiles.stmt" in body:
                quoted = _quoted_summary(markdown, "mm.log")
                printed = [line for line in result.stderr.splitlines() if line.startswith("hardboiled: mm.log:")]
                assert printed and _same_but_seconds(quoted, printed[-1]), (quoted, printed)
    assert commands >= 10
    # What the reader was told they would get.
    assert "tile_matmul(16, 64, 32" in (tmp_path / "mm.tiles.stmt").read_text()
    assert (tmp_path / "mm.so").exists() and (tmp_path / "dct.ptx").exists()
    assert "wmma.load.a.sync.aligned.col.m16n16k16" in (tmp_path / "dct.ptx").read_text()
    tiles = sorted(p.name for p in (tmp_path / "build" / "tiles").iterdir())
    assert "mm.c" in tiles and "mm.report.json" in tiles


def test_the_readme_s_example_runs_as_written() -> None:
    """The README's first block is the set-up (make install, make test: CI
    runs those); the next is the main job on a shipped example."""
    blocks = [body for language, body in code_blocks(README.read_text()) if language == "sh"]
    assert blocks[0].split("\n")[0].startswith("make install") and "make test" in blocks[0]
    for body in blocks[1:]:
        result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=ROOT, capture_output=True,
                                text=True, timeout=300, env=dict(os.environ, HARDBOILED_CACHE_DIR=CACHE_DIR))
        assert result.returncode == 0, result.stderr
        assert "tile_matmul(" in result.stdout and "lowered 3 of 3 accelerator stores" in result.stderr
