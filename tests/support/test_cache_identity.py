"""A cache remembers hardboiled's code identity by its code signature
(support/cache.py, ``ResultCache.code_identity``): the same identity as
hashing the code, served without hashing it again, and worked out afresh
when the code changes or the remembered entry is damaged."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hardboiled.support import cache, identity


@pytest.fixture
def rules_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Code of our own (HARDBOILED_RULES_DIR counts as code), and no identity worked out yet."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "extra.egg").write_text(";; one\n")
    monkeypatch.setenv("HARDBOILED_RULES_DIR", str(rules))
    # every file counts as settled, however new (this checkout's may be)
    monkeypatch.setattr(cache, "SETTLED_S", -3600.0)
    _forget_everything()
    yield rules
    _forget_everything()


def _forget_everything() -> None:
    identity.forget()
    cache._IDENTITIES.clear()


def test_the_remembered_identity_is_the_hashed_one_and_is_served_without_hashing(
        rules_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = cache.ResultCache(tmp_path / "cache")
    hashed = identity.code_identity()
    assert store.code_identity() == hashed
    _forget_everything()  # as a new process would start

    def no_hashing() -> str:
        raise AssertionError("the code was hashed again")

    monkeypatch.setattr(cache, "code_identity", no_hashing)
    assert cache.ResultCache(tmp_path / "cache").code_identity() == hashed
    assert cache.cache_key(["x"], [], store) == cache.cache_key(["x"], [], cache.ResultCache(tmp_path / "cache"))


def test_changed_code_gets_its_own_identity(rules_dir: Path, tmp_path: Path) -> None:
    store = cache.ResultCache(tmp_path / "cache")
    before = store.code_identity()
    key_before = cache.cache_key(["x"], [], store)
    (rules_dir / "extra.egg").write_text(";; two, longer\n")
    _forget_everything()
    after = cache.ResultCache(tmp_path / "cache").code_identity()
    assert after != before and after == identity.code_identity()
    assert cache.cache_key(["x"], [], store) != key_before


def test_a_damaged_entry_is_worked_out_again(rules_dir: Path, tmp_path: Path) -> None:
    store = cache.ResultCache(tmp_path / "cache")
    hashed = store.code_identity()
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 1
    entries[0].write_text('{"key": "x", "value": {"identity": "forged"}, "checksum": "0"}')
    os.chmod(entries[0], 0o600)
    _forget_everything()
    assert cache.ResultCache(tmp_path / "cache").code_identity() == hashed


def test_code_changed_a_moment_ago_is_hashed_every_time(rules_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit within the same tick of the clock as the one before may keep
    the file's size and time: code that new is not remembered."""
    monkeypatch.setattr(cache, "SETTLED_S", 2.0)
    (rules_dir / "extra.egg").write_text(";; now\n")
    store = cache.ResultCache(tmp_path / "cache")
    assert store.code_identity() == identity.code_identity()
    assert not list((tmp_path / "cache").rglob("*.json"))
    (rules_dir / "extra.egg").write_text(";; won\n")  # the same size, maybe the same time
    _forget_everything()
    assert cache.ResultCache(tmp_path / "cache").code_identity() == identity.code_identity()
