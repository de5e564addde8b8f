"""Legalization: passes that make selected IR executable, one per module,
each establishing the invariant its docstring states."""
