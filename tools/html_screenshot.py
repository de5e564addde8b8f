#!/usr/bin/env python3
"""The screenshot of ``--emit html`` in docs/ (docs/html-report.png), taken
by headless Chromium (Debian's ``chromium`` package) from a compile of the
shipped example with verification.

    .venv/bin/python tools/html_screenshot.py [--out docs/html-report.png]

tests/pipeline/test_report.py takes the same screenshot into a scratch directory
where Chromium is installed, and checks the page renders.
"""

from __future__ import annotations

import argparse
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARDBOILED = ROOT / ".venv" / "bin" / "hardboiled"
EXAMPLE = ROOT / "tests" / "fixtures" / "halide" / "amx_bf16_matmul_std_single" / "debug.log"
WINDOW = (1400, 1300)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def html_report(directory: Path) -> Path:
    page = directory / "mm.html"
    subprocess.run([str(HARDBOILED), "compile", str(EXAMPLE.relative_to(ROOT)), "--verify", "--emit", "html",
                    "-o", str(page), "--no-cache", "-q"], check=True, cwd=ROOT)
    return page


def screenshot(page: Path, png: Path, browser: str) -> tuple[int, int]:
    """Chromium's picture of ``page``; returns its width and height."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                        f"--screenshot={png}", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "html-report.png")
    args = parser.parse_args()
    browser = chromium()
    if browser is None:
        print("no Chromium here: apt-get install chromium", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        width, height = screenshot(html_report(Path(tmp)), args.out, browser)
    print(f"{args.out}: {width} x {height}, {args.out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
