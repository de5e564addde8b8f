"""Static figures of the Tensor-Core (WMMA) applications' generated CUDA, per
output fragment, with no GPU: how much work and overhead one 16x16 (or
8x32, 32x8) result costs.

    .venv/bin/python bench/wmma_static.py [--apps conv1d,gemm] [--json FILE] [--markdown FILE]
                                          [--source-tree DIR] [--no-ptx] [--before FILE]

Every WMMA application of apps/ (at test size, tests/fixtures/apps/NAME.stmt,
its accumulators stored in WMMAAccumulator) is compiled to CUDA as the tests
compile it, and hardboiled/measure/cuda_source.py reads the CUDA: per thread
block, the executed mma_sync calls, operand fragment loads (and the fewest
the same code could make without loading a fragment twice), shared-memory
bytes written by element stores, __syncthreads and __syncwarp, and how many
of a warp's 32 lanes the non-tensor statements keep busy. An application
sums its kernels over the blocks their grids launch; the figures are
divided by its output fragments (fragment stores to global memory). With
nvcc on the PATH, the CUDA is also compiled to PTX and its mma, fragment
load and barrier instructions counted (static counts, not executions).

--source-tree DIR measures another checkout's hardboiled (an older commit,
for before/after figures) on this checkout's fixtures and apps/, with this
checkout's reader. Results go to bench/results/wmma_static.json (or
wmma_static.DIRNAME.json for another tree); with --before FILE (such a
result), --markdown writes the before -> after table of docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
READER = ROOT / "hardboiled" / "measure"
"""This checkout's reader of generated CUDA (measure/cuda_source.py and the
standard-library modules it imports), loaded by path."""
FIXTURES = ROOT / "tests" / "fixtures" / "apps"

COLUMNS = ("application", "kernels (wmma)", "out frags", "mma/frag", "MAC/elem", "A+B loads/frag (min)",
           "shared B written/frag", "syncthreads/frag", "syncwarp/frag", "lane util",
           "ptx mma", "ptx ld.a+b", "ptx bar.sync", "ptx bar.warp")


def import_hardboiled(source_tree: Path | None) -> ModuleType:
    """Import hardboiled, from ``source_tree`` when given. This must come
    before bench/_common, which puts this checkout first on sys.path: once
    imported, the package's submodules load from wherever it came from."""
    if source_tree is not None:
        tree = source_tree.resolve()
        if not (tree / "hardboiled" / "__init__.py").is_file():
            raise SystemExit(f"{tree} holds no hardboiled package")
        sys.path.insert(0, str(tree))
    import hardboiled
    if source_tree is not None and not Path(hardboiled.__file__ or "").resolve().is_relative_to(tree):
        raise SystemExit(f"hardboiled came from {hardboiled.__file__}, not {tree}")
    return hardboiled


class _Reader:
    """The reader's functions, from the modules that hold them."""

    def __init__(self, package: str):
        source = importlib.import_module(f"{package}.cuda_source")
        ptx = importlib.import_module(f"{package}.ptx")
        self.analyze_application = source.analyze_application
        self.nvcc_available = ptx.nvcc_available
        self.generate_ptx = ptx.generate_ptx


def load_analyzer() -> _Reader:
    """This checkout's CUDA reader, by path, as a package of its own (an
    older tree has another one or none, and both trees must be read the
    same way). Its modules import only each other and the standard
    library."""
    spec = importlib.util.spec_from_file_location("hb_measure", READER / "__init__.py",
                                                  submodule_search_locations=[str(READER)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return _Reader(spec.name)


def generate_cuda(name: str, accumulators: tuple[str, ...]) -> str:
    """The application's CUDA, compiled as tests/apps/test_apps.py compiles it,
    through the Python API (which an older tree has too)."""
    import hardboiled

    result = hardboiled.compile(FIXTURES / f"{name}.stmt", store_in={acc: "WMMAAccumulator" for acc in accumulators},
                                target="wmma")
    assert result.cuda is not None
    return result.cuda


def generated_cuda_flags() -> tuple[str, ...]:
    """nvcc's flags for generated CUDA, wherever the measured tree keeps them."""
    for module in ("hardboiled.codegen.cuda", "hardboiled.cli.pipeline"):
        try:
            return tuple(importlib.import_module(module).GENERATED_CUDA_FLAGS)
        except (ImportError, AttributeError):
            continue
    return ()


def _number(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:.{digits}f}"


def table_row(figures: Any) -> list[str]:
    derived, totals, ptx = figures.totals.derived(), figures.totals, figures.ptx
    flags = ("*" if figures.symbolic_trips else "") + ("+" if not figures.grid_known else "")
    utilization = derived["lane_utilization"]
    row = [
        figures.name + flags,
        f"{len(figures.kernels)} ({figures.wmma_kernels})",
        str(totals.output_fragments),
        _number(derived["mma_per_fragment"]),
        _number(derived["macs_per_output_element"]),
        f"{_number(derived['operand_loads_per_fragment'])} ({_number(derived['distinct_operand_loads_per_fragment'])})",
        _number(derived["shared_write_bytes_per_fragment"], 0),
        _number(derived["syncthreads_per_fragment"]),
        _number(derived["syncwarps_per_fragment"]),
        "-" if utilization is None else f"{100 * utilization:.1f}%",
    ]
    if ptx is None:
        return row + ["-"] * 4
    return row + [str(ptx["mma"]), str(ptx["wmma_load_a"] + ptx["wmma_load_b"]), str(ptx["bar_sync"]),
                  str(ptx["bar_warp_sync"])]


FOOTNOTE = ("Per output fragment (a fragment stored to global memory), summed over the blocks each kernel's "
            "grid launches; lane util: busy lanes over issued lanes in non-tensor statements; ptx: "
            "instructions in the PTX text. * a loop bound is not a constant (its body counted once); "
            "+ a grid is not a constant (its kernel counted per block).")


def plain_table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [list(COLUMNS), *rows]) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.rjust(width) if i else cell.ljust(width) for i, (cell, width)
                       in enumerate(zip(row, widths))) for row in [list(COLUMNS), *rows]]
    return "\n".join(lines)


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(["---"] + ["---:"] * (len(COLUMNS) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n\n" + FOOTNOTE + "\n"


COMPARED = (("mma/frag", "mma_per_fragment", 2), ("MAC/elem", "macs_per_output_element", 0),
            ("A+B loads/frag", "operand_loads_per_fragment", 2),
            ("min loads/frag", "distinct_operand_loads_per_fragment", 2),
            ("shared B written/frag", "shared_write_bytes_per_fragment", 0),
            ("syncthreads/frag", "syncthreads_per_fragment", 2), ("syncwarp/frag", "syncwarps_per_fragment", 2),
            ("lane util", "lane_utilization", None))


def comparison_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Markdown: each derived figure as ``before -> after``, per application
    (docs/performance.md)."""
    def cell(data: dict[str, Any] | None, key: str, digits: int | None) -> str:
        value = None if data is None else data["derived"][key]
        if digits is None:
            return "-" if value is None else f"{100 * value:.0f}%"
        return _number(value, digits)

    header = ["application", *(title for title, _, _ in COMPARED)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * len(COMPARED)) + "|"]
    for name, now in after.items():
        old = before.get(name)
        cells = []
        for _, key, digits in COMPARED:
            was, is_ = cell(old, key, digits), cell(now, key, digits)
            cells.append(is_ if was == is_ else f"{was} → **{is_}**")
        lines.append("| " + " | ".join([name, *cells]) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", help="comma-separated applications (default: every wmma one)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--markdown", type=Path, help="write the per-application table to this file")
    parser.add_argument("--source-tree", type=Path, help="measure the hardboiled of this checkout")
    parser.add_argument("--no-ptx", action="store_true", help="skip nvcc and the PTX counts")
    parser.add_argument("--before", type=Path,
                        help="figures of an earlier run (its --json or results file): --markdown then writes "
                             "each figure as before -> after")
    args = parser.parse_args()

    hardboiled = import_hardboiled(args.source_tree)
    from _common import write_results

    from apps.run import applications

    figures_module = load_analyzer()
    wmma_apps = {name: app for name, app in applications().items() if app.accelerator == "wmma"}
    chosen = args.apps.split(",") if args.apps else list(wmma_apps)
    unknown = [name for name in chosen if name not in wmma_apps]
    if unknown:
        parser.error(f"not WMMA applications: {', '.join(unknown)} (choose from {', '.join(wmma_apps)})")
    want_ptx = not args.no_ptx and figures_module.nvcc_available()
    print(f"hardboiled from {Path(hardboiled.__file__ or '').parent}; PTX "
          f"{'from nvcc' if want_ptx else 'skipped (' + ('--no-ptx' if args.no_ptx else 'no nvcc') + ')'}")

    started = time.perf_counter()
    sources = {name: generate_cuda(name, tuple(wmma_apps[name].accumulators)) for name in chosen}
    ptx: dict[str, str | None] = dict.fromkeys(chosen)
    if want_ptx:
        flags = generated_cuda_flags()
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            ptx = dict(zip(chosen, pool.map(lambda name: figures_module.generate_ptx(sources[name], flags), chosen)))
    results = [figures_module.analyze_application(name, sources[name], ptx[name]) for name in chosen]
    rows = [table_row(figures) for figures in results]

    print(plain_table(rows))
    print(FOOTNOTE)
    for figures in results:
        for entry in figures.unparsed:
            print(f"not understood in {figures.name}: {entry}")
    print(f"{time.perf_counter() - started:.1f} s")

    data = {"hardboiled": str(Path(hardboiled.__file__ or "").parent), "ptx": want_ptx,
            "applications": {figures.name: figures.to_json() for figures in results}}
    suffix = f".{args.source_tree.resolve().name}" if args.source_tree else ""
    print(f"wrote {write_results(f'wmma_static{suffix}.json', data)}")
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    if args.markdown and args.before:
        before = json.loads(args.before.read_text())["applications"]
        args.markdown.write_text(comparison_table(before, data["applications"]))
    elif args.markdown:
        args.markdown.write_text(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
