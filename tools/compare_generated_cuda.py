"""Whether two sets of generated CUDA sources do the same work.

    .venv/bin/python tools/compare_generated_cuda.py OLD_DIR NEW_DIR

For a change to the CUDA generator or the GPU mapping passes that should not
change what the kernels do: each NAME.cu in OLD_DIR is compared with NAME.cu
in NEW_DIR after removing what cannot change it,

* comment lines (the IR statement each block came from);
* the names of temporaries and fragments (numbered in order of appearance);
* the order of a barrier and the constant tables declared next to it;
* the order of the fragment loads within a stretch of WMMA code (a
  fragment is named by the address and leading dimension it is loaded
  from, so the products read the same fragments whatever the order).

Prints, per file, "same" or the first differences; exits 1 if any differs.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections import Counter
from pathlib import Path

_BARRIERS = ("__syncthreads();", "__syncwarp();")


def _renamed(text: str) -> str:
    """Fragments and temporaries numbered in order of first appearance."""
    names: dict[str, str] = {}
    for match in re.finditer(r"wmma::fragment<[^;]*> (\w+)( =|;)|\b(t\d+)\b", text):
        name = match.group(1) or match.group(3)
        names.setdefault(name, f"N{len(names)}")
    if not names:
        return text
    return re.sub(r"\b(" + "|".join(map(re.escape, names)) + r")\b", lambda m: names[m.group(1)], text)


def _lines(text: str) -> list[str]:
    """Code lines, with each run of barriers and constant tables sorted."""
    lines = [line.strip() for line in _renamed(text).splitlines()]
    lines = [line for line in lines if line and not (line.startswith("/*") and line.endswith("*/"))]
    out: list[str] = []
    run: list[str] = []
    for line in lines:
        if line in _BARRIERS or line.startswith("static const int32_t "):
            run.append(line)
            continue
        out.extend(sorted(run))
        run = []
        out.append(line)
    return out + sorted(run)


def _by_address(lines: list[str]) -> list[str]:
    """Operand fragments named by what they are loaded from."""
    loads = {}
    for line in lines:
        match = re.match(r"wmma::load_matrix_sync\((\w+), (.*)\);$", line)
        if match:
            loads[match.group(1)] = f"<{match.group(2)}>"
    out = []
    for line in lines:
        if re.match(r"wmma::fragment<wmma::matrix_[ab][^;]*> \w+;$", line):
            continue
        out.append(re.sub(r"\b(N\d+)\b", lambda m: loads.get(m.group(1), m.group(1)), line))
    return out


def compare(old: str, new: str) -> list[str]:
    """[] when the two sources do the same work, else the first differences."""
    a, b = _lines(old), _lines(new)
    if a == b:
        return []
    a, b = _by_address(a), _by_address(b)
    loads = [line for line in a if line.startswith("wmma::load_matrix_sync")]
    new_loads = [line for line in b if line.startswith("wmma::load_matrix_sync")]
    rest = [line for line in a if not line.startswith("wmma::load_matrix_sync")]
    new_rest = [line for line in b if not line.startswith("wmma::load_matrix_sync")]
    if Counter(loads) == Counter(new_loads) and rest == new_rest:
        return []
    return list(difflib.unified_diff(a, b, lineterm="", n=1))[:40]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[1])
        return 2
    old_dir, new_dir = Path(argv[0]), Path(argv[1])
    differ = 0
    for old in sorted(old_dir.glob("*.cu")):
        new = new_dir / old.name
        differences = compare(old.read_text(), new.read_text()) if new.exists() else ["(missing)"]
        print(f"{old.name}: {'same' if not differences else 'DIFFERENT'}")
        if differences:
            differ += 1
            print("\n".join(differences))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
