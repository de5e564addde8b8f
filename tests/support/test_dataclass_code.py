"""The kept code of hardboiled's dataclass methods (support/dataclass_code.py)."""

from __future__ import annotations

import dataclasses
import marshal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from hardboiled.support import dataclass_code

from ..conftest import ROOT


def _class_in(module_name: str, source: str) -> type:
    """A dataclass defined by ``source`` in a fresh module of that name."""
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    try:
        exec(compile(source, f"<{module_name}>", "exec"), module.__dict__)
    finally:
        del sys.modules[module_name]
    return module.Record


RECORD = """
from dataclasses import dataclass, field

@dataclass(frozen=True, slots=True)
class Record:
    name: str
    sizes: tuple[int, ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)
"""


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private file and a fresh process state: nothing read yet, nothing seen."""
    path = tmp_path / "code.marshal"
    monkeypatch.setattr(dataclass_code, "PATH", str(path))
    monkeypatch.setattr(dataclass_code, "_known", None)
    monkeypatch.setattr(dataclass_code, "seen", {})
    return path


def test_the_package_serves_dataclasses_exec() -> None:
    assert dataclasses.exec is dataclass_code._exec  # type: ignore[attr-defined]


def test_dataclasses_compiles_its_methods_with_no_future_flags() -> None:
    """The served code is compiled without inheriting any flag, which is
    only the same as dataclasses' own ``exec`` if its module has none."""
    import __future__

    flags = 0
    for feature in __future__.all_feature_names:
        flags |= getattr(__future__, feature).compiler_flag
    assert dataclasses._process_class.__code__.co_flags & flags == 0  # type: ignore[attr-defined]


def test_a_kept_class_behaves_and_compiles_as_dataclasses_would(kept: Path) -> None:
    made = _class_in("hardboiled.kept_probe", RECORD)
    texts = dict(dataclass_code.seen)
    assert len(texts) >= 5  # __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__
    for text, code in texts.items():
        assert code == compile(text, "<string>", "exec", dont_inherit=True)
    assert dataclass_code.write() == len(texts)

    dataclass_code._known, dataclass_code.seen = None, {}
    served = _class_in("hardboiled.kept_probe", RECORD)
    assert dataclass_code._known is not None and set(dataclass_code._known) == set(texts)
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        assert getattr(served, name).__code__ == getattr(made, name).__code__, name
    record = served("a", (1, 2))
    assert repr(record) == "Record(name='a', sizes=(1, 2), tags=frozenset())"
    assert record == served("a", (1, 2)) and hash(record) == hash(served("a", (1, 2)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.name = "b"


def test_classes_of_other_modules_are_compiled_as_usual(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not kept, and compiled as dataclasses compiles them: not with the
    flags of the module that serves exec (its ``from __future__ import
    annotations`` made every annotation a string)."""
    import typing

    served = _class_in("someone_else", RECORD)
    assert dataclass_code.seen == {} and dataclass_code._known is None
    assert served("a").tags == frozenset()
    monkeypatch.delattr(dataclasses, "exec")
    plain = _class_in("someone_else", RECORD)
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        assert getattr(served, name).__code__ == getattr(plain, name).__code__, name
    assert served.__init__.__annotations__ == plain.__init__.__annotations__
    assert typing.get_type_hints(served.__init__)["sizes"] == tuple[int, ...]


@pytest.mark.parametrize("content", [b"", b"garbage", b"hardboiled dataclass code 1\nPython 2.7\n\xe3",
                                     "truncated"])
def test_a_file_from_another_build_or_damaged_is_ignored(kept: Path, content: bytes | str) -> None:
    if content == "truncated":
        _class_in("hardboiled.kept_probe", RECORD)
        dataclass_code.write()
        content = kept.read_bytes()[:-40]
        dataclass_code.seen = {}
    kept.write_bytes(content)  # type: ignore[arg-type]
    record = _class_in("hardboiled.kept_probe", RECORD)("a")
    assert dataclass_code._known == {} and record.name == "a"
    assert dataclass_code.seen  # compiled here, as dataclasses would


def test_a_text_the_file_does_not_hold_is_compiled(kept: Path) -> None:
    _class_in("hardboiled.kept_probe", RECORD)
    dataclass_code.write()
    dataclass_code._known, dataclass_code.seen = None, {}
    edited = _class_in("hardboiled.kept_probe", RECORD.replace("    name: str\n", "    name: str\n    extra: int = 0\n"))
    assert edited("a").extra == 0
    assert set(dataclass_code.seen) - set(dataclass_code._known or {})  # the new __init__ and friends


def test_install_serves_dataclasses_once_it_is_imported() -> None:
    """A process that has not loaded dataclasses (a cache hit) does not
    load it for this; the first import serves it."""
    _probe("import sys\nimport hardboiled\nassert 'dataclasses' not in sys.modules\n"
           "import dataclasses\nfrom hardboiled.support import dataclass_code\n"
           "assert dataclasses.exec is dataclass_code._exec\n"
           "import hardboiled.ir\nassert dataclass_code.seen\n")


def test_what_install_writes_covers_every_class_of_a_compile(tmp_path: Path) -> None:
    """``build`` (``make install``) keeps the code of every class: a
    process that imports the pipeline then compiles nothing."""
    path = tmp_path / "code.marshal"
    _probe(f"from hardboiled.support import dataclass_code\ndataclass_code.PATH = {str(path)!r}\n"
           "dataclass_code.build()\n")
    printed = _probe(f"from hardboiled.support import dataclass_code\ndataclass_code.PATH = {str(path)!r}\n"
                     "import hardboiled.cli.commands, hardboiled.pipeline.runner, hardboiled.frontend.parse\n"
                     "known = dataclass_code._known or {}\n"
                     "print(len(dataclass_code.seen), sum(1 for t in dataclass_code.seen if t not in known))\n")
    texts, compiled = map(int, printed.split())
    assert texts > 300 and compiled == 0, printed


def _probe(code: str) -> str:
    """What a fresh Python running ``code`` prints (it must succeed)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_an_entry_damaged_alone_is_compiled_and_the_others_served(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each text's code is unmarshalled only when a class asks for it, so
    one bad entry cannot be caught when the file is read."""
    made = _class_in("hardboiled.kept_probe", RECORD)
    dataclass_code.write()
    dataclass_code._known, dataclass_code.seen = None, {}
    dataclass_code._known = dataclass_code._read()
    init_text = next(text for text in dataclass_code._known if "def __init__" in text)
    repr_text = next(text for text in dataclass_code._known if "def __repr__" in text)
    dataclass_code._known[init_text] = b"\xe3 not code"
    dataclass_code._known[repr_text] = marshal.dumps("a string, not code")
    compiled_here: list[str] = []

    def compile_and_note(text: str, *args: object, **kwargs: object) -> types.CodeType:
        compiled_here.append(text)
        return compile(text, *args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(dataclass_code, "compile", compile_and_note, raising=False)
    served = _class_in("hardboiled.kept_probe", RECORD)
    monkeypatch.delattr(dataclass_code, "compile")
    assert sorted(compiled_here) == sorted([init_text, repr_text])  # every other text was served
    assert repr(served("a", (1,))) == repr(made("a", (1,))) == "Record(name='a', sizes=(1,), tags=frozenset())"
    assert served("a") == served("a") and served("a") != served("b")
    assert dataclass_code.seen[init_text] == compile(init_text, "<string>", "exec", dont_inherit=True)
    assert dataclass_code.seen[repr_text] == compile(repr_text, "<string>", "exec", dont_inherit=True)
    assert len(dataclass_code.seen) >= 5
