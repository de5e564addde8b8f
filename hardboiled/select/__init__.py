"""Instruction selection: tile extraction (``extract``), the egglog term
schema (``terms``), the rule files and schedule (``rules``), equality
saturation in a child process (``eqsat``, the only module that talks to
egglog, and ``eqsat_child``, the child's half), decoding and reinsertion (``reinsert``) and miss explanations
(``explain``).

Kept free of imports: the egglog child process starts from
``hardboiled.select.eqsat_child`` and must load nothing else.
"""
