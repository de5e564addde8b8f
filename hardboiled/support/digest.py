"""Digests without loading OpenSSL: SHA-256, and BLAKE2b for hardboiled's code and for what the caches key on.

``hashlib`` loads its OpenSSL module when it is imported (3 ms, a quarter
of what a process start costs here), and the ``hardboiled`` command's
direct answer (cli/direct.py) hashes its key and its inputs before
anything else loads. CPython's own SHA-256 (``_sha256``; ``_sha2`` from
Python 3.12) gives the same digests, more slowly on large data (a 500 KB
input: 1.5 ms, against 0.3 ms through OpenSSL), which a few files bear.
Where neither is built in, ``hashlib``'s is used. Hardboiled's own code,
which every cache lookup hashes, goes through BLAKE2b (``new_code_digest``),
also built in and faster than either SHA-256 without OpenSSL's load; so do
the inputs a cache key or a direct-mode record names, and the records'
checksums (``hex_content_digest``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from hashlib import sha256
    from typing import Any
else:
    try:
        from _sha256 import sha256
    except ImportError:
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256


OPENSSL_FROM_BYTES = 1 << 20
"""From this size on, loading ``hashlib`` (2 to 3 ms) costs less than
CPython's slower SHA-256 (3 ms a megabyte, against 0.6 through OpenSSL)."""


def hex_digest(data: bytes) -> str:
    """The SHA-256 of ``data``, in hexadecimal: through OpenSSL where
    something has loaded ``hashlib`` already, or the data is large."""
    loaded = sys.modules.get("hashlib")
    if loaded is None and len(data) >= OPENSSL_FROM_BYTES:
        import hashlib as loaded
    return (loaded.sha256 if loaded is not None else sha256)(data).hexdigest()


def new_sha256() -> Any:
    """A SHA-256 to feed with ``update``: OpenSSL's where ``hashlib`` is loaded."""
    loaded = sys.modules.get("hashlib")
    return loaded.sha256() if loaded is not None else sha256()


def new_code_digest() -> Any:
    """A digest to feed with hardboiled's own code (1.5 MB, on every cache
    lookup): BLAKE2b, built into CPython (``_blake2``: 0.2 ms to load, 1.7 ms
    for the code, against 2.5 to 3.5 ms to load OpenSSL's SHA-256 and 1 ms to
    run it); ``new_sha256``'s where it is not built in. The digest goes into
    the cache keys (support/cache.py), where only its equality matters."""
    blake2b = _built_in_blake2b()
    return blake2b() if blake2b is not None else new_sha256()


def hex_content_digest(data: bytes) -> str:
    """A digest of ``data`` in hexadecimal, where only its equality matters
    (the inputs the whole-file cache keys on, direct mode's keys, records
    and the files they read): BLAKE2b of 32 bytes, built into CPython (a
    500 KB input in 0.6 ms, against 1.5 ms through its SHA-256 and 3 ms to
    load OpenSSL's); ``hex_digest``'s SHA-256 where it is not built in."""
    blake2b = _built_in_blake2b()
    return blake2b(data, digest_size=32).hexdigest() if blake2b is not None else hex_digest(data)


def _built_in_blake2b() -> Any:
    """CPython's own BLAKE2b (``_blake2``, loaded on first use), or None
    where this Python was built without it."""
    try:
        from _blake2 import blake2b
    except ImportError:
        return None
    return blake2b
