"""Where a compile's results go: every output of a run written as one
transaction (into a directory under hardboiled's names, never through a
link planted there),
instrumentation and diagnostics to standard error in input order, and,
for a run the cache answered in full, what it read and wrote told to the
direct mode (cli/direct.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hardboiled.cli.errors import report
from hardboiled.support.fileio import STDIO, OutputTransaction, make_output_directory

if TYPE_CHECKING:
    from hardboiled.pipeline.driver import FileResult

cached_compile_observers: list[Callable[[str, list[tuple[str, bytes]], list[tuple[str, str, str]]], None]] = []
"""Told of every compile that the whole-file cache answered in full: the
cache directory, the files it read with their bytes and the files it wrote, with their text
(cli/direct.py records such runs, to answer them again before click loads)."""


def write_results(results: list[FileResult], names: list[str], kinds: tuple[str, ...], output_path: str | None,
                  diagnostics_format: str, report_file: tuple[str, str] | None = None) -> list[tuple[str, str, str]]:
    """Instrumentation and diagnostics to standard error, outputs to their
    files, in input order; ``report_file`` (its path and text) with them.
    The files are one transaction (support/fileio.py): all are replaced or
    none. Returns the files written, with their text and whether a link
    there was followed or replaced. Names hardboiled chooses (inside a
    directory, a header beside ``-o FILE``) never write through a link
    planted there: the link is replaced."""
    from hardboiled.pipeline.driver import output_names
    from hardboiled.pipeline.options import EMIT_SUFFIXES, HEADER, HEADER_SUFFIX

    written: list[tuple[str, str, str]] = []
    outputs = OutputTransaction()

    def write(path: str, text: str, follow_links: bool = True) -> None:
        outputs.add(path, text, follow_links=follow_links)
        if path != STDIO:
            written.append((path, text, "follow" if follow_links else "replace"))

    directory = None
    if output_path not in (None, STDIO) and (len(names) > 1 or len(kinds) > 1 or Path(output_path).is_dir()):
        directory = Path(output_path)
        make_output_directory(directory)
    try:
        for result, stem in zip(results, output_names(names)):
            for block in result.instrumentation:
                sys.stderr.write(block)
            for diagnostic in result.diagnostics:
                report(diagnostic, diagnostics_format)
            for kind, text in result.outputs.items():
                if kind == HEADER:
                    # Beside the source it declares; not on standard output.
                    if directory is not None:
                        write(str(directory / (stem + HEADER_SUFFIX)), text, follow_links=False)
                    elif output_path not in (None, STDIO) and Path(output_path).suffix != HEADER_SUFFIX:
                        write(str(Path(output_path).with_suffix(HEADER_SUFFIX)), text, follow_links=False)
                    continue
                if kind not in kinds:
                    continue
                if directory is not None:
                    write(str(directory / (stem + EMIT_SUFFIXES[kind])), text, follow_links=False)
                else:
                    write(output_path or STDIO, text)
        if report_file is not None:
            write(*report_file)
    except BaseException:
        outputs.discard()
        raise
    outputs.commit()
    return written


def tell_cached_compile(cache_dir: str, input_paths: tuple[str, ...], data: list[bytes | None],
                         schedule_path: str | None, written: list[tuple[str, str, str]],
                         other_reads: list[tuple[str, bytes]] | None = None) -> None:
    """Tell the observers of a compile the cache answered in full what it
    read: the inputs' bytes as they were compiled (a file changed since then
    must not be paired with these outputs), the schedule file and any other
    file it read (--input arrays)."""
    if not cached_compile_observers or any(d is None for d in data):
        return
    reads = [(path, d) for path, d in zip(input_paths, data) if d is not None] + list(other_reads or [])
    if schedule_path is not None:
        try:
            reads.append((schedule_path, Path(schedule_path).read_bytes()))
        except OSError:
            return
    for observer in cached_compile_observers:
        observer(cache_dir, reads, written)
