"""Instruction selection: tile extraction (``extract``), the egglog term
schema (``terms``), the rule files and schedule (``rules``), equality
saturation in a child process (``eqsat``, the only module that talks to
egglog), decoding and reinsertion (``reinsert``) and miss explanations
(``explain``).

Kept free of imports: the egglog child process starts from
``hardboiled.select.eqsat`` and must load nothing else.
"""
