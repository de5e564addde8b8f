"""Picking stages out of an HL_DEBUG_CODEGEN log (frontend/stages.py) by
string searches, against the line-by-line reading it replaced, on the real
logs and on logs drawn from their pieces: blank lines, stored
let-expressions (whose blank line is IR), "(unchanged)" stages, the marker
inside a line, no final newline."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from hardboiled.frontend.stages import Stage, select_stage, split_log, stage_body_line_count
from hardboiled.support.diagnostics import HardboiledError

LOGS = sorted((Path(__file__).resolve().parent.parent / "fixtures").rglob("debug.log"))
_HEADER = re.compile(r"^Lowering after (.*?):?( \(unchanged\))?$")


def _line_by_line(text: str) -> list[Stage]:
    """The reading of every line in turn, as the stages were split before."""
    stages: list[Stage] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _HEADER.match(lines[i])
        if m is None:
            i += 1
            continue
        if m.group(2):
            stages.append(Stage(m.group(1), i + 1, None))
            i += 1
            continue
        end = i + 1 + stage_body_line_count(lines, i + 1)
        stages.append(Stage(m.group(1), i + 1, "\n".join(lines[i + 1 : end]) + "\n"))
        i = end
    return stages


def test_there_are_real_logs() -> None:
    assert len(LOGS) >= 10


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name)
def test_a_real_log_splits_as_line_by_line(path: Path) -> None:
    text = path.read_text()
    stages = split_log(text)
    assert stages == _line_by_line(text) and len(stages) > 10


_PIECES = (
    "Lowering after {name}:", "Lowering after {name}: (unchanged)", "Lowering after {name}", "",
    " let x = 1", "assert(x == 1, 0)", " out[ramp(0, 1, 4)] = ", "  let t1 = 2 in", "  let t2 = t1 in",
    "  t1 + t2", "for (x, 0, 4) {", "}", "say: Lowering after {name}:", "Lowering after",
    "halide_print(\"\\nLowering after\")", "x] = ", "\r", "Lowering after {name}:\r",
)


def test_drawn_logs_split_as_line_by_line() -> None:
    for seed in range(500):
        _check_drawn_log(random.Random(seed))


def _check_drawn_log(draw: random.Random) -> None:
    names = ["vectorizing", "unrolling", "flattening", "injecting", "a stage with spaces"]
    lines = [draw.choice(_PIECES).replace("{name}", draw.choice(names)) for _ in range(draw.randrange(0, 40))]
    text = "\n".join(lines) + draw.choice(("", "\n", "\n\n"))
    assert split_log(text) == _line_by_line(text), text
    for name in names:
        expected = None
        last = None
        for stage in _line_by_line(text):
            if stage.body is not None:
                last = stage
            if stage.name == name:
                expected = None if last is None else (last.body, last.header_line, name)
                break
        if expected is None:
            with pytest.raises(HardboiledError):
                select_stage(text, "log", name)
        else:
            assert select_stage(text, "log", name) == expected
