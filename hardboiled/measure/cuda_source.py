"""What generated Tensor-Core (WMMA) code does per thread block, read from the
CUDA text hardboiled writes.

The speed of a WMMA kernel hangs on figures that need no GPU to measure:
how many ``mma_sync`` calls make one output fragment, how often operand
fragments are loaded (and how often the same fragment is loaded again), how
many bytes go through shared memory, how many barriers a fragment costs and
how busy a warp's 32 lanes are in the code around the Tensor-Core calls.
``analyze_cuda`` reads them off the generated source; ``ptx_counts`` counts
instructions in the PTX nvcc makes of it; bench/wmma_static.py prints both
for every WMMA application.

How the source is read (it is the generator's own output, not arbitrary
CUDA: one statement a line, braces at line ends, though the reader splits
on braces and semicolons and so does not rely on the line breaks):

* A kernel is a ``__global__ void NAME(...) { ... }``; its block size comes
  from the ``/* launched as <<<grid, dim3(X, Y, Z)>>> */`` comment before it
  (else from the host launch), its grid from the host's
  ``dim3 hb_grid(A, B, C), hb_block(X, Y, Z);`` and ``NAME<<<hb_grid,
  hb_block[, shared, stream]>>>``. Grid entries are evaluated as integer
  constants (casts and parentheses allowed); anything else is ``None``.
* Execution is tracked per thread of the block: every scope carries how
  many times each thread runs its statements. A ``for`` multiplies that by
  its trip count when its bounds are integer constants (the generator's
  ``int32_t V_lo = A, V_end = V_lo + B;`` before the loop gives B trips).
  A loop whose start depends on the thread (``hb_i = (int)threadIdx.x`` or
  ``hb_i = hb_thread`` stepping by the warp or block size) gives each
  thread its own share of the iterations, so a warp-cooperative 256-element
  loop runs 8 times in each of 32 lanes. Bounds that are not constants
  count the body once and set ``symbolic_trips``; ``hb_e < f.num_elements``
  (a fragment's elements) is taken as 8 and noted.
* An ``if`` whose condition depends only on thread indices and constants
  (``threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0``) keeps just
  the threads it admits. The generator's other guards are thread-loop
  bounds (``threadIdx.x < 16`` in a 16-thread block) that admit every
  thread, so they change nothing; a guard that cannot be evaluated (it
  reads data) is assumed to admit everyone. An ``else`` gets the threads
  its ``if`` turned away.
* From the per-thread counts: a warp-level operation (``wmma::`` calls,
  ``__syncwarp``) runs once per warp per iteration of its slowest lane, so
  its count is the sum over warps of the largest count among their lanes;
  ``__syncthreads`` counts the block's barriers (the largest count of any
  thread); shared-memory element reads and writes count every thread's.
* Non-tensor statements are the executed statements that are not
  ``wmma::`` calls or declarations, barriers, ``(void)x;``, declarations
  without initializer, ``static`` data, ``const`` bindings of
  ``threadIdx``/``blockIdx``, a loop's bound declaration, or the binding of
  a per-warp shared buffer (``T *NAME = NAME_warps[hb_warp];``). Each is
  counted in warp issues (``nontensor_executions``: one per warp that runs
  it, however many lanes) and in thread executions
  (``nontensor_thread_executions``); ``lane_utilization`` is the second over
  32 times the first, so a warp-cooperative loop scores 1.0 and a loop run
  by one thread 1/32. (Weighting by thread executions instead would call a
  one-thread loop of 256 iterations as cheap as a 256-element cooperative
  loop, which takes 8 warp issues, not 256.)
* ``distinct_operand_loads`` is the fewest operand loads the same code
  could make: within each straight-line stretch of code it counts one load
  per distinct (fragment type, address text, ldm text). A stretch ends at a
  loop's or ``if``'s start or end and at a barrier; a plain ``{ }`` scope
  does not end one (the generator opens one per Tensor-Core statement, and
  loads repeated across them are what this figure is for). Writing a name
  the address mentions (the buffer, or a variable in the offset) forgets
  the loads that mention it.
* An output fragment is a ``store_matrix_sync`` to memory other than
  shared memory (an intermediate result stored to a global buffer counts);
  a kernel that only stores to shared memory counts all its stores.

An application sums its kernels, each weighted by the blocks its launches
start when every grid entry is a constant, and counted once (per block)
otherwise (``ApplicationFigures.grid_known`` says which); per-fragment
figures divide those sums by the summed output fragments.

The module uses only the standard library, except ``generate_ptx``, which
asks hardboiled's toolchain for nvcc; bench/wmma_static.py loads it by path
to measure an older checkout's output with today's reader.
"""


from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .c_syntax import (
    ELEMENT_BYTES,
    IDENTIFIER,
    CExpression,
    Piece,
    assignment,
    base_identifier,
    blank_comments,
    bounds_loop,
    compile_c_expression,
    evaluate,
    is_type_name,
    matching_bracket,
    parse_declarator,
    pieces,
    split_top_level,
    trip_count,
    without_spaces,
)
from .cuda_launches import KernelText, kernel_texts, launches
from .figures import WARP_SIZE, ApplicationFigures, KernelFigures, application_figures
from .ptx import ptx_counts

FRAGMENT_ELEMENTS_PER_LANE = 8
"""A fragment's ``num_elements`` per lane, taken for the 16x16 (and 32x8,
8x32) float accumulators the generator's element loops walk: 256 / 32."""
_OPERAND_USES = ("matrix_a", "matrix_b")


def analyze_application(name: str, cuda_source: str, ptx_text: str | None = None) -> ApplicationFigures:
    return application_figures(name, analyze_cuda(cuda_source), None if ptx_text is None else ptx_counts(ptx_text))


def analyze_cuda(source: str) -> list[KernelFigures]:
    """The figures of every kernel in generated CUDA ``source``, in source order."""
    text = blank_comments(source)
    launched_by_name = launches(text)
    kernels = []
    for kernel in kernel_texts(source, text):
        launched = launched_by_name.get(kernel.name, [])
        notes = []
        block = kernel.declared_block or (launched[0][1] if launched else None)
        if block is None or any(extent is None for extent in block):
            notes.append("block size unknown: taken as dim3(32, 1, 1)")
            block = (WARP_SIZE, 1, 1)
        if not launched:
            notes.append("no launch found: counted as one block")
        elif kernel.declared_block and any(b != kernel.declared_block for _, b in launched):
            notes.append(f"launched with a block other than its comment's {kernel.declared_block}")
        known_block = (int(block[0] or 1), int(block[1] or 1), int(block[2] or 1))
        figures = KernelFigures(name=kernel.name, block=known_block, grids=[grid for grid, _ in launched],
                                notes=notes)
        _KernelWalker(figures, kernel).walk()
        kernels.append(figures)
    return kernels


# --- kernel bodies ---------------------------------------------------------------

@dataclass(frozen=True)
class FragmentType:
    use: str  # matrix_a, matrix_b or accumulator
    m: int
    n: int
    k: int
    element: str
    layout: str | None

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def footprint_bytes(self) -> int:
        """The bytes of the matrix it holds: M x K for A, K x N for B, M x N otherwise."""
        rows, columns = {"matrix_a": (self.m, self.k), "matrix_b": (self.k, self.n)}.get(self.use, (self.m, self.n))
        return rows * columns * ELEMENT_BYTES.get(self.element.split("::")[-1], 4)


@dataclass
class _Frame:
    kind: str  # "kernel", "scope", "loop" or "if"
    trips: tuple[int, ...]
    thread_executions: int
    warp_executions: int
    block_executions: int
    fragments: dict[str, FragmentType] = field(default_factory=dict)
    shared: dict[str, int] = field(default_factory=dict)
    # For an if: the threads its branches so far admitted (None: not evaluable).
    taken: tuple[bool, ...] | None = None
    parent_trips: tuple[int, ...] = ()


class _ThreadNames(Mapping[str, int]):
    """Names an expression may read for one thread: the CUDA index built-ins,
    the kernel's bindings of them (evaluated on demand) and default meanings
    for the generator's hb_thread / hb_lane / hb_warp."""

    def __init__(self, builtins: dict[str, int], defaults: dict[str, int],
                 bindings: dict[str, CExpression]) -> None:
        self.builtins, self.defaults, self.bindings = builtins, defaults, bindings
        self.cache: dict[str, int | None] = {}
        self.resolving: set[str] = set()

    def __getitem__(self, name: str) -> int:
        if name in self.builtins:
            return self.builtins[name]
        if name not in self.cache:
            self.cache[name] = self._resolve(name)
        value = self.cache[name]
        if value is None:
            raise KeyError(name)
        return value

    def _resolve(self, name: str) -> int | None:
        expression = self.bindings.get(name)
        if expression is None or name in self.resolving:
            return self.defaults.get(name)
        self.resolving.add(name)
        try:
            return evaluate(expression, self)
        finally:
            self.resolving.discard(name)

    def __iter__(self) -> Iterator[str]:
        return iter([*self.builtins, *self.bindings])

    def __len__(self) -> int:
        return len(self.builtins) + len(self.bindings)


_FOR_START = re.compile(r"^(?:[\w\s\*]*?\s)?(\w+)\s*=\s*(.+)$", re.S)
_CONDITION = re.compile(r"^(\w+)\s*(<=|<|!=)\s*(.+)$", re.S)
_NUM_ELEMENTS = re.compile(r"^\w+(?:\[\d+\])?\.num_elements$")
_DECLARATION = re.compile(
    r"^(?P<qualifiers>(?:(?:const|volatile|register|unsigned|signed)\s+)*)(?P<type>[A-Za-z_]\w*)"
    r"(?P<declarators>[\s*&]+(?:__restrict__\s+)?[A-Za-z_]\w*.*)$", re.S)
_ELEMENT_ACCESS = re.compile(r"(?<![\w&.])([A-Za-z_]\w*)\s*\[")
_BARRIER = re.compile(r"^(__syncthreads|__syncwarp)\s*\(.*\)$")
_WMMA_CALL = re.compile(r"^wmma::(\w+)\s*\((.*)\)$", re.S)
_FRAGMENT = re.compile(r"^wmma::fragment\s*<(.*?)>\s*(.*)$", re.S)
_SHARED = re.compile(r"^(?:extern\s+)?__shared__\s+(?:volatile\s+)?(.*?)\s*([A-Za-z_]\w*)\s*((?:\[[^\]]*\])*)$",
                     re.S)
_THREAD_DEPENDENT = re.compile(r"\b(?:threadIdx|blockIdx|blockDim|gridDim)\b")


class _KernelWalker:
    """Runs through one kernel body once, keeping per-thread execution counts."""

    def __init__(self, figures: KernelFigures, kernel: KernelText) -> None:
        self.figures = figures
        self.pieces = list(pieces(kernel.body, kernel.first_line))
        bx, by, bz = figures.block
        self.threads = bx * by * bz
        self.bindings: dict[str, CExpression] = {}
        self.declared: dict[str, str] = {}  # each initialized name's latest initializer
        uniform = {"blockDim_x": bx, "blockDim_y": by, "blockDim_z": bz, "warpSize": WARP_SIZE}
        self.uniform_names = _ThreadNames(uniform, {}, self.bindings)
        self.thread_names = [
            _ThreadNames(
                {**uniform, "threadIdx_x": t % bx, "threadIdx_y": t // bx % by, "threadIdx_z": t // (bx * by)},
                {"hb_thread": t, "hb_lane": t % WARP_SIZE, "hb_warp": t // WARP_SIZE},
                self.bindings)
            for t in range(self.threads)]
        self.frames = [self._frame("kernel", (1,) * self.threads)]
        self.region: dict[tuple[FragmentType, str, str], frozenset[str]] = {}
        self.closed_if: _Frame | None = None
        self.element_loops = 0
        self.shared_stored_elements = 0

    # frames

    def _frame(self, kind: str, trips: tuple[int, ...]) -> _Frame:
        warps = sum(max(trips[start:start + WARP_SIZE]) for start in range(0, len(trips), WARP_SIZE))
        return _Frame(kind, trips, sum(trips), warps, max(trips, default=0))

    @property
    def top(self) -> _Frame:
        return self.frames[-1]

    def _push(self, kind: str, trips: tuple[int, ...]) -> _Frame:
        frame = self._frame(kind, trips)
        frame.parent_trips = self.top.trips
        self.frames.append(frame)
        if kind != "scope":
            self.region.clear()
        return frame

    def _pop(self) -> _Frame:
        frame = self.frames.pop()
        if frame.kind != "scope":
            self.region.clear()
        return frame

    def _lookup_fragment(self, reference: str) -> FragmentType | None:
        name = base_identifier(reference)
        for frame in reversed(self.frames):
            if name in frame.fragments:
                return frame.fragments[name]
        return None

    def _shared_bytes(self, name: str | None) -> int | None:
        """The element size of shared buffer ``name``; None when it is not one."""
        for frame in reversed(self.frames):
            if name in frame.shared:
                return frame.shared[name]
        return None

    def _unparsed(self, piece: Piece, why: str) -> None:
        self.figures.unparsed.append(f"line {piece.line}: {why}: {piece.text[:100]}")

    # walking

    def walk(self) -> None:
        for index, piece in enumerate(self.pieces):
            if piece.kind == "open":
                self._open(piece)
            elif piece.kind == "close":
                self._close(piece)
            else:
                following = self.pieces[index + 1] if index + 1 < len(self.pieces) else None
                self._statement(piece, piece.text, following)
        if len(self.frames) != 1:
            self.figures.unparsed.append(f"{len(self.frames) - 1} blocks left open at the kernel's end")
        self._finish()

    def _finish(self) -> None:
        figures = self.figures
        global_stores = figures.fragment_stores - figures.shared_fragment_stores
        if global_stores:
            figures.output_fragments = global_stores
            figures.output_elements -= self.shared_stored_elements
        else:
            figures.output_fragments = figures.fragment_stores
        if self.element_loops:
            figures.notes.append(f"{self.element_loops} fragment element loops: num_elements taken as "
                                 f"{FRAGMENT_ELEMENTS_PER_LANE}")

    def _open(self, piece: Piece) -> None:
        header = piece.text
        closed_if, self.closed_if = self.closed_if, None
        if not header:
            self._push("scope", self.top.trips)
        elif re.match(r"for\s*\(", header):
            self._push("loop", self._loop_trips(header))
        elif re.match(r"if\s*\(", header):
            self._push_if(header, self.top.trips, None)
        elif re.match(r"else\b", header) and closed_if is not None:
            self._push_else(header[4:].strip(), closed_if)
        else:
            self._unparsed(piece, "block header not understood (its body counted once per entry)")
            if re.match(r"(?:while|do)\b", header):
                self.figures.symbolic_trips = True
            self._push("loop", self.top.trips)

    def _close(self, piece: Piece) -> None:
        if len(self.frames) == 1:
            self._unparsed(piece, "closing brace without an opening one")
            return
        frame = self._pop()
        self.closed_if = frame if frame.kind == "if" else None

    # conditions

    def _push_if(self, header: str, parent: tuple[int, ...], earlier: tuple[bool, ...] | None) -> None:
        """An ``if`` (or ``else if`` after branches that admitted ``earlier``)."""
        condition = header[header.index("(") + 1:header.rindex(")")]
        admitted = self._thread_mask(condition)
        if admitted is None:
            trips, taken = parent, None
        else:
            if earlier is not None:
                admitted = tuple(a and not e for a, e in zip(admitted, earlier))
            trips = tuple(trip if admit else 0 for trip, admit in zip(parent, admitted))
            taken = admitted if earlier is None else tuple(a or e for a, e in zip(admitted, earlier))
        frame = self._push("if", trips)
        frame.parent_trips, frame.taken = parent, taken

    def _push_else(self, rest: str, closed_if: _Frame) -> None:
        parent, earlier = closed_if.parent_trips, closed_if.taken
        if rest.startswith("if"):
            self._push_if(rest, parent, earlier)
            return
        trips = parent if earlier is None else tuple(0 if e else t for t, e in zip(parent, earlier))
        frame = self._push("if", trips)
        frame.parent_trips = parent

    def _thread_mask(self, condition: str) -> tuple[bool, ...] | None:
        """Which threads pass ``condition``, when every thread can evaluate it."""
        expression = compile_c_expression(condition)
        if expression is None:
            return None
        mask = []
        for names in self.thread_names:
            value = evaluate(expression, names)
            if value is None:
                return None
            mask.append(bool(value))
        return tuple(mask)

    # loops

    def _loop_trips(self, header: str) -> tuple[int, ...]:
        inside = header[header.index("(") + 1:header.rindex(")")]
        iterations = self._iterations(inside)
        if iterations is None:
            self.figures.symbolic_trips = True
            return self.top.trips
        return tuple(trip * count for trip, count in zip(self.top.trips, iterations))

    def _iterations(self, inside: str) -> list[int] | None:
        """Each thread's iterations of ``for (inside)``, or None when they are not constants."""
        parts = split_top_level(inside, ";")
        start_match = _FOR_START.match(parts[0]) if len(parts) == 3 else None
        condition = _CONDITION.match(parts[1]) if start_match else None
        if start_match is None or condition is None or condition.group(1) != start_match.group(1):
            return None
        variable, start_text = start_match.groups()
        operator, end_text = condition.group(2), condition.group(3).strip()
        step = self._step(variable, parts[2])
        if step is None or step <= 0:
            return None
        if _NUM_ELEMENTS.match(end_text):
            self.element_loops += 1
            end_text = f"({start_text}) + {FRAGMENT_ELEMENTS_PER_LANE}"
        start, end = self._constant(start_text), self._constant(end_text)
        if start is not None and end is not None:
            count = trip_count(start, end, step, operator)
            return None if count is None else [count] * self.threads
        extent = self._extent_after(end_text, start_text)
        if extent is not None and operator == "<":
            return [max(0, -(-extent // step))] * self.threads
        return None if end is None else self._thread_iterations(start_text, end, step, operator)

    def _thread_iterations(self, start_text: str, end: int, step: int, operator: str) -> list[int] | None:
        """A loop starting at the thread's index (a cooperative loop): each thread its share."""
        start = compile_c_expression(start_text)
        if start is None:
            return None
        counts = []
        for names in self.thread_names:
            first = evaluate(start, names)
            count = None if first is None else trip_count(first, end, step, operator)
            if count is None:
                return None
            counts.append(count)
        return counts

    def _step(self, variable: str, text: str) -> int | None:
        if re.fullmatch(rf"{variable}\s*\+\+|\+\+\s*{variable}", text):
            return 1
        match = re.fullmatch(rf"{variable}\s*(?:\+=|=\s*{variable}\s*\+)\s*(.+)", text, re.S)
        return self._constant(match.group(1)) if match else None

    def _extent_after(self, end_text: str, start_text: str) -> int | None:
        """B when the loop runs from V_lo to ``V_end = V_lo + B``, whatever V_lo is."""
        bound = self.declared.get(end_text)
        start = re.escape(start_text.strip())
        match = re.fullmatch(rf"\(*\s*{start}\s*\)*\s*\+\s*(.+)", bound.strip(), re.S) if bound else None
        return self._constant(match.group(1)) if match else None

    def _constant(self, text: str) -> int | None:
        """``text``'s value when it is the same for every thread: constants,
        block sizes and bindings of them, but no thread index."""
        expression = compile_c_expression(text)
        return None if expression is None else evaluate(expression, self.uniform_names)

    # statements

    def _statement(self, piece: Piece, text: str, following: Piece | None) -> None:
        text = text.replace("nvcuda::wmma::", "wmma::")
        headed = re.match(r"(for|if)\s*\(", text)
        declaration = _DECLARATION.match(text)
        if headed:
            self._headed_statement(piece, text, headed)
        elif text.startswith("wmma::"):
            self._wmma(piece, text)
        elif _BARRIER.match(text):
            self._barrier(text)
        elif re.fullmatch(r"\(void\)\s*\w+", text) or text.startswith("static "):
            return  # a use that silences a warning, or data initialized once, not per call
        elif re.match(r"(?:extern\s+)?__shared__\b", text):
            self._declare_shared(piece, text)
        elif declaration and is_type_name(declaration.group("type")):
            self._declaration(text, declaration, following)
        else:
            self._nontensor(text, assignment(text))

    def _headed_statement(self, piece: Piece, text: str, headed: re.Match[str]) -> None:
        """``for (...) body;`` or ``if (...) body;`` on one line, nested or not."""
        close = matching_bracket(text, headed.end() - 1)
        if close < 0:
            self._unparsed(piece, "unbalanced parentheses")
            return
        header, body = text[:close + 1], text[close + 1:].strip()
        if headed.group(1) == "for":
            self._push("loop", self._loop_trips(header))
        else:
            self._push_if(header, self.top.trips, None)
        self._statement(piece, body, None)
        self._pop()

    def _barrier(self, text: str) -> None:
        if text.startswith("__syncthreads"):
            self.figures.syncthreads += self.top.block_executions
        else:
            self.figures.syncwarps += self.top.warp_executions
        self.region.clear()

    def _declare_shared(self, piece: Piece, text: str) -> None:
        match = _SHARED.match(re.sub(r"__align__\s*\(\s*\d+\s*\)", " ", text))
        if not match:
            self._unparsed(piece, "shared declaration not understood")
            return
        element = " ".join(match.group(1).split())
        if element not in ELEMENT_BYTES:
            self.figures.notes.append(f"shared {match.group(2)}: element type {element!r} of unknown size")
        self.top.shared[match.group(2)] = ELEMENT_BYTES.get(element, 0)

    def _declaration(self, text: str, declaration: re.Match[str], following: Piece | None) -> None:
        declarators = [parse_declarator(part) for part in split_top_level(declaration.group("declarators"), ",")]
        initialized = [(name, init) for name, _, init in declarators if init is not None]
        constant = "const" in declaration.group("qualifiers")
        loop_bounds = bool(initialized) and following is not None and following.kind == "open" \
            and bounds_loop(initialized, following.text)
        for name, init in initialized:
            self._bind(name, init, evaluable=constant or loop_bounds)
        self._invalidate({name for name, _, _ in declarators})
        if not initialized or loop_bounds:
            return  # declares without running anything, or is part of the loop's header
        if self._is_shared_view(declaration.group("type"), declarators):
            return
        if constant and _THREAD_DEPENDENT.search(text):
            return  # binds an index of the thread or block
        self._nontensor(text, None)

    def _bind(self, name: str, init: str, evaluable: bool) -> None:
        """Remember ``name``'s value for loop bounds and thread conditions (only
        for constants and loop bounds: other variables may change later)."""
        self.declared[name] = init
        expression = compile_c_expression(init) if evaluable else None
        previous = self.bindings.pop(name, None)
        if expression is not None:
            self.bindings[name] = expression
        if previous is not None and (expression is None or expression.text != previous.text):
            for names in [self.uniform_names, *self.thread_names]:
                names.cache.clear()

    def _is_shared_view(self, element_type: str, declarators: list[tuple[str, bool, str | None]]) -> bool:
        """``T *NAME = NAME_warps[hb_warp];``: a warp's view of a shared buffer."""
        if len(declarators) != 1:
            return False
        name, pointer, init = declarators[0]
        viewed = self._shared_bytes(base_identifier(init)) if pointer and init is not None else None
        if viewed is None:
            return False
        self.top.shared[name] = ELEMENT_BYTES.get(element_type, viewed)
        return True

    def _nontensor(self, text: str, assignment: tuple[str, str, str] | None) -> None:
        """Count a statement of ordinary (lane-level) code and its shared-memory traffic."""
        frame, figures = self.top, self.figures
        figures.nontensor_executions += frame.warp_executions
        figures.nontensor_thread_executions += frame.thread_executions
        read_text = text
        if assignment is not None:
            target, operator, value = assignment
            element = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\[(.*)\]\s*", target, re.S)
            written = self._shared_bytes(element.group(1)) if element else None
            if element and written is not None:
                figures.shared_write_elements += frame.thread_executions
                figures.shared_write_bytes += frame.thread_executions * written
                # the target's index is read; the target itself only by a compound assignment
                read_text = f"{element.group(2)} {value}" if operator == "=" else text
            self._invalidate({base_identifier(target) or ""})
        elif text.startswith("memcpy"):
            self._invalidate({base_identifier(text[text.index("(") + 1:]) or ""})
        for access in _ELEMENT_ACCESS.finditer(read_text):
            read = self._shared_bytes(access.group(1))
            if read is not None:
                figures.shared_read_elements += frame.thread_executions
                figures.shared_read_bytes += frame.thread_executions * read

    def _invalidate(self, names: set[str]) -> None:
        """Forget loads whose address mentions a name just written."""
        for key in [key for key, mentioned in self.region.items() if mentioned & names]:
            del self.region[key]

    # wmma

    def _wmma(self, piece: Piece, text: str) -> None:
        fragment = _FRAGMENT.match(text)
        if fragment:
            self._declare_fragments(piece, fragment)
            return
        call = _WMMA_CALL.match(text)
        handler = {
            "mma_sync": self._mma, "load_matrix_sync": self._load, "store_matrix_sync": self._store,
            "fill_fragment": self._fill,
        }.get(call.group(1)) if call else None
        if call is None or handler is None:
            self._unparsed(piece, "wmma statement not understood")
            return
        handler(piece, split_top_level(call.group(2), ","))

    def _declare_fragments(self, piece: Piece, match: re.Match[str]) -> None:
        arguments = [argument.replace("wmma::", "") for argument in split_top_level(match.group(1), ",")]
        if len(arguments) < 5 or not all(argument.isdigit() for argument in arguments[1:4]):
            self._unparsed(piece, "fragment declaration not understood")
            return
        fragment = FragmentType(arguments[0], int(arguments[1]), int(arguments[2]), int(arguments[3]),
                                arguments[4], arguments[5] if len(arguments) > 5 else None)
        for declarator in split_top_level(match.group(2), ","):
            name = re.match(r"\s*(\w+)", declarator)
            if name:
                self.top.fragments[name.group(1)] = fragment

    def _fragment(self, piece: Piece, reference: str) -> FragmentType | None:
        fragment = self._lookup_fragment(reference)
        if fragment is None:
            self._unparsed(piece, f"fragment {reference!r} not declared")
        return fragment

    def _mma(self, piece: Piece, arguments: list[str]) -> None:
        # all four fragments of one mma share M, N and K: any declared one gives the shape
        known = [fragment for fragment in map(self._lookup_fragment, arguments) if fragment is not None]
        if not known:
            self._unparsed(piece, "mma_sync on undeclared fragments")
            return
        shape, warps, figures = known[0], self.top.warp_executions, self.figures
        figures.mma += warps
        figures.mma_macs += warps * shape.m * shape.n * shape.k
        figures.mma_by_shape[shape.shape] = figures.mma_by_shape.get(shape.shape, 0) + warps

    def _load(self, piece: Piece, arguments: list[str]) -> None:
        fragment = self._fragment(piece, arguments[0]) if len(arguments) >= 3 else None
        if fragment is None:
            return
        warps, figures = self.top.warp_executions, self.figures
        address, stride = without_spaces(arguments[1]), without_spaces(arguments[2])
        if self._shared_bytes(base_identifier(address)) is not None:
            figures.shared_fragment_loads += warps
            figures.shared_fragment_load_bytes += warps * fragment.footprint_bytes
        if fragment.use not in _OPERAND_USES:
            figures.accumulator_loads += warps
            return
        figures.operand_loads += warps
        key = (fragment, address, stride)
        if key not in self.region:
            figures.distinct_operand_loads += warps
            self.region[key] = frozenset(IDENTIFIER.findall(f"{address} {stride}"))

    def _store(self, piece: Piece, arguments: list[str]) -> None:
        fragment = self._fragment(piece, arguments[1]) if len(arguments) >= 3 else None
        if fragment is None:
            return
        warps, figures = self.top.warp_executions, self.figures
        elements = warps * fragment.m * fragment.n
        figures.fragment_stores += warps
        figures.output_elements += elements
        base = base_identifier(arguments[0])
        if self._shared_bytes(base) is not None:
            figures.shared_fragment_stores += warps
            figures.shared_fragment_store_bytes += warps * fragment.footprint_bytes
            self.shared_stored_elements += elements
        self._invalidate({base or ""})

    def _fill(self, piece: Piece, arguments: list[str]) -> None:
        self.figures.fragment_fills += self.top.warp_executions
