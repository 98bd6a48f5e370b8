"""builder/facts/records.py: a record behaves as the frozen dataclass it replaces, and builder/ defines
no dataclass (whose import and per-class compile were most of the CLI's start-up)."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from builder.facts.records import FrozenInstanceError, asdict, field, fields, is_record, record, replace

REPO = Path(__file__).resolve().parents[2]


@record
class Point:
    x: int
    y: int = 0
    tags: dict = field(default_factory=dict)

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


@record
class Point3(Point):
    z: int = 0


@record(frozen=False)
class Box:
    items: list = field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class DPoint:
    x: int
    y: int = 0
    tags: dict = dataclasses.field(default_factory=dict)


def test_a_record_behaves_as_the_frozen_dataclass() -> None:
    p, d = Point(1, y=2), DPoint(1, y=2)
    assert repr(p) == repr(d).replace("DPoint", "Point")
    assert p == Point(1, 2) and p != Point(2, 1) and p != (1, 2, {})
    assert Point(1) == Point(x=1, y=0, tags={}) and Point(1).norm1 == 1
    assert Point(1).tags is not Point(1).tags  # a factory per instance
    with pytest.raises(FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.y  # type: ignore[misc]
    assert hash(Point(1, 2, ())) == hash(Point(1, 2, ()))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        hash(p)  # a dict field is unhashable, as in a dataclass
    assert [f.name for f in fields(p)] == [f.name for f in dataclasses.fields(d)] == ["x", "y", "tags"]


def test_init_refuses_what_a_dataclass_refuses() -> None:
    with pytest.raises(TypeError, match="missing required argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'w'"):
        Point(1, w=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        Point(1, 2, {}, 4)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="non-default field"):
        @record
        class Bad:
            a: int = 0
            b: int


def test_inheritance_replace_asdict_pickle_and_unfrozen() -> None:
    q = Point3(1, 2, z=3)
    assert [f.name for f in fields(Point3)] == ["x", "y", "tags", "z"] and q.norm1 == 3
    assert replace(q, z=4) == Point3(1, 2, {}, 4) and q.z == 3
    assert asdict(Point3(1, tags={"a": [Point(2)]})) == {"x": 1, "y": 0, "tags": {"a": [{"x": 2, "y": 0, "tags": {}}]},
                                                        "z": 0}
    assert pickle.loads(pickle.dumps(q)) == q
    b = Box()
    b.items = [1]
    assert b == Box([1]) and Box.__hash__ is None
    assert is_record(q) and is_record(Point3) and not is_record(DPoint(1))
    with pytest.raises(TypeError):
        fields(DPoint(1))


def test_builder_defines_no_dataclass() -> None:
    users = [str(p.relative_to(REPO)) for p in (REPO / "builder").rglob("*.py")
             if "dataclasses" in p.read_text(encoding="utf-8").replace("``dataclasses``", "")
             and p.name not in ("records.py", "model_registry.py", "train.py", "observe.py")]
    assert users == []  # these read the launchers' and models/hosts.py's dataclasses, lazily


def test_validate_without_a_model_imports_no_dataclasses(tmp_path: Path) -> None:
    values = tmp_path / "values.env"
    values.write_text((REPO / "values.env").read_text() + '\nMODEL=""\n')
    code = ("import sys; from builder.cli import main; rc = main(['validate', '--values', sys.argv[1]]); "
            "print(sorted(m for m in ('dataclasses', 'inspect', 'jinja2', 'logging') if m in sys.modules)); "
            "sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, str(values)], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
