#!/usr/bin/env python3
"""The figures of the applications issue: every application of the paper, end to end.

    .venv/bin/python bench/apps.py            # = make apps

For each application in apps/ (the paper's pipelines and schedules, Halide
21), at the test size (verified in the reference interpreter) and at the
paper's size (built, not interpreted): which tensor intrinsics the
generated code uses, how many MMA calls it has and how many MMA
instructions nvcc emitted, `hardboiled compile`'s wall time and peak memory
with its children. Writes docs/applications.md. GPU times need a GPU: this
script says so in the table where none was measured.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apps.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["--all", "--table", str(ROOT / "docs" / "applications.md"), *sys.argv[1:]]))
