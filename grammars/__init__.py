"""The Lark grammar of Halide's IR text (shipped as package data)."""
