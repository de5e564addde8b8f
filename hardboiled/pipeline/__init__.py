"""The compile pipeline, below both front doors (the command line and the
Python API): grouped options (``options.py``), one input's state
(``compilation.py``), the named passes (``passes.py``) and their driver
with its instrumentation (``runner.py``), compiling inputs and batches with
the whole-file cache (``driver.py``), and the JSON and HTML reports.

Nothing is imported here: the command line answers a cache hit from
``options.py`` and ``driver.py`` without loading the passes."""
