"""The exception SIGTERM becomes, in a module of its own: the ``hardboiled``
command installs the handler before anything else loads (cli/direct.py)."""


class Terminated(BaseException):
    """SIGTERM, raised in the main thread by the handler the ``hardboiled``
    command installs: it unwinds like an interrupt, so temporary files go
    and no output is half-written, and exits 143."""
