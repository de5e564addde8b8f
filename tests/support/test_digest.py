"""support/digest.py: SHA-256 without loading OpenSSL gives hashlib's
digests, in a process that has not loaded hashlib and in one that has."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys

from hardboiled.support.digest import hex_digest


def test_the_digest_is_hashlibs_once_hashlib_is_loaded() -> None:
    rng = random.Random(5)
    for size in (0, 1, 55, 56, 63, 64, 65, 1000, 1 << 16, 484603):
        data = rng.randbytes(size)
        assert hex_digest(data) == hashlib.sha256(data).hexdigest()


def test_without_hashlib_the_digest_is_the_same_and_hashlib_stays_unloaded() -> None:
    probe = ("import random, sys\n"
             "from hardboiled.support.digest import hex_digest\n"
             "rng = random.Random(5)\n"
             "print(' '.join(hex_digest(rng.randbytes(n)) for n in (0, 64, 65, 484603)))\n"
             "print('hashlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")
    rng = random.Random(5)
    assert out[0].split() == [hashlib.sha256(rng.randbytes(n)).hexdigest() for n in (0, 64, 65, 484603)]
    assert out[1] == "False"


def test_large_data_goes_through_openssl_and_an_incremental_digest_is_the_same() -> None:
    from hardboiled.support.digest import OPENSSL_FROM_BYTES, new_sha256

    probe = ("import sys\n"
             "from hardboiled.support.digest import OPENSSL_FROM_BYTES, hex_digest, new_sha256\n"
             "small = new_sha256(); small.update(b'ab'); small.update(b'c')\n"
             "print(small.hexdigest(), 'hashlib' in sys.modules)\n"
             "print(hex_digest(bytes(OPENSSL_FROM_BYTES)), 'hashlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == f"{hashlib.sha256(b'abc').hexdigest()} False"
    assert out[1] == f"{hashlib.sha256(bytes(OPENSSL_FROM_BYTES)).hexdigest()} True"
    digest = new_sha256()
    digest.update(b"abc")
    assert digest.hexdigest() == hashlib.sha256(b"abc").hexdigest()
