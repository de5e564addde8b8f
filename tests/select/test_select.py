"""AMX instruction selection on real Halide dumps (issue: EqSat core + AMX)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.legalize.passes import tensorize
from hardboiled.select.selector import SelectionOptions
from hardboiled.support.diagnostics import ExitCode

from ..conftest import FIXTURES, MANIFEST, run_cli

AMX_CASES = sorted(c for c, m in MANIFEST.items() if m["accelerator"] == "amx")
PRELOAD = sorted(c for c in AMX_CASES if "preload" in c)


def _select(case: str, **options: object):  # type: ignore[no-untyped-def]
    path = FIXTURES / case / "vectorizing.stmt"
    parsed = parse_input(path.read_text(), str(path))
    assert isinstance(parsed.ir, ir.Stmt)
    return tensorize(parsed.ir, SelectionOptions(**options), filename=str(path), source=parsed.text,
                  store_lines=parsed.store_lines)


def _calls(stmt: ir.Stmt, name: str) -> list[ir.Call]:
    return [n for n in ir.walk(stmt) if isinstance(n, ir.Call) and n.name == name]


def _operand_type(operand: ir.Expr, amx: set[str]) -> ir.Type:
    """A tile operand is a tile_load, or a whole tile of a preloaded AMX buffer."""
    if isinstance(operand, ir.Load):
        assert operand.name in amx
        return operand.type.element()
    assert isinstance(operand, ir.Call) and operand.name == "tile_load"
    return operand.type.element()


@pytest.mark.parametrize("case", AMX_CASES)
def test_every_amx_store_becomes_tile_operations(case: str) -> None:
    result = _select(case)
    assert result.reports and all(r.lowered for r in result.reports)
    stmt = result.stmt
    # No AMX buffer is read or written except by tile operations.
    amx = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and n.memory_type == "AMXTile"}
    for node in ir.walk(stmt):
        if isinstance(node, ir.Store) and node.name in amx:
            assert isinstance(node.value, ir.Call)
            assert node.value.name in ("tile_zero", "tile_matmul", "tile_load")
    matmuls = _calls(stmt, "tile_matmul")
    assert matmuls and _calls(stmt, "tile_zero") and _calls(stmt, "tile_store")
    entry = MANIFEST[case]
    a_type, b_type = (ir.parse_type_name({"bf16": "bfloat16", "i8": "int8", "u8": "uint8"}[t])
                      for t in entry["types"].split("->")[0].split("*"))
    for mm in matmuls:
        rows, colbytes, k, _acc, a, b = mm.args
        assert _operand_type(a, amx) == a_type and _operand_type(b, amx) == b_type
        expected_rows = 8 if case.endswith("_8x16") else 16
        assert (rows, colbytes) == (ir.IntImm(expected_rows), ir.IntImm(64))
        assert k == ir.IntImm(32 if a_type.bits == 16 else 64)


@pytest.mark.parametrize("case", ["amx_bf16_matmul_std_single", "amx_int8_matmul_std_tiled"])
def test_standard_layout_b_goes_through_a_vnni_temporary(case: str) -> None:
    stmt = _select(case).stmt
    temps = [n for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and ".amx_vnni." in n.name]
    assert len(temps) == 1
    fill = next(n for n in ir.walk(temps[0].body) if isinstance(n, ir.Store) and n.name == temps[0].name)
    assert isinstance(fill.value, ir.Shuffle)  # the interleave is desugared to a plain shuffle
    kpack = 4 // temps[0].type.bytes
    # VNNI order: out[(kq, n, kr)] = in[(kq * kpack + kr) * N + n]
    assert fill.value.indices[:kpack] == tuple(r * 16 for r in range(kpack))


@pytest.mark.parametrize("case", ["amx_bf16_matmul_vnni_tiled_const", "amx_int8_matmul_vnni_tiled_const"])
def test_dense_vnni_b_is_loaded_as_it_is(case: str) -> None:
    stmt = _select(case).stmt
    assert not [n for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and ".amx_vnni." in n.name]
    b_load = _calls(stmt, "tile_matmul")[0].args[5]
    assert isinstance(b_load, ir.Call) and b_load.args[2] == ir.Variable("B", ir.handle_type())


def test_symbolic_vnni_stride_is_gathered_into_a_temporary() -> None:
    stmt = _select("amx_bf16_matmul_vnni_tiled").stmt
    temps = [n for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and ".amx_vnni." in n.name]
    assert len(temps) == 1
    # Gathered once per call, before the loop nest: one block per reduction
    # step and column tile, filled by loops over the two.
    assert not any(n is temps[0] for loop in _loops(stmt, "mm.s1.r$x.rro") for n in ir.walk(loop))
    fill_loops = [n.name for n in ir.walk(temps[0].body.stmts[0]) if isinstance(n, ir.For)]
    assert fill_loops == ["mm_global_wrapper$0.s0.y.yo", "mm.s1.r$x.rro"]


def _loops(stmt: ir.Stmt, name: str) -> list[ir.For]:
    return [n for n in ir.walk(stmt) if isinstance(n, ir.For) and n.name == name]


def test_byte_offsets_and_strides_for_bf16_and_int8() -> None:
    # The original HardBoiled mixed element and byte units for bf16 and int8.
    bf16 = _calls(_select("amx_bf16_matmul_std_tiled_const").stmt, "tile_matmul")[0]
    a = bf16.args[4]
    assert isinstance(a, ir.Call) and a.args[4] == ir.IntImm(128 * 2)  # A rows are 128 bf16 apart
    int8 = _calls(_select("amx_int8_matmul_vnni_tiled_const").stmt, "tile_matmul")[0]
    a8, b8 = int8.args[4], int8.args[5]
    assert isinstance(a8, ir.Call) and a8.args[4] == ir.IntImm(128)  # int8: bytes == elements
    assert isinstance(b8, ir.Call) and b8.args[1] == ir.IntImm(64) and b8.args[0] == ir.IntImm(16)


def test_temporaries_under_control_flow_get_a_copy_per_branch() -> None:
    stmt = _select("amx_bf16_matmul_std_specialized").stmt
    branch = next(n for n in ir.walk(stmt) if isinstance(n, ir.IfThenElse)
                  and "A.stride.1" in {v.name for v in ir.walk(n.condition) if isinstance(v, ir.Variable)})
    for side in (branch.then_case, branch.else_case):
        assert side is not None
        temps = [n for n in ir.walk(side) if isinstance(n, ir.Allocate) and ".amx_vnni." in n.name]
        assert len(temps) == 1  # inside the branch, then hoisted out of its loops
        assert isinstance(side, ir.Allocate) and side is temps[0]


def test_multiple_accumulator_tiles_keep_their_tile_index() -> None:
    stmt = _select("amx_bf16_std_reorder").stmt
    bases = sorted({n.index.base.value for n in ir.walk(stmt)  # type: ignore[union-attr]
                    if isinstance(n, ir.Store) and n.name == "mm"})
    assert bases == [0, 256]


@pytest.mark.parametrize("case", PRELOAD)
def test_preloaded_operands_are_whole_tiles_of_their_amx_buffer(case: str) -> None:
    stmt = _select(case).stmt
    staged = "A_im_global_wrapper$0" if "preload_a" in case else "B_im_global_wrapper$0"
    fills = [n for n in ir.walk(stmt) if isinstance(n, ir.Store) and n.name == staged]
    assert fills and all(isinstance(f.value, ir.Call) and f.value.name == "tile_load" for f in fills)
    operand = 4 if "preload_a" in case else 5
    reads = [mm.args[operand] for mm in _calls(stmt, "tile_matmul")]
    assert all(isinstance(r, ir.Load) and r.name == staged for r in reads)


def test_preloading_standard_layout_b_stores_the_tile_in_vnni_order() -> None:
    # The original HardBoiled could not do this one (paper, Table 1).
    stmt = _select("amx_bf16_std_preload_b").stmt
    fill = next(n for n in ir.walk(stmt) if isinstance(n, ir.Store) and n.name == "B_im_global_wrapper$0")
    assert isinstance(fill.value, ir.Call)
    source = fill.value.args[2]
    assert isinstance(source, ir.Variable) and ".amx_vnni." in source.name
    temp = next(n for n in ir.walk(stmt) if isinstance(n, ir.Allocate) and n.name == source.name)
    interleave = next(n for n in ir.walk(temp.body) if isinstance(n, ir.Store) and n.name == source.name)
    assert isinstance(interleave.value, ir.Shuffle)


def test_store_in_marks_a_buffer_the_dump_put_elsewhere(tmp_path: Path) -> None:
    text = (FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt").read_text()
    moved = tmp_path / "stack.stmt"
    moved.write_text(text.replace("allocate mm[float32 * 16 * 16] in AMXTile", "allocate mm[float32 * 16 * 16] in Stack"))
    plain = run_cli("compile", str(moved))
    assert plain.returncode == 0 and b"tile_matmul" not in plain.stdout
    assert b"no store touches accelerator memory" in plain.stderr
    marked = run_cli("compile", str(moved), "--store-in", "mm=AMXTile")
    assert marked.returncode == 0, marked.stderr.decode()
    assert b"allocate mm[float32 * 16 * 16] in AMXTile" in marked.stdout
    assert marked.stdout.count(b"tile_matmul(") == 1


def test_a_miss_is_an_error_naming_the_store_and_buffer() -> None:
    # f16 operands (a WMMA dump) cannot be AMX tiles.
    path = FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--store-in", "prod=AMXTile")
    assert result.returncode == ExitCode.SELECTION_MISS == 1
    text = result.stderr.decode()
    first = text.splitlines()[0]
    assert re.match(re.escape(str(path)) + r":\d+:\d+: error: store to 'prod' cannot be lowered", first)
    assert "operand A (a load of 'A') has type float16" in text
    assert result.stdout == b""


def test_allow_fallback_keeps_the_store_and_warns() -> None:
    path = FIXTURES / "wmma_f16_matmul" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--store-in", "prod=AMXTile", "--allow-fallback")
    assert result.returncode == 0
    assert b"warning: store to 'prod' cannot be lowered" in result.stderr
    assert b"tile_" not in result.stdout
    # The buffer is no longer in AMX memory: nothing would use its tiles.
    assert b"allocate prod[float32 * 256]\n" in result.stdout or b"allocate prod[float32 * " in result.stdout
    assert b"in AMXTile" not in result.stdout


def test_unknown_store_in_buffer_is_an_input_error() -> None:
    path = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--store-in", "nope=AMXTile")
    assert result.returncode == 2
    assert b"the input allocates no buffer named 'nope'" in result.stderr


def test_schedule_and_iterations_options(tmp_path: Path) -> None:
    path = FIXTURES / "amx_bf16_matmul_vnni_tiled" / "vectorizing.stmt"
    # Too few rounds for the VNNI index axioms to finish: a miss.
    few = run_cli("compile", str(path), "--iterations", "2")
    assert few.returncode == 1
    schedule = tmp_path / "schedule.egg"
    schedule.write_text(
        "(run-schedule (repeat @ITERATIONS@ (saturate (run supporting)) (saturate (run axioms))"
        " (run amx-layouts) (run amx-lowering)))\n"
    )
    custom = run_cli("compile", str(path), "--schedule", str(schedule), "--iterations", "3")
    assert custom.returncode == 0, custom.stderr.decode()
    assert f"schedule {schedule} (3 iterations)".encode() in custom.stderr


def _rules_with(tmp_path: Path, extra: str) -> dict[str, str]:
    """An environment whose rule files (HARDBOILED_RULES_DIR, trusted like
    the installed ones) add ``extra``: a schedule file may only run
    rulesets that rule files declare."""
    import shutil

    rules = tmp_path / "rules"
    shutil.copytree(Path(__file__).resolve().parent.parent.parent / "rules", rules)
    supporting = rules / "supporting.egg"
    supporting.write_text(supporting.read_text() + extra)
    return {"HARDBOILED_RULES_DIR": str(rules)}


@pytest.mark.slow
def test_egglog_timeout_is_a_resource_limit(tmp_path: Path) -> None:
    path = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
    # A rule that keeps making new terms never saturates.
    env = _rules_with(tmp_path, "(ruleset grow)\n(rule ((= e (IntImm t v))) ((let w (IntImm t (+ v 1)))) :ruleset grow)\n")
    schedule = tmp_path / "forever.egg"
    schedule.write_text("(run-schedule (repeat 100000000 (run grow)))\n")
    result = run_cli("compile", str(path), "--schedule", str(schedule), "--egglog-timeout", "2", env=env)
    assert result.returncode == ExitCode.RESOURCE_LIMIT == 4, result.stderr.decode()
    assert b"did not finish within 2 s" in result.stderr


@pytest.mark.slow
def test_egglog_memory_cap_is_a_resource_limit(tmp_path: Path) -> None:
    path = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
    # Every pair of integers makes a new one: the e-graph squares each round.
    env = _rules_with(tmp_path, "(ruleset blowup)\n(rule ((= a (IntImm t v)) (= b (IntImm t w))) "
                                "((let c (IntImm t (+ (* v 1000) w)))) :ruleset blowup)\n")
    schedule = tmp_path / "blowup.egg"
    schedule.write_text("(run-schedule (repeat 8 (run blowup)))\n")
    result = run_cli("compile", str(path), "--schedule", str(schedule), "--egglog-memory", "300",
                     "--egglog-timeout", "120", env=env)
    assert result.returncode == 4, result.stderr.decode()
    assert b"ran out of memory (limit 300 MB)" in result.stderr


def test_emit_egg_is_the_program_that_runs() -> None:
    path = FIXTURES / "amx_bf16_matmul_std_single" / "vectorizing.stmt"
    result = run_cli("compile", str(path), "--emit", "egg")
    assert result.returncode == 0
    text = result.stdout.decode()
    for needle in ("(ruleset axioms)", "(amx-limits 16 64)", "(push)\n(let $s0 (Store \"mm\"", "(extract $s2)\n(pop)"):
        assert needle in text


SCOPED_CASES = ["amx_bf16_matmul_std_single", "amx_bf16_std_reorder", "amx_bf16_vnni_preload_a",
                "amx_bf16_std_preload_b", "wmma_conv2d", "wmma_upsample2"]


def _store_in(case: str) -> dict[str, str]:
    entry = MANIFEST[case]
    return {entry["accumulator"]: "WMMAAccumulator"} if entry["accelerator"] == "wmma" else {}


@pytest.mark.parametrize("case", SCOPED_CASES)
def test_stores_saturated_in_scopes_of_one_select_what_one_egraph_does(case: str, monkeypatch) -> None:
    """Stores run in (push)/(pop) scopes of up to STATEMENTS_PER_SCOPE, so
    that time stays linear in their number. Those that share facts (a
    tile's zeroing, accumulation and copy-out; a preloaded operand buffer's
    filling and reading) stay together or get a helper: with scopes of one
    store, selection must be what one e-graph of all gives, without the
    selector's fallback to one e-graph."""
    from hardboiled.ir.printer import print_ir
    from hardboiled.select import rules, selector

    store_in = _store_in(case)
    together = _select(case, store_in=store_in)
    monkeypatch.setattr(selector, "STATEMENTS_PER_SCOPE", 1)
    runs: list[object] = []
    saturate = rules.saturate
    monkeypatch.setattr(selector, "saturate", lambda *a, **k: runs.append(k["groups"]) or saturate(*a, **k))
    apart = _select(case, store_in=store_in)
    assert print_ir(apart.stmt) == print_ir(together.stmt)
    # The last run selected (an earlier one may miss before the selector
    # cuts stores into pieces): it ran in scopes, not in the fallback.
    assert runs[-1] is not None, "the selector fell back to one e-graph"
    assert apart.egraph is not None and together.egraph is not None
    if len(runs[-1]) > 1:
        assert apart.egraph.nodes > together.egraph.nodes  # the rules' part is counted per scope


def test_one_egraph_is_tried_again_only_for_a_miss_it_could_change() -> None:
    """After a miss in scope groups, every store is saturated again in one
    e-graph only if a store missed that the e-graph held and that is not a
    partial tile at the output's edge (a GuardWithIf tail's copy)."""
    from hardboiled.select.extract import accelerator_allocations, select_stores
    from hardboiled.select.selector import _one_egraph_may_lower

    text = ("allocate acc[float32 * 256] in AMXTile\nacc[ramp(0, 1, 256)] = x256(0.000000f)\n"
            "out[ramp(0, 1, 256)] = acc[ramp(0, 1, 256)]\n")
    parsed = parse_input(text, "<test>", buffer_types={"out": ir.parse_type_name("float32")})
    selected = select_stores(parsed.ir, accelerator_allocations(parsed.ir, {}), {})
    zero, copy_out = selected
    lowered_zero = {zero.position: zero.store}
    assert _one_egraph_may_lower(selected, selected, lowered_zero, frozenset())
    assert not _one_egraph_may_lower(selected, selected, lowered_zero, frozenset({"acc"}))  # an edge copy
    assert not _one_egraph_may_lower(selected, [zero], lowered_zero, frozenset())  # copy_out was not saturated
    everything = {s.position: s.store for s in selected}
    assert not _one_egraph_may_lower(selected, selected, everything, frozenset())


@pytest.mark.slow
@pytest.mark.parametrize("dump", ["sweep/amx_tail-guard_rem-4", "sweep/amx_order-ba_init-bias_col_tail-guard_rem-4",
                                  "random_sweep/amx-s1-0010"])
def test_misses_at_a_guard_with_if_edge_saturate_no_second_egraph(dump: str, monkeypatch) -> None:
    """A GuardWithIf tail's partial tiles miss by design (warnings): the
    selector saturates each round in scope groups only, and lowers what it
    lowered when it saturated every store again in one e-graph after them
    (real dumps of the listed sweep and the seeded sample: the claim of
    extract.scope_groups, checked here rather than in every compile)."""
    from hardboiled.ir.printer import print_ir
    from hardboiled.select import rules, selector

    runs: list[object] = []
    saturate = rules.saturate
    monkeypatch.setattr(selector, "saturate", lambda *a, **k: runs.append(k["groups"]) or saturate(*a, **k))
    saturations: list[int] = []  # per round of selection
    saturate_and_decode = selector._saturate_and_decode

    def counted(*args: object) -> object:
        before = len(runs)
        decoded = saturate_and_decode(*args)  # type: ignore[arg-type]
        saturations.append(len(runs) - before)
        return decoded

    monkeypatch.setattr(selector, "_saturate_and_decode", counted)
    stmt = parse_input((FIXTURES.parent / f"{dump}.stmt").read_text()).ir
    result = selector.select_instructions(stmt, SelectionOptions(cache_dir=None))
    assert any(isinstance(groups, list) for groups in runs) and set(saturations) == {1}
    assert any(r.lowered for r in result.reports) and any(".edge." in r.buffer and not r.lowered for r in result.reports)
    # as before: one e-graph after any miss
    monkeypatch.setattr(selector, "_one_egraph_may_lower",
                        lambda selected, lowerable, replacements, edge: any(s.position not in replacements
                                                                            for s in selected))
    saturations.clear()
    again = selector.select_instructions(stmt, SelectionOptions(cache_dir=None))
    assert 2 in saturations  # scope groups, then one e-graph
    assert print_ir(again.stmt) == print_ir(result.stmt)


def test_scope_groups_keep_a_tile_together_and_lend_it_an_accumulating_store() -> None:
    """Zeroing and copy-out of a tile need the shape that an accumulation
    into it gives; accumulations need nothing from each other."""
    from hardboiled.select.extract import ScopeGroup, accelerator_allocations, scope_groups, select_stores

    zero = "acc[ramp(0, 1, 256)] = x256(0.000000f)\n"
    accumulate = ("acc[ramp(0, 1, 256)] = acc[ramp(0, 1, 256)] + "
                  "(float32x256)vector_reduce_add(a[ramp(%d, 1, 8192)]*b[ramp(0, 1, 8192)])\n")
    copy_out = "out[ramp(0, 1, 256)] = acc[ramp(0, 1, 256)]\n"
    body = zero + "".join(accumulate % (8192 * i) for i in range(3)) + copy_out
    text = f"allocate acc[float32 * 256] in AMXTile\n{body}"
    parsed = parse_input(text, "<test>", buffer_types={n: ir.parse_type_name("float32") for n in ("a", "b", "out")})
    allocations = accelerator_allocations(parsed.ir, {})
    selected = select_stores(parsed.ir, allocations, {})
    assert len(selected) == 5
    assert scope_groups(selected, 1) == [ScopeGroup((0, 4), (1,)), ScopeGroup((1,)), ScopeGroup((2,)),
                                         ScopeGroup((3,))]
    assert scope_groups(selected, 3) == [ScopeGroup((0, 1, 4)), ScopeGroup((2, 3))]
