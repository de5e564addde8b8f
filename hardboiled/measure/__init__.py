"""Static measures of generated code: the work a kernel does, counted
without the hardware that runs it.

* ``kernel_work``: what a Tensor-Core kernel executes per thread block,
  read from the IR the CUDA generator prints (Tensor-Core operations,
  fragment loads, barriers, shared-memory traffic);
* ``cuda_source`` (with ``c_syntax``, ``cuda_launches``): the same figures
  read from the generated CUDA text, plus how busy the lanes of a warp are
  in the code around the Tensor-Core calls (a figure of the C the
  generator writes); it also reads older checkouts' output, so it uses the
  standard library only;
* ``figures``: the counts both readers fill;
* ``ptx``: instruction counts of the PTX nvcc makes;
* ``tile_counts``: AMX tile operations per call, and the operand copying
  the rewritten IR does.

Nothing here verifies anything: verification is hardboiled/verify/."""
