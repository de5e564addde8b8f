"""Translation validation: the reference interpreter (``interp``), random
inputs and the comparison (``compare``, ``error_bound``), and running
generated code (``run``); and what generated code costs, measured without
the accelerator: AMX tile operations counted under the emulation
(``tile_counts``), Tensor Core figures read from the generated CUDA and its
PTX (``wmma_figures``)."""
