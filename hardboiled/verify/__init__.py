"""Translation validation: the reference interpreter (``interp``, over the
values of ``values`` and the Halide calls of ``calls``), random
inputs and the comparison (``compare``, ``error_bound``), and running
generated code (``run``). What generated code costs is measured by
hardboiled/measure/, which knows nothing of verification."""

import os

# numpy's OpenBLAS starts a pool with a buffer per core as it loads. The
# interpreter's only products are single fragments (16x16), for which one
# thread is right; and under an address-space limit (ulimit -v) that pool's
# buffers are what fails, with an exit(1) inside OpenBLAS that no Python
# exception reports. Set before any module of this package imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
