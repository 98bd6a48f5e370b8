"""Records: the value classes of builder/, like ``@dataclass(frozen=True)`` without its start-up cost.

``dataclasses`` compiles six small functions per frozen class when the class is defined (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``), and importing it loads
``inspect`` (with ``ast``, ``dis``, ``tokenize``). In 3.11 that is about 1 ms per class on a slow
machine, and ``tpubuild validate`` defines some twenty-five classes before it reads values.env: more
than any other part of its start-up (benchmarks/cli_startup.py: render, plan and validate
within 3x of ``python -c pass``). A record's methods are shared closures instead: nothing is compiled
when a class is defined, and a call costs a few microseconds more, which no verb notices.

What a record is, exactly as for a dataclass with ``frozen=True`` (the default) or ``frozen=False``:
fields are the class's annotations in order (a base record's first), a class attribute is a field's
default, :func:`field` gives ``default`` or ``default_factory``; ``__init__`` takes the fields by
position or name; ``__eq__`` compares the fields of two instances of the same class; a frozen record
hashes by its fields and refuses assignment (:class:`FrozenInstanceError`); ``__repr__`` is
``Name(field=value, ...)``. A method the class body defines itself is kept. :func:`fields`,
:func:`replace` and :func:`asdict` are ``dataclasses``' functions for records. ``models/`` keeps
``dataclasses`` (its launchers are standard library only and load only for ``train``).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["FrozenInstanceError", "Field", "asdict", "field", "fields", "is_record", "record", "replace"]

_MISSING: Any = object()
_FIELDS = "__record_fields__"


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class Field:
    """One field of a record: its ``name`` and its ``default`` or ``default_factory``."""

    __slots__ = ("name", "default", "default_factory")

    def __init__(self, default: Any = _MISSING, default_factory: Any = _MISSING) -> None:
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("a field takes default or default_factory, not both")
        self.name = ""
        self.default = default
        self.default_factory = default_factory

    def value(self, owner: str) -> Any:
        if self.default is not _MISSING:
            return self.default
        if self.default_factory is not _MISSING:
            return self.default_factory()
        raise TypeError(f"{owner}.__init__() missing required argument: {self.name!r}")

    def __repr__(self) -> str:
        return f"Field(name={self.name!r})"


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING) -> Any:
    """A field's default (``default``) or the function that makes one per instance (``default_factory``)."""
    return Field(default, default_factory)


def _own_fields(cls: type) -> list[Field]:
    own: list[Field] = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        if isinstance(value, Field):
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        own.append(f)
    return own


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    spec: tuple[Field, ...] = getattr(cls, _FIELDS)
    if len(args) > len(spec):
        raise TypeError(f"{cls.__name__}.__init__() takes {len(spec)} positional arguments but {len(args)} were given")
    put = object.__setattr__
    for f, value in zip(spec, args):
        if f.name in kwargs:
            raise TypeError(f"{cls.__name__}.__init__() got multiple values for argument {f.name!r}")
        put(self, f.name, value)
    for f in spec[len(args):]:
        put(self, f.name, kwargs.pop(f.name) if f.name in kwargs else f.value(cls.__name__))
    if kwargs:
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument {next(iter(kwargs))!r}")


def _values(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, f.name) for f in getattr(type(self), _FIELDS))


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in getattr(type(self), _FIELDS))
    return f"{type(self).__qualname__}({shown})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _make(cls: type, frozen: bool) -> type:
    inherited: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get(_FIELDS, ()):
            inherited[f.name] = f
    for f in _own_fields(cls):
        inherited[f.name] = f
    spec = tuple(inherited.values())
    seen_default = False
    for f in spec:
        has_default = f.default is not _MISSING or f.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default field {f.name!r} follows a default field in {cls.__name__}")
        seen_default = seen_default or has_default
    setattr(cls, _FIELDS, spec)
    body = cls.__dict__
    methods: dict[str, Any] = {"__init__": _init, "__repr__": _repr}
    if "__eq__" not in body:
        methods["__eq__"] = _eq
        if frozen and body.get("__hash__") is None:
            methods["__hash__"] = _hash
        elif not frozen and "__hash__" not in body:
            methods["__hash__"] = None
    if frozen:
        methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
    for name, method in methods.items():
        if name in ("__init__", "__repr__", "__setattr__", "__delattr__") and name in body:
            continue
        setattr(cls, name, method)
    return cls


def record(cls: type | None = None, *, frozen: bool = True) -> Any:
    """``@record`` (frozen) or ``@record(frozen=False)``: see the module's docstring."""
    if cls is None:
        return lambda c: _make(c, frozen)
    return _make(cls, frozen)


def is_record(obj: Any) -> bool:
    return hasattr(type(obj) if not isinstance(obj, type) else obj, _FIELDS)


def fields(obj: Any) -> tuple[Field, ...]:
    """The fields of a record (class or instance), in order."""
    cls = obj if isinstance(obj, type) else type(obj)
    try:
        return getattr(cls, _FIELDS)  # type: ignore[no-any-return]
    except AttributeError:
        raise TypeError(f"{cls.__name__} is not a record") from None


def replace(obj: Any, **changes: Any) -> Any:
    """A copy of the record ``obj`` with ``changes``."""
    for f in fields(obj):
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return type(obj)(**changes)


def asdict(obj: Any) -> Any:
    """The record ``obj`` as nested dicts, lists and tuples (``dataclasses.asdict``)."""
    if is_record(obj) and not isinstance(obj, type):
        return {f.name: asdict(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((asdict(k), asdict(v)) for k, v in obj.items())
    if obj is None or isinstance(obj, (str, int, float, bool, bytes, frozenset)):
        return obj

    return copy.deepcopy(obj)
