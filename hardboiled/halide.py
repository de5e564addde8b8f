"""The Halide bridge: from a halide-python pipeline to tensorized code.

``tensorize(func_or_pipeline, target, ...)`` lowers the pipeline, captures
the IR Halide prints after its vectorizing pass, and runs the selector on
it (``hardboiled.compile``).

Halide prints its passes only with ``HL_DEBUG_CODEGEN=2``, which libHalide
reads once per process, and to the process's standard error. So the
lowering runs in a child process: the pipeline is serialized
(``halide.serialize_pipeline``, schedules included), and the child
deserializes it, re-applies the input buffers' constraints (which the
serialized parameters do not carry: ``dim(0).set_extent(64)``, strides,
alignment), lowers it, and is stopped once the stage is printed. The
user's process is left as it was.

The generated functions take Halide's argument order: ``arguments`` (the
pipeline's inputs, as you would pass them to ``compile_to``), then the
outputs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hardboiled.api import CompileError, Result, compile
from hardboiled.support.diagnostics import Diagnostic, ExitCode

DEFAULT_TIMEOUT_S = 300.0
_HEADER = "Lowering after "
_CONSTANT_EXPR = re.compile(r"<halide\.Expr of type u?int\d+: (-?\d+)>")


def tensorize(func_or_pipeline: Any, target: Any, *, arguments: Sequence[Any] | None = None,
              stage: str = "vectorizing", timeout_s: float = DEFAULT_TIMEOUT_S, **options: Any) -> Result:
    """Lower a Halide ``Func`` (or ``Pipeline``, or list of output Funcs)
    for ``target`` (a ``halide.Target`` or its string), and compile the
    IR of ``stage`` with ``hardboiled.compile(..., **options)``.

    ``arguments``: the inputs (ImageParams and scalar Params) in Halide's argument order
    (default: ``Pipeline.infer_arguments()``'s). ``options`` are
    ``hardboiled.compile``'s: ``store_in``, ``target`` is named
    ``code_target`` here (``auto``, ``amx``, ``wmma``), ``name``, ``verify``,
    ``run``, ``build``...
    """
    log, inputs, outputs = lowering_log(func_or_pipeline, target, arguments=arguments, stage=stage,
                                        timeout_s=timeout_s)
    if "code_target" in options:
        options["target"] = options.pop("code_target")
    options.setdefault("name", _default_name(outputs[0]))
    return compile(log, stage=stage, args=[*inputs, *outputs], **options)


def lowering_log(func_or_pipeline: Any, target: Any, *, arguments: Sequence[Any] | None = None,
                 stage: str = "vectorizing",
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[str, list[str], list[str]]:
    """Halide's HL_DEBUG_CODEGEN=2 log of lowering the pipeline, up to the
    end of ``stage``; and the names of its inputs and outputs, in order."""
    import halide as hl

    pipeline = _as_pipeline(hl, func_or_pipeline)
    if arguments is None:
        arguments = list(pipeline.infer_arguments())  # ImageParams and Params (scalars are arguments too)
    inputs = [_argument_name(a) for a in arguments]
    outputs = [f.name() for f in pipeline.outputs()]
    spec = {"target": str(target), "inputs": inputs, "stage": stage,
            "constraints": {_argument_name(a): _constraints(hl, a) for a in arguments if _is_image_param(hl, a)}}
    return _lower_in_child(hl.serialize_pipeline(pipeline), spec, stage, timeout_s), inputs, outputs


def _as_pipeline(hl: Any, value: Any) -> Any:
    if isinstance(value, hl.Pipeline):
        return value
    if isinstance(value, hl.Func):
        return hl.Pipeline(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(f, hl.Func) for f in value):
        return hl.Pipeline(list(value))
    raise TypeError(f"expected a halide Func, a list of Funcs or a Pipeline, not {type(value).__name__}")


def _is_image_param(hl: Any, argument: Any) -> bool:
    return isinstance(argument, hl.ImageParam)


def _argument_name(argument: Any) -> str:
    name = argument.name
    return str(name() if callable(name) else name)


def _default_name(output: str) -> str:
    from hardboiled.codegen.naming import entry_point_name

    return entry_point_name(output.split("$", 1)[0] + ".stmt")


def _constraints(hl: Any, param: Any) -> dict[str, Any]:
    """An ImageParam's constant constraints, per dimension: what the child
    sets again. A constraint that is not a constant (an expression in
    other parameters) cannot be carried over, and is refused."""
    parameter = param.parameter()
    dims = []
    for d in range(param.dimensions()):
        fields = {}
        for field in ("min", "extent", "stride"):
            expr = getattr(parameter, f"{field}_constraint")(d)
            if not expr.defined():
                continue
            # The bindings print an Expr but give no way to read a constant.
            match = _CONSTANT_EXPR.fullmatch(repr(expr))
            if match is None:
                raise ValueError(f"{param.name()}.dim({d}).{field} is constrained to {expr!r}, which is not a "
                                 "constant: tensorize can carry only constant constraints to the lowering "
                                 "process")
            fields[field] = int(match.group(1))
        dims.append(fields)
    return {"dims": dims, "host_alignment": parameter.host_alignment()}


def _lower_in_child(pipeline: bytes, spec: dict[str, Any], stage: str, timeout_s: float) -> str:
    """Run the child; return its log up to the end of ``stage``."""
    with tempfile.TemporaryDirectory(prefix="hardboiled-halide-") as tmp:
        (Path(tmp) / "pipeline.hlpipe").write_bytes(pipeline)
        (Path(tmp) / "spec.json").write_text(json.dumps(spec))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HL_")}
        env.update(HL_DEBUG_CODEGEN="2", HL_COLORS="0")
        child = subprocess.Popen([sys.executable, "-m", "hardboiled.halide", tmp], env=env, cwd=tmp,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, errors="replace")
        timer = threading.Timer(timeout_s, child.kill)
        timer.start()
        lines: list[str] = []
        in_stage = complete = False
        try:
            assert child.stderr is not None
            for line in child.stderr:
                if in_stage and line.startswith(_HEADER):
                    complete = True  # the next pass has begun: the stage is whole
                    child.kill()
                    break
                lines.append(line)
                in_stage = in_stage or line.rstrip("\n") == f"{_HEADER}{stage}:"
        finally:
            child.stderr.close()  # type: ignore[union-attr]
            code = child.wait()
            timer.cancel()
    if complete or (in_stage and code == 0):
        return "".join(lines)
    error = next((line[len("HALIDE_ERROR: "):].strip() for line in reversed(lines)
                  if line.startswith("HALIDE_ERROR: ")), None)
    why = error or (f"no 'Lowering after {stage}' stage" if code == 0 else f"the lowering process exited {code}")
    raise CompileError([Diagnostic("error", f"Halide could not lower the pipeline: {why}")],
                       int(ExitCode.INPUT_ERROR))


def _child(directory: str) -> None:
    """In the child: deserialize the pipeline and lower it (the passes are
    printed on standard error)."""
    import halide as hl

    spec = json.loads((Path(directory) / "spec.json").read_text())
    data = (Path(directory) / "pipeline.hlpipe").read_bytes()
    params = hl.deserialize_parameters(data)
    for name, constraint in spec["constraints"].items():
        parameter = params[name]
        for d, fields in enumerate(constraint["dims"]):
            for field, value in fields.items():
                getattr(parameter, f"set_{field}_constraint")(d, hl.Expr(value))
        parameter.set_host_alignment(constraint["host_alignment"])
    pipeline = hl.deserialize_pipeline(data, params)
    arguments = {a.name: a for a in pipeline.infer_arguments()}
    try:
        pipeline.compile_to_lowered_stmt(str(Path(directory) / "lowered.stmt"),
                                         [arguments[n] for n in spec["inputs"]], hl.StmtOutputFormat.Text,
                                         hl.Target(spec["target"]))
    except hl.HalideError as error:  # one line the parent can find
        print("HALIDE_ERROR: " + " ".join(str(error).split()), file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    _child(sys.argv[1])
