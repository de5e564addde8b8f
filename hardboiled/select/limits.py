"""The egglog child's default limits, in a module that imports nothing:
the command starts its spare child at them (select/spare.py) before it
loads anything heavier."""

DEFAULT_TIMEOUT_S = 60.0
"""Wall-clock limit of the egglog child process."""
DEFAULT_MEMORY_MB = 4096
"""Address-space limit of the egglog child process."""
