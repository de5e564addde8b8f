"""``--emit html``: the compile as one page a reviewer can read.

For each statement hardboiled selected, side by side: the Halide statement
as the dump printed it, the instructions selected for it, what selection
put in its place, the e-graph it was selected in, the verification of the
program, and, for a statement left as it was, why. Below them, the whole
rewritten program.

The page is one file with its style inline and no script or external
resource, so it works offline, from an artifact store or a mail
attachment. It holds nothing that changes from run to run (no times, no
paths but the input's name), so the same input gives the same bytes.
Halide's own HTML stmt viewer shows the lowered program; this shows the
rewrite and the evidence for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from hardboiled.ir.printer import print_ir

if TYPE_CHECKING:
    from hardboiled import ir
    from hardboiled.select.selector import StoreReport

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d232a; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.summary { color: #46505a; margin-bottom: 16px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600; font-size: 12px; }
.ok { background: #dcf5e3; color: #11602c; } .miss { background: #fde2e1; color: #8a1c17; }
.note { background: #eef1f4; color: #46505a; }
.statement { border: 1px solid #d5dbe1; border-radius: 8px; margin: 16px 0; overflow: hidden; }
.statement > header { background: #f4f6f8; padding: 8px 12px; border-bottom: 1px solid #d5dbe1; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 0; }
.cell { padding: 10px 12px; border-top: 1px solid #eef1f4; min-width: 0; }
.cell:nth-child(odd) { border-right: 1px solid #eef1f4; }
.cell h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #6a7580; margin: 0 0 6px; }
pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap;
      word-break: break-all; margin: 0; max-height: 360px; overflow: auto; }
.intrinsic { font-family: ui-monospace, monospace; background: #e8f0fe; color: #1a3f8f; border-radius: 4px;
             padding: 0 5px; margin-right: 4px; display: inline-block; }
table.figures td { padding: 0 12px 0 0; }
details { margin-top: 8px; } summary { cursor: pointer; font-weight: 600; }
"""


def _badge(text: str, kind: str) -> str:
    return f'<span class="badge {kind}">{escape(text)}</span>'


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _cell(title: str, body: str) -> str:
    return f'<div class="cell"><h3>{escape(title)}</h3>{body}</div>'


def _verification_html(report: dict[str, Any]) -> str:
    check = report.get("verification") or report.get("run")
    if check is None:
        return _badge("not verified", "note") + "<p>Run with <code>--verify</code> (the reference interpreter) or " \
            "<code>--run</code> (the built code) to prove the rewrite by execution.</p>"
    rows = []
    for output in check["outputs"]:
        rows.append(f"<tr><td>{escape(output['buffer'])}</td><td>{output['elements']} elements</td>"
                    f"<td>max abs error {output['max_abs_error']:.3g}</td>"
                    f"<td>tolerance {output['tolerance']:.3g}</td></tr>" if output["tolerance"] is not None else
                    f"<tr><td>{escape(output['buffer'])}</td><td>{output['elements']} elements</td>"
                    f"<td>max abs error {output['max_abs_error']}</td><td>exact</td></tr>")
    how = "reference interpreter" if "verification" in report else "built code, run"
    verdict = _badge("equal", "ok") if check["ok"] else _badge("MISMATCH", "miss")
    return (f"{verdict} <span>{escape(how)}, seed {check['seed']}</span>"
            f'<table class="figures">{"".join(rows)}</table>')


def _statement_html(index: int, statement: dict[str, Any], store: StoreReport | None, source_lines: list[str],
                    verification: str) -> str:
    line = statement["line"]
    original = source_lines[line - 1].strip() if line and 0 < line <= len(source_lines) else "(not in the input)"
    lowered = statement["lowered"]
    status = _badge("lowered", "ok") if lowered else _badge("left as it was", "miss")
    header = (f"<header><b>{index}.</b> store to <code>{escape(statement['buffer'])}</code>"
              f"{f', line {line}' if line else ''} &nbsp; {status} &nbsp; {escape(statement['target'].upper())}"
              f"{' &mdash; ' + escape(statement['pattern']) if statement['pattern'] else ''}</header>")
    intrinsics = "".join(f'<span class="intrinsic">{escape(name)}</span>' for name in statement["intrinsics"])
    egraph = statement["egraph"]
    figures = (f"{egraph['nodes']} nodes, {egraph['classes']} classes"
               + (" (answered from the cache)" if statement["cached"] else "")) if egraph else "no e-graph"
    rewritten = print_ir(store.rewritten) if store is not None and store.rewritten is not None else None
    if lowered:
        why = _cell("Why", f"<p>it matched the {escape(statement['pattern'] or 'tile operation')} pattern "
                    "after equality saturation</p>")
    else:
        why = _cell("Why not lowered", _pre(statement["explanation"] or "no explanation"))
    # The statement and its rewrite side by side, then the evidence.
    cells = [
        _cell("Halide statement", _pre(original)),
        _cell("Rewritten IR", _pre(rewritten) if rewritten else "<p>left as it was</p>"),
        _cell("Selected instructions", intrinsics or "<p>none</p>"),
        _cell("E-graph", f"<p>{escape(figures)}</p>"),
        _cell("Verification", verification),
        why,
    ]
    return f'<section class="statement">{header}<div class="grid">{"".join(cells)}</div></section>'


def render_html(report: dict[str, Any], source: str, stores: Sequence[StoreReport],
                program: ir.Stmt | ir.Module) -> str:
    """The page for one input: ``report`` is its selection report (with
    the verification, if any), ``stores`` the selection's reports in the
    same order as ``report["statements"]``."""
    title = f"hardboiled: {report['input']}"
    lowered, selected = report["lowered"], report["selected"]
    schedule = report["schedule"]
    summary = (f"lowered {lowered} of {selected} accelerator stores"
               + (f"; schedule {schedule['source']} ({schedule['iterations']} iterations)" if schedule else "")
               + (f"; stage '{report['stage']}'" if report["stage"] else ""))
    verification = _verification_html(report)
    source_lines = source.split("\n")
    sections = [_statement_html(i + 1, statement, stores[i] if i < len(stores) else None, source_lines,
                                verification)
                for i, statement in enumerate(report["statements"])]
    if not sections:
        found = report.get("candidates", [])
        hint = "".join(f"<li><code>{escape(c['flag'])}</code> (line {c['line']})</li>" for c in found)
        sections.append("<p>No store is in accelerator memory: nothing was selected.</p>"
                        + (f"<p>Funcs that could be:</p><ul>{hint}</ul>" if hint else ""))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>{escape(title)}</h1>\n<div class=\"summary\">{escape(summary)} &middot; hardboiled "
        f"{escape(report['hardboiled'])}</div>\n"
        + "\n".join(sections)
        + "\n<h2>The rewritten program</h2>\n<details><summary>Show the whole program (Halide's IR format)"
        f"</summary>{_pre(print_ir(program))}</details>\n</body></html>\n"
    )
