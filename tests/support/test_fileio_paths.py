"""support/fileio.py spells a target as pathlib does (it used Path until
the twelfth round): the file lands where it did, and a diagnostic names
it as it did."""

from __future__ import annotations

import random
from pathlib import Path, PurePosixPath

import pytest

from hardboiled.support.diagnostics import InputError
from hardboiled.support.fileio import pathlib_spelling, write_output


def test_a_path_is_spelled_as_pathlib_spells_it() -> None:
    rng = random.Random(11)
    parts = ["a", "b", "..", ".", "", "x.c", "-", " "]
    for _ in range(20000):
        path = "".join(rng.choice(["/", "", "//", "///"]) + rng.choice(parts) for _ in range(rng.randint(0, 6)))
        assert pathlib_spelling(path) == str(PurePosixPath(path)), path


def test_a_target_with_dots_and_slashes_lands_and_fails_as_with_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    write_output("./sub//./out.txt", "x")
    assert (tmp_path / "sub" / "out.txt").read_text() == "x"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["out.txt"]
    with pytest.raises(InputError) as error:
        write_output("./missing//out.txt", "x", follow_links=False)  # a name hardboiled chose: not resolved
    assert error.value.diagnostic.message.startswith("cannot write 'missing/out.txt': ")
    with pytest.raises(InputError) as error:
        write_output("./missing//out.txt", "x")  # the user's name: through links, resolved
    assert error.value.diagnostic.message.startswith(f"cannot write '{tmp_path.resolve()}/missing/out.txt': ")


def test_only_a_transaction_with_temporaries_is_kept_until_it_ends(tmp_path: Path) -> None:
    """``discard_unfinished`` needs the transactions that made temporary
    files; one abandoned before it staged any is not kept (a failed output
    directory left one behind per call, for the life of the process)."""
    from hardboiled.support import fileio

    before = set(fileio._unfinished)
    fileio.OutputTransaction()  # abandoned: nothing staged
    assert fileio._unfinished == before
    for end in ("commit", "discard"):
        transaction = fileio.OutputTransaction()
        transaction.add(str(tmp_path / f"{end}.txt"), "x")
        assert transaction in fileio._unfinished
        getattr(transaction, end)()
        assert fileio._unfinished == before
    assert (tmp_path / "commit.txt").exists() and not (tmp_path / "discard.txt").exists()
