"""An installed wheel must find its grammar and rules without the source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow


def test_wheel_ships_grammar_and_rules_and_parses(tmp_path: Path) -> None:
    # Build from a copy: setuptools writes build/ and *.egg-info beside the
    # sources, and tests write nothing into the checkout.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("hardboiled", "grammars", "rules"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheel_dir = tmp_path / "wheel"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheel_dir), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = wheel_dir.glob("hardboiled-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "hardboiled/grammars/halide_ir.lark" in names
    assert "hardboiled/rules/__init__.py" in names

    # Unpack the wheel somewhere unrelated and run it from there, first on
    # sys.path, so the editable install of the checkout cannot be used.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "import hardboiled, sys; from pathlib import Path;"
        "from hardboiled.frontend.parse import parse_input; from hardboiled.ir.printer import print_ir;"
        f"text = Path({str(FIXTURES / 'amx_bf16_matmul_std_single' / 'vectorizing.stmt')!r}).read_text();"
        "assert print_ir(parse_input(text).ir) == text;"
        "print(hardboiled.__file__)"
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().startswith(str(site))
