"""Where generated CUDA defines and launches its kernels: each kernel's
body, the block its comment declares, and the grid and block of each
launch (measure/cuda_source.py reads the bodies).

Standard library only (bench/wmma_static.py loads this package by path)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .c_syntax import evaluate_c_integer, matching_bracket, split_top_level

_KERNEL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(\w+)\s*\(")
_LAUNCHED_AS = re.compile(r"launched as\s*<<<[^>]*?dim3\(\s*([^)]*)\)\s*>>>")
_DIM3 = re.compile(r"\bdim3\s+([^;]*);")
_LAUNCH = re.compile(r"\b(\w+)\s*<<<(.*?)>>>")

Dims = tuple[int | None, int | None, int | None]


def _dims(arguments: list[str]) -> Dims:
    values = [evaluate_c_integer(argument) for argument in arguments[:3] if argument]
    values += [1] * (3 - len(values))
    return (values[0], values[1], values[2])


def _dim3_declarations(text: str) -> list[tuple[int, str, Dims]]:
    """(offset, name, extents) of each ``dim3 NAME(...)`` or ``NAME = dim3(...)``."""
    found = []
    for match in _DIM3.finditer(text):
        for declarator in split_top_level(match.group(1), ","):
            parsed = re.match(r"(\w+)\s*(?:=\s*dim3\s*)?[({](.*)[)}]$", declarator, re.S)
            if parsed:
                found.append((match.start(), parsed.group(1), _dims(split_top_level(parsed.group(2), ","))))
    return found


def _launch_dims(expression: str, offset: int, declarations: list[tuple[int, str, Dims]]) -> Dims:
    inline = re.match(r"dim3\s*\((.*)\)$", expression.strip(), re.S)
    if inline:
        return _dims(split_top_level(inline.group(1), ","))
    named = [dims for start, name, dims in declarations if name == expression.strip() and start < offset]
    if named:
        return named[-1]
    return _dims([expression])


def launches(text: str) -> dict[str, list[tuple[Dims, Dims]]]:
    """Kernel name -> (grid, block) of each ``NAME<<<grid, block, ...>>>``."""
    declarations = _dim3_declarations(text)
    launches: dict[str, list[tuple[Dims, Dims]]] = {}
    for match in _LAUNCH.finditer(text):
        arguments = split_top_level(match.group(2), ",")
        if len(arguments) < 2:
            continue
        grid = _launch_dims(arguments[0], match.start(), declarations)
        block = _launch_dims(arguments[1], match.start(), declarations)
        launches.setdefault(match.group(1), []).append((grid, block))
    return launches


@dataclass(frozen=True)
class KernelText:
    name: str
    body: str
    first_line: int
    declared_block: Dims | None


def kernel_texts(raw: str, text: str) -> Iterator[KernelText]:
    """Each kernel's body (comments blanked) and the block its comment declares."""
    previous_end = 0
    for match in _KERNEL.finditer(text):
        close_parameters = matching_bracket(text, match.end() - 1)
        open_body = text.find("{", close_parameters)
        close_body = matching_bracket(text, open_body) if open_body >= 0 else -1
        if close_parameters < 0 or close_body < 0:
            continue
        comments = list(_LAUNCHED_AS.finditer(raw, previous_end, match.start()))
        declared = _dims(split_top_level(comments[-1].group(1), ",")) if comments else None
        yield KernelText(match.group(1), text[open_body + 1:close_body],
                          text.count("\n", 0, open_body) + 1, declared)
        previous_end = close_body
