"""Text to IR: the lexer, the parser (grammar in grammars/halide_ir.lark) and
picking one stage out of an HL_DEBUG_CODEGEN log."""
