"""Every axiom of rules/axioms.egg checked on its own: both sides of each
rewrite are instantiated on random terms of the shapes the rule admits
(random lane counts and values, opaque random vectors for its expression
variables) and evaluated lane by lane; a rewrite whose sides differ on an
instance its guards accept fails, named.

The two ``rule``s of the file (a reduction's product commuted, a flat
operand ramp split at K) relate terms inside a store's reduction; they are
checked, like every layout and lowering rule, by the rewrite check on every
store they fire on (tests/verify/test_rewrite_check.py)."""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from hardboiled.select.rules import rule_text

Sexp = Any
INSTANCES = 40
"""Instances each rewrite must pass, drawn until that many are admissible."""
ATTEMPTS = 200000


def _parse(text: str) -> list[Sexp]:
    text = re.sub(r";[^\n]*", "", text)
    tokens = re.findall(r'"[^"]*"|\(|\)|[^\s()]+', text)
    stack: list[list[Sexp]] = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    return stack[0]


def _rewrites() -> list[tuple[str, Sexp, Sexp, list[Sexp]]]:
    """(name, lhs, rhs, guards) of every rewrite in axioms.egg."""
    found = []
    for form in _parse(rule_text("axioms.egg")):
        if isinstance(form, list) and form and form[0] == "rewrite":
            lhs, rhs, rest = form[1], form[2], form[3:]
            guards = rest[rest.index(":when") + 1] if ":when" in rest else []
            found.append((_show(lhs) + " => " + _show(rhs), lhs, rhs, guards))
    return found


def _show(e: Sexp) -> str:
    return e if isinstance(e, str) else "(" + " ".join(_show(x) for x in e) + ")"


# ------------------------------------------------------------------ values
class Inadmissible(Exception):
    """The instance is not a well-typed term (lanes disagree), or a guard fails."""


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(b == 0, 0, np.floor_divide(a, np.where(b == 0, 1, b)))


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = np.where(b == 0, 1, np.abs(b))
    return np.where(b == 0, 0, np.mod(a, safe))


_BINOPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _div, "Mod": _mod,
    "Min": np.minimum, "Max": np.maximum,
}


def _lanes(value: np.ndarray) -> int:
    return int(value.size)


class Evaluator:
    """Terms of the egglog term language to int64 lane vectors; i64 atoms
    to ints. Expression variables are the opaque vectors they are bound to;
    loads read one random table per buffer name."""

    def __init__(self, env: dict[str, Any], tables: dict[str, np.ndarray]):
        self.env, self.tables = env, tables

    def atom(self, e: Sexp) -> Any:
        if isinstance(e, str):
            if re.fullmatch(r"-?\d+", e):
                return int(e)
            if e.startswith('"'):
                return e
            return self.env[e]
        head, args = e[0], e[1:]
        if head in ("+", "-", "*", "/", "%"):
            a, b = (self.atom(x) for x in args)
            if head in ("/", "%") and b == 0:
                raise Inadmissible("division by zero in a lane count")
            return {"+": a + b, "-": a - b, "*": a * b, "/": int(a / b) if b else 0, "%": a % b if b else 0}[head]
        if head == "Ty":
            return ("Ty", self.atom(args[0]), self.atom(args[1]), self.atom(args[2]))
        if len(args) == 0:
            return head  # a nullary constructor: (Add), (IntT)
        return self.expr(e)

    def expr(self, e: Sexp) -> np.ndarray:
        if isinstance(e, str):
            value = self.env[e]
            if not isinstance(value, np.ndarray):
                raise Inadmissible(f"{e} is not an expression here")
            return value
        head, args = e[0], e[1:]
        if head == "IntImm":
            t = self.atom(args[0])
            if t[3] != 1:
                raise Inadmissible("an IntImm is a scalar")
            return np.array([self.atom(args[1])], dtype=np.int64)
        if head == "Bop":
            op, a, b = self.atom(args[0]), self.expr(args[1]), self.expr(args[2])
            if _lanes(a) != _lanes(b):
                raise Inadmissible("a Bop's operands have different lanes")
            return _BINOPS[op](a, b)
        if head == "Ramp":
            base, stride, lanes = self.expr(args[0]), self.expr(args[1]), self.atom(args[2])
            if _lanes(base) != _lanes(stride) or lanes < 1:
                raise Inadmissible("a ramp's base and stride have different lanes")
            return np.concatenate([base + i * stride for i in range(lanes)])
        if head == "Broadcast":
            value, lanes = self.expr(args[0]), self.atom(args[1])
            if lanes < 1:
                raise Inadmissible("no lanes")
            return np.tile(value, lanes)
        if head in ("Load", "Cast"):
            t = self.atom(args[0])
            inner = self.expr(args[-1])
            if t[3] != _lanes(inner):
                raise Inadmissible(f"a {head}'s type has {t[3]} lanes, its operand {_lanes(inner)}")
            if head == "Cast":
                return inner
            table = self.tables[self.atom(args[1])]
            return table[np.mod(inner, table.size)]
        if head in ("Mem2AMX", "AMX2Mem", "Mem2WMMA", "WMMA2Mem"):
            return self.expr(args[0])
        raise Inadmissible(f"no semantics here for {head}")

    def guard(self, g: Sexp) -> bool:
        head, a, b = g[0], self.atom(g[1]), self.atom(g[2])
        return {"=": a == b, ">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[head]


_LANE_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16)
_FEW_LANES = (1, 2, 4)
"""Mostly small powers of two, so that independent draws often fit
together; now and then any of _LANE_CHOICES, or (for i64) any small int."""


def _variables(e: Sexp, found: dict[str, str], sort: str = "Expr") -> None:
    """The rule's variables with the sort of the place they appear in."""
    if isinstance(e, str):
        if re.fullmatch(r"[a-z][a-z0-9_-]*", e):
            found.setdefault(e, sort)
        return
    head, args = e[0], e[1:]
    sorts = _ARG_SORTS.get(head, ["i64"] * len(args) if head in ("+", "-", "*", "/", "%") else ["Expr"] * len(args))
    for arg, arg_sort in zip(args, sorts):
        _variables(arg, found, arg_sort)


_ARG_SORTS = {
    "IntImm": ["Type", "i64"], "Bop": ["BinOp", "Expr", "Expr"], "Ramp": ["Expr", "Expr", "i64"],
    "Broadcast": ["Expr", "i64"], "Load": ["Type", "String", "Expr"], "Cast": ["Type", "Expr"],
    "Ty": ["TypeCode", "i64", "i64"], "Mem2AMX": ["Expr"], "AMX2Mem": ["Expr"], "Mem2WMMA": ["Expr"],
    "WMMA2Mem": ["Expr"],
}


def _draw(variables: dict[str, str], rng: random.Random) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for name, sort in variables.items():
        if sort == "Expr":
            lanes = rng.choice(_FEW_LANES if rng.random() < 0.8 else _LANE_CHOICES)
            env[name] = np.array([rng.randint(-40, 40) for _ in range(lanes)], dtype=np.int64)
        elif sort == "i64":
            roll = rng.random()
            env[name] = rng.choice(_FEW_LANES) if roll < 0.6 else rng.choice(_LANE_CHOICES) if roll < 0.9 \
                else rng.randint(-8, 40)
        elif sort == "BinOp":
            env[name] = rng.choice(sorted(_BINOPS))
        elif sort == "Type":
            env[name] = ("Ty", "IntT", 32, rng.choice(_FEW_LANES if rng.random() < 0.8 else _LANE_CHOICES))
        elif sort == "TypeCode":
            env[name] = "IntT"
        else:
            env[name] = '"buf"'
    return env


def _counterexample(name: str, lhs: Sexp, rhs: Sexp, guards: list[Sexp]) -> tuple[int, dict[str, Any] | None]:
    """How many admissible instances were checked, and the first on which
    the two sides differ (None: up to INSTANCES agreed)."""
    variables: dict[str, str] = {}
    _variables(lhs, variables)
    rng = random.Random(zlib.crc32(name.encode()))
    tables = {'"buf"': np.array([rng.randint(-1000, 1000) for _ in range(97)], dtype=np.int64)}
    checked = 0
    for _ in range(ATTEMPTS):
        env = _draw(variables, rng)
        evaluator = Evaluator(env, tables)
        try:
            if not all(evaluator.guard(g) for g in guards):
                continue
            left = evaluator.expr(lhs)
        except Inadmissible:
            continue
        try:
            right = evaluator.expr(rhs)
        except Inadmissible:
            return checked, env  # an admissible left side made an ill-typed right one
        if not (left.size == right.size and np.array_equal(left, right)):
            return checked, env
        checked += 1
        if checked == INSTANCES:
            break
    return checked, None


@pytest.mark.parametrize(("name", "lhs", "rhs", "guards"), _rewrites(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_axiom_holds_on_random_instances(name: str, lhs: Sexp, rhs: Sexp, guards: list[Sexp]) -> None:
    checked, counterexample = _counterexample(name, lhs, rhs, guards)
    assert counterexample is None, f"{name} is wrong for {counterexample}"
    assert checked == INSTANCES, f"{name}: only {checked} admissible instances drawn"


@pytest.mark.parametrize("wrong", [
    "(rewrite (Ramp x s 2) (Broadcast x 2))",
    "(rewrite (Bop (Sub) a b) (Bop (Sub) b a))",
    "(rewrite (Bop (Add) (Ramp b s r) (Broadcast x bl)) (Ramp (Bop (Add) b (Broadcast x (/ bl r))) s r))",
])
def test_a_wrong_axiom_is_caught(wrong: str) -> None:
    """The last is the ramp-plus-broadcast axiom without its guard (the
    broadcast's period must divide the ramp's base width)."""
    (form,) = _parse(wrong)
    _, counterexample = _counterexample(wrong, form[1], form[2], [])
    assert counterexample is not None


def test_every_rewrite_of_the_axioms_is_checked() -> None:
    text = rule_text("axioms.egg")
    assert len(_rewrites()) == text.count("(rewrite ") >= 25
