"""The tree questions the passes ask again and again (ir/traversal.py)."""

from __future__ import annotations

from hardboiled import ir
from hardboiled.frontend.parse import parse_input
from hardboiled.ir.traversal import allocations, has_gpu_loops, stores

_CPU = """allocate acc[float32 * 16] in AMXTile
for (x, 0, 4) {
 acc[x] = 0.0f
 allocate tmp[int32 * 4] in Stack
 tmp[0] = x
}
"""

_GPU = """gpu_block<CUDA> (b, 0, 2) {
 allocate frag[float32 * 256] in WMMAAccumulator
 gpu_thread<CUDA> (t, 0, 32) {
  frag[t] = 0.0f
 }
}
"""


def test_outline_answers_for_the_tree_asked_about_whichever_was_asked_last() -> None:
    """One walk per tree is kept (by identity): asking about one tree, then
    another, then the first again, or about a subtree, gives each its own
    answer, as a walk would."""
    cpu, gpu = (parse_input(text).ir for text in (_CPU, _GPU))
    assert isinstance(cpu, ir.Stmt) and isinstance(gpu, ir.Stmt)

    def walked(node: ir.Node) -> tuple[bool, list[str], list[ir.Store]]:
        nodes = list(ir.walk(node))
        return (any(isinstance(n, ir.For) and n.kind in ir.traversal.GPU_LOOP_KINDS for n in nodes),
                [n.name for n in nodes if isinstance(n, ir.Allocate)], [n for n in nodes if isinstance(n, ir.Store)])

    inner = next(n for n in ir.walk(gpu) if isinstance(n, ir.Allocate)).body
    for node in (cpu, cpu, gpu, cpu, inner, gpu, inner):
        assert (has_gpu_loops(node), [a.name for a in allocations(node)], list(stores(node))) == walked(node)
    assert walked(cpu)[:2] == (False, ["acc", "tmp"]) and walked(gpu)[:2] == (True, ["frag"])
    assert walked(inner)[:2] == (True, []) and [s.name for s in walked(cpu)[2]] == ["acc", "tmp"]
