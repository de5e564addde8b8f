"""The functions a generated source defines, and the header that declares
them (hardboiled/codegen/abi.py is the ABI itself):

* ``NAME_raw``: the generated body, on bare pointers and each dimension's
  min, extent and stride, refusing before anything runs a buffer past
  int32 index arithmetic;
* ``NAME``: Halide's AOT calling convention over it, checking what the
  dump takes for granted about each ``halide_buffer_t`` (type, dimensions,
  where its data is) and turning a failed check of the pipeline into the
  ``halide_error_code_t`` Halide's runtime would return.

``EntryPoints`` is the part of the C-family emitter (codegen/c_family.py)
that writes them: it reads the emitter's function name, arguments, names
and assertion codes."""

from __future__ import annotations

import re
from string import Template

from hardboiled.codegen.abi import (
    HALIDE_BUFFER_FLAGS,
    HALIDE_ERROR_CODES,
    HALIDE_TYPE_CODES,
    RAW_FAILURES,
    RAW_STATUS,
    KernelArgument,
    halide_error_code,
    raw_entry_point,
)
from hardboiled.codegen.c_text import GENERATED_BANNER, c_type, storage_type

HALIDE_BUFFER_LAYOUT = r"""/* halide_buffer_t: from Halide's HalideRuntime.h where the compiler finds it
   (-I into the halide package), otherwise the part this file uses, declared
   with the same layout. */
#if defined(__has_include)
#if __has_include("HalideRuntime.h")
#include "HalideRuntime.h"
#endif
#endif
#ifndef HALIDE_HALIDERUNTIME_H
struct halide_type_t { uint8_t code; uint8_t bits; uint16_t lanes; };
typedef struct halide_dimension_t { int32_t min, extent, stride; uint32_t flags; } halide_dimension_t;
struct halide_device_interface_t;
typedef struct halide_buffer_t {
  uint64_t device;
  const struct halide_device_interface_t *device_interface;
  uint8_t *host;
  uint64_t flags;
  struct halide_type_t type;
  int32_t dimensions;
  halide_dimension_t *dim;
  void *padding;
} halide_buffer_t;
#endif
"""
"""What the halide_buffer_t entry point needs of HalideRuntime.h."""

_CHECK_HALIDE_BUFFER = Template(r"""/* What the pipeline takes for granted about a halide_buffer_t argument. A null
   host (or device) pointer would be a bounds query, which this code does not answer. */
static int hb_check_halide_buffer(const struct halide_buffer_t *b, uint8_t code, uint8_t bits,
                                  int32_t dimensions, int on_device) {
  if (b == NULL) return $buffer_argument_is_null;
  if (b->type.code != code || b->type.bits != bits || b->type.lanes != 1) return $bad_type;
  if (b->dimensions != dimensions || (dimensions > 0 && b->dim == NULL)) return $bad_dimensions;
  if (on_device) {
    if (b->device == 0) return $on_device_error;
    if (b->flags & ${host_dirty}u) return $stale_error; /* newer data on the host: copy it to the device first */
  } else {
    if (b->host == NULL) return $host_is_null;
    if (b->flags & ${device_dirty}u) return $device_dirty_with_no_device_support;
  }
  return 0;
}
""")


class EntryPoints:
    """The entry points and the header of a generated function."""

    function: str
    arguments: list[KernelArgument]
    assertion_codes: list[int]
    """The halide_error_code_t of each assertion, in order (-N is the N-th)."""

    def cname(self, name: str) -> str:
        raise NotImplementedError  # the emitter's

    def emit(self, text: str) -> None:
        raise NotImplementedError  # the emitter's

    def param(self, buffer: str) -> str:
        """The C parameter holding a pipeline buffer's host pointer."""
        return self.cname(f"{buffer}.host pointer")

    def argument_name(self, arg: KernelArgument) -> str:
        """NAME_raw's parameter for an argument: a buffer's pointer, or a
        scalar param under the name the body reads it by."""
        return self.cname(arg.buffer) if arg.scalar else self.param(arg.buffer)

    def refuse_buffers_too_large(self) -> None:
        """Before anything runs: every buffer argument within int32 index
        arithmetic (``hb_buffer_too_large``), as Halide's own checks keep
        it; a dump need not carry those checks, and a caller of NAME_raw
        may pass anything."""
        for arg in self.arguments:
            name = self.param(arg.buffer)
            if not arg.dimensions:
                continue
            fields = ", ".join(f"{name}_{f}{d}" for d in range(arg.dimensions) for f in ("min", "extent", "stride"))
            self.emit(f"{{ const int32_t dims[] = {{{fields}}}; int too_large = hb_buffer_too_large("
                      f"{arg.dimensions}, dims); if (too_large) return too_large == 2 ? "
                      f"{RAW_STATUS['buffer_extents_negative']} : {RAW_STATUS['buffer_extents_too_large']}; }}")

    def raw_parameters(self) -> list[str]:
        """NAME_raw's parameters: each buffer's pointer, then the min,
        extent and stride of each of its dimensions, then the backend's
        own parameters."""
        params = []
        for arg in self.arguments:
            if arg.scalar:
                params.append(f"{c_type(arg.type)} {self.argument_name(arg)}")
                continue
            name = self.param(arg.buffer)
            params.append(f"{storage_type(arg.type)} *{name}")
            for d in range(arg.dimensions):
                params.extend(f"int32_t {name}_{f}{d}" for f in ("min", "extent", "stride"))
        return params + self.extra_parameters()

    def raw_declaration(self) -> str:
        """``int NAME_raw(...)``."""
        return f"int {raw_entry_point(self.function)}({', '.join(self.raw_parameters())})"

    def buffer_declaration(self) -> str:
        """``int NAME(struct halide_buffer_t *X, ...)``: Halide's AOT
        calling convention."""
        params = [f"{c_type(arg.type)} {self.wrapper_param(arg)}" if arg.scalar else
                  f"struct halide_buffer_t *{self.wrapper_param(arg)}" for arg in self.arguments]
        return f"int {self.function}({', '.join(params)})"

    @staticmethod
    def buffer_param(buffer: str) -> str:
        """A halide_buffer_t parameter's name (the wrapper has no other
        names to clash with)."""
        return "b_" + re.sub(r"[^A-Za-z0-9_]", "_", buffer)

    @staticmethod
    def wrapper_param(arg: KernelArgument) -> str:
        """The halide_buffer_t entry point's parameter for an argument:
        b_NAME for a buffer, p_NAME for a scalar param."""
        return ("p_" if arg.scalar else "b_") + re.sub(r"[^A-Za-z0-9_]", "_", arg.buffer)

    def halide_entry_point(self) -> str:
        """The halide_buffer_t entry point: checks what the dump takes for
        granted about each buffer (type, dimensions, where its data is),
        calls NAME_raw, and turns a failed check of the pipeline into the
        halide_error_code_t Halide's runtime would return."""
        on_device = int(self.buffers_on_device)
        lines = [HALIDE_BUFFER_LAYOUT, _CHECK_HALIDE_BUFFER.substitute(HALIDE_ERROR_CODES, **{
            "on_device_error": HALIDE_ERROR_CODES["device_interface_no_device"],
            "stale_error": HALIDE_ERROR_CODES["host_and_device_dirty"],
            "host_dirty": HALIDE_BUFFER_FLAGS["host_dirty"], "device_dirty": HALIDE_BUFFER_FLAGS["device_dirty"]})]
        if self.assertion_codes:
            codes = ", ".join(str(code) for code in self.assertion_codes)
            lines.append("/* The halide_error_code_t of each of the pipeline's checks, in order. */")
            lines.append(f"static const int hb_check_errors[{len(self.assertion_codes)}] = {{{codes}}};")
        lines.append("")
        lines.append(f"{self.linkage}{self.buffer_declaration()} {{")
        lines.append("  int status;")
        for arg in self.arguments:
            if arg.scalar:
                continue
            name = self.buffer_param(arg.buffer)
            lines.append(f"  if ((status = hb_check_halide_buffer({name}, {HALIDE_TYPE_CODES[arg.type.code]}, "
                         f"{arg.type.bits}, {arg.dimensions}, {on_device})) != 0) return status;")
        call = []
        for arg in self.arguments:
            if arg.scalar:
                call.append(self.wrapper_param(arg))
                continue
            name = self.buffer_param(arg.buffer)
            data = f"(uintptr_t){name}->device" if self.buffers_on_device else f"{name}->host"
            call.append(f"({storage_type(arg.type)} *){data}")
            call.extend(f"{name}->dim[{d}].{f}" for d in range(arg.dimensions) for f in ("min", "extent", "stride"))
        call.extend(self.default_extra_arguments())
        lines.append(f"  status = {raw_entry_point(self.function)}({', '.join(call)});")
        if self.assertion_codes:
            lines.append(f"  if (status < 0 && status >= -{len(self.assertion_codes)}) "
                         "return hb_check_errors[-status - 1];")
        for status, error in RAW_FAILURES.items():
            lines.append(f"  if (status == {status}) return {halide_error_code(error)}; /* {error} */")
        lines.append("  if (status != 0) return status;")
        written, stale = ("device_dirty", "host_dirty") if self.buffers_on_device else ("host_dirty", "device_dirty")
        for arg in self.arguments:
            if arg.output:
                name = self.buffer_param(arg.buffer)
                lines.append(f"  {name}->flags = ({name}->flags | {HALIDE_BUFFER_FLAGS[written]}u) "
                             f"& ~(uint64_t){HALIDE_BUFFER_FLAGS[stale]}u; /* {written.replace('_', ' ')} */")
        lines += ["  return 0;", "}", ""]
        return "\n".join(lines)

    def header(self) -> str:
        """A header declaring the generated functions, for the code that
        calls them (C or C++), each argument described in a comment."""
        for arg in self.arguments:
            self.argument_name(arg)  # the same parameter names as the source
        guard = f"HB_{self.function.upper()}_H"
        where = "device memory (buffer->device)" if self.buffers_on_device else "host memory (buffer->host)"
        lines = [GENERATED_BANNER, f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>",
                 *self.header_includes(), "", "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
                 "struct halide_buffer_t; /* HalideRuntime.h */", "",
                 f"/* {self.function}: Halide's AOT calling convention. Returns 0, or a halide_error_code_t: a",
                 " * buffer of the wrong type or dimensions, a null buffer or one whose data is not in",
                 f" * {where}, or a failed check of the pipeline (extents, strides, sizes).",
                 f" * Buffers{' (the default stream)' if self.buffers_on_device else ''}, in order:"]
        for arg in self.arguments:
            role = "output" if arg.output else "input"
            if arg.scalar:
                lines.append(f" *   {self.wrapper_param(arg)}: the param {arg.buffer}, {arg.type}")
                continue
            lines.append(f" *   {self.buffer_param(arg.buffer)}: {arg.buffer}, {role}, {arg.type}, {arg.dimensions} "
                         f"dimension{'s' if arg.dimensions != 1 else ''}")
        lines += [" */", f"{self.buffer_declaration()};", "",
                  f"/* {raw_entry_point(self.function)}: the same pipeline on bare pointers. Returns 0, or -N when",
                  " * its N-th check fails (in the order of the source), "
                  + ", ".join(f"{status} ({error.replace('_', ' ')})" for status, error in RAW_FAILURES.items())
                  + ". Arguments, in order:"]
        for arg in self.arguments:
            role = "output" if arg.output else "input"
            if arg.scalar:
                lines.append(f" *   {self.argument_name(arg)}: the param {arg.buffer}, {arg.type}")
                continue
            lines.append(f" *   {self.param(arg.buffer)}: {arg.buffer}, {role}, {arg.type} elements "
                         f"({storage_type(arg.type)} in memory), {arg.dimensions} dimension"
                         f"{'s' if arg.dimensions != 1 else ''}; then min, extent, stride of each")
        lines += [f" *   {line}" for line in self.extra_parameter_notes()]
        lines += [" */", f"{self.raw_declaration()};", "", "#ifdef __cplusplus", "}", "#endif", "",
                  f"#endif /* {guard} */", ""]
        return "\n".join(lines)

    def header_includes(self) -> list[str]:
        """Headers the declaration needs besides <stdint.h>."""
        return []

    def extra_parameter_notes(self) -> list[str]:
        """What each of ``extra_parameters`` means, for the header."""
        return []

    # ------------------------------------------------------------ the backend's
    linkage = ""
    """Written before the function's return type (``extern "C" `` in C++)."""
    buffers_on_device = False
    """Whether the kernel takes device pointers (buffer->device) rather
    than host ones (buffer->host)."""

    def extra_parameters(self) -> list[str]:
        """Parameters after the buffers' (the CUDA wrapper's stream)."""
        return []

    def default_extra_arguments(self) -> list[str]:
        """What the halide_buffer_t entry point passes for them."""
        return []
