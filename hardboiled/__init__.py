"""hardboiled: a tensor instruction selector for Halide IR."""

__version__ = "0.1.0"
