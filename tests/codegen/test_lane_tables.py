"""Shuffle tables as arithmetic (codegen/lane_tables.py): a form found for a
table reproduces every entry, in Python and as the C the kernels compile,
and none is claimed for a table without one."""

from __future__ import annotations

import random
import subprocess

import pytest

from hardboiled.codegen.lane_tables import MAX_DIGITS, AffineForm, affine_form, c_expression
from hardboiled.codegen.toolchain import find_compiler

SEED = 4117


def _random_form(rng: random.Random) -> tuple[int, AffineForm]:
    """A table size and a form over it: 1 to MAX_DIGITS digits, small steps,
    a box of random bounds on its terms, and a fallback no lane inside
    reaches."""
    lanes = rng.choice([16, 24, 32, 64, 96, 128, 256, 480, 512])
    places = [1]
    for _ in range(rng.randrange(MAX_DIGITS)):
        multiples = [p for p in range(places[0] * 2, lanes, places[0]) if lanes % p == 0]
        if multiples:
            places.insert(0, rng.choice(multiples))
    steps = tuple(rng.choice([-16, -2, -1, 0, 1, 1, 2, 8, 15, 16]) for _ in places)
    plain = AffineForm(tuple(places), steps, rng.randrange(-8, 64), (), None)
    terms = [plain.terms(i) for i in range(lanes)]
    bounds = []
    for k in rng.sample(range(len(terms[0])), rng.randrange(0, 3)):
        values = sorted({t[k] for t in terms})
        if len(values) > 2:
            limit = values[rng.randrange(1, len(values) - 1)]
            bounds.append((k, rng.choice([">=", "<="]), limit))
    fallback = None
    if bounds:
        fallback = max(t[len(places)] for t in terms) + rng.randrange(1, 5)
    return lanes, AffineForm(plain.places, steps, plain.offset, tuple(bounds), fallback)


def _c_values(cases: list[tuple[int, AffineForm]], tmp_path) -> list[list[int]]:
    """Every lane of every form, computed by the C that c_expression writes."""
    body = "".join(f'  for (int i = 0; i < {lanes}; i++) printf("%d ", (int)({c_expression(form, "i")}));\n'
                   '  printf("\\n");\n' for lanes, form in cases)
    source = tmp_path / "lanes.c"
    source.write_text(f"#include <stdio.h>\nint main(void) {{\n{body}  return 0;\n}}\n")
    program = tmp_path / "lanes"
    subprocess.run([*find_compiler().command, "-O1", "-o", str(program), str(source)], check=True)
    out = subprocess.run([str(program)], check=True, capture_output=True, text=True).stdout
    return [[int(v) for v in line.split()] for line in out.splitlines()]


def test_generated_tables_get_a_form_that_reproduces_them_in_python_and_in_c(tmp_path) -> None:
    rng = random.Random(SEED)
    cases = []
    for _ in range(200):
        lanes, form = _random_form(rng)
        table = [form.at(i) for i in range(lanes)]
        found = affine_form(table)
        assert found is not None, (form, table[:40])
        assert [found.at(i) for i in range(lanes)] == table, (form, found)
        cases.append((lanes, found))
    tables = [[form.at(i) for i in range(lanes)] for lanes, form in cases]
    assert _c_values(cases, tmp_path) == tables


def test_permutations_get_no_form() -> None:
    rng = random.Random(SEED + 1)
    for lanes in (16, 64, 480):
        table = list(range(lanes))
        rng.shuffle(table)
        assert affine_form(table) is None


@pytest.mark.parametrize(("table", "expected"), [
    # a padded row: 15 data lanes, then the padding lane (480)
    ([15 * (i // 16) + i % 16 if i % 16 < 15 else 480 for i in range(512)], "(((((i) % 16)) <= 14) ? "
     "(15 * ((i) / 16) + ((i) % 16)) : 480)"),
    # a Toeplitz band of 8 taps: row less column, inside [0, 7]
    ([i // 8 - i % 8 if 0 <= i // 8 - i % 8 < 8 else 8 for i in range(128)],
     "(((((i) / 8) - ((i) % 8)) >= 0 && (((i) / 8) - ((i) % 8)) <= 7) ? (((i) / 8) - ((i) % 8)) : 8)"),
    # a plain stride: no test at all
    ([2 * i + 1 for i in range(32)], "(2 * (i) + 1)"),
])
def test_the_form_is_the_simplest_one(table: list[int], expected: str) -> None:
    form = affine_form(table)
    assert form is not None
    assert c_expression(form, "i") == expected


def test_a_table_of_one_lane_or_one_value() -> None:
    assert affine_form([7]) is None
    form = affine_form([3] * 8)
    assert form is not None and [form.at(i) for i in range(8)] == [3] * 8
