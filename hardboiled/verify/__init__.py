"""Translation validation: the reference interpreter (``interp``, over the
values of ``values`` and the Halide calls of ``calls``), random
inputs and the comparison (``compare``, ``error_bound``), and running
generated code (``run``). What generated code costs is measured by
hardboiled/measure/, which knows nothing of verification."""

from hardboiled.support.environment import load_numpy

# Before any module of this package imports numpy (support/environment.py).
load_numpy()
