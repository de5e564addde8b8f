"""Verification that proves nothing says so (exit 7), and verification on
the data a pipeline really sees (--input), from the command line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ..conftest import ROOT, run_cli

sys.path.insert(0, str(ROOT))
from apps.dct_denoise import verification_inputs  # noqa: E402

APPS = ROOT / "tests" / "fixtures" / "apps"
DCT_DENOISE = [str(APPS / "dct_denoise.stmt"), *[a for acc in ("dct_rows", "dct_cols", "idct_rows", "idct_cols")
                                                 for a in ("--store-in", f"{acc}=WMMAAccumulator")]]


@pytest.mark.slow
def test_a_recursion_s_unbounded_elements_are_exit_7_until_accepted(tmp_path: Path) -> None:
    """The recursive filter's worst-case bound grows geometrically: no
    element differs, but where the bound passes the output's range the
    comparison proves nothing. That is exit 7, named, and nothing is
    written; --accept-unproven makes it success, saying so."""
    args = [str(APPS / "rec_filter.stmt"), "--store-in", "convolved=WMMAAccumulator", "--verify", "--no-cache"]
    refused = run_cli("compile", *args, "-o", str(tmp_path / "out.stmt"))
    assert refused.returncode == 7, refused.stderr.decode()
    stderr = refused.stderr.decode()
    assert "verification proves nothing about" in stderr and "--accept-unproven" in stderr
    assert not (tmp_path / "out.stmt").exists()
    accepted = run_cli("compile", *args, "--accept-unproven", "-o", str(tmp_path / "out.stmt"))
    assert accepted.returncode == 0, accepted.stderr.decode()
    assert "unproven elements accepted" in accepted.stderr.decode()
    assert (tmp_path / "out.stmt").exists()


@pytest.mark.slow
def test_inputs_from_files_replace_random_data(tmp_path: Path) -> None:
    """DCT denoise on random matrices: values in the hundreds, whose float16
    rounding dwarfs the output; on the real DCT and an image in [0, 1] the
    programs differ by float16 steps. The arrays are numpy-ordered files."""
    flags = []
    for name, array in verification_inputs(tiles=2).items():
        np.save(tmp_path / f"{name}.npy", array)
        flags += ["--input", f"{name}={tmp_path / name}.npy"]
    random = run_cli("compile", *DCT_DENOISE, "--verify", "--accept-unproven", "--no-cache")
    real = run_cli("compile", *DCT_DENOISE, "--verify", "--accept-unproven", "--no-cache", *flags)
    assert random.returncode == real.returncode == 0, real.stderr.decode()

    def max_abs_error(text: bytes) -> float:
        return float(text.decode().split("max abs error ")[1].split(",")[0])

    assert max_abs_error(real.stderr) < 0.01 < max_abs_error(random.stderr) * 10


@pytest.mark.parametrize(("flag", "message"), [
    ("nobody=x.npy", "the program has no input buffer 'nobody'"),
    ("DCT=missing.npy", "cannot read"),
    ("DCT=bad.npy", "is not a numpy array file"),
    ("DCT=vector.npy", "1 dimensions, but 'DCT' has 2"),
    ("DCT=ints.npy", "int64 elements for a buffer of float16"),
])
def test_a_wrong_input_file_is_an_input_error(tmp_path: Path, flag: str, message: str) -> None:
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    np.save(tmp_path / "vector.npy", np.zeros(16, np.float16))
    np.save(tmp_path / "ints.npy", np.zeros((16, 16), np.int64))
    np.save(tmp_path / "x.npy", np.zeros((16, 16), np.float16))
    result = run_cli("compile", *DCT_DENOISE, "--verify", "--no-cache", "--input", flag, cwd=tmp_path)
    assert result.returncode == 2, result.stderr.decode()
    assert message in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()


def test_input_without_verification_is_a_usage_error() -> None:
    result = run_cli("compile", *DCT_DENOISE, "--input", "DCT=x.npy")
    assert result.returncode == 2 and "without them they do nothing" in result.stderr.decode()
