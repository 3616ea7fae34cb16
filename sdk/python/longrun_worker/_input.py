"""Building a step's typed input (or state, or a signal's data) from its JSON value."""

from __future__ import annotations

import dataclasses
import decimal
import enum
import types
import typing
from typing import Any


class InputError(ValueError):
    """A JSON value does not fit the type it is built into."""


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float, decimal.Decimal)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)


_hints_cache: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _hints_cache.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _hints_cache[cls] = hints
    return hints


def json_name(f: dataclasses.Field) -> str:
    """The JSON member a dataclass field reads: metadata "json", else the field's name."""
    return f.metadata.get("json", f.name)


def _build_dataclass(cls: type, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise InputError(f"{path} must be an object, not {_kind(value)}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        name = json_name(f)
        tp = hints.get(f.name, Any)
        if name in value:
            kwargs[f.name] = build(tp, value[name], f"{path}.{name}")
        elif f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        elif _allows_none(tp):
            kwargs[f.name] = None
        else:
            raise InputError(f"{path}.{name} is missing")
    return cls(**kwargs)  # members the class does not name are ignored, as in Go


def _allows_none(tp: Any) -> bool:
    if tp is Any or tp is object or tp is None or tp is type(None):
        return True
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return any(_allows_none(a) for a in typing.get_args(tp))
    return False


def build(tp: Any, value: Any, path: str = "input") -> Any:
    """value (decoded JSON) built into tp: a dataclass (members by field name, or by the
    field's metadata "json"; members it does not name ignored; a missing field without a
    default refused), a type such as str, int, float, bool, list[X], dict[str, X],
    Optional[X], Literal[...], an Enum, or any other callable, called with value (its
    TypeError, ValueError or KeyError refuses the value). A value that does not fit raises
    InputError saying where."""
    if tp is Any or tp is object:
        return value
    if tp is None or tp is type(None):
        if value is not None:
            raise InputError(f"{path} must be null, not {_kind(value)}")
        return None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build_dataclass(tp, value, path)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return build(args[0], value, path)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return build(a, value, path)
            except InputError as e:
                errors.append(str(e))
        raise InputError(errors[0] if len(errors) == 1 else f"{path}: {_kind(value)} fits none of {', '.join(_name(a) for a in args)}")
    if origin is typing.Literal:
        for a in args:
            if value == a and type(value) is type(a):
                return value
        raise InputError(f"{path} must be one of {', '.join(repr(a) for a in args)}, not {value!r}")
    if origin in (list, typing.List, tuple, set, frozenset) or tp in (list, tuple):
        if not isinstance(value, list):
            raise InputError(f"{path} must be an array, not {_kind(value)}")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(value):
                raise InputError(f"{path} must have {len(args)} items, not {len(value)}")
            return tuple(build(a, v, f"{path}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
        item = args[0] if args else Any
        items = [build(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        if origin in (tuple, set, frozenset) or tp is tuple:
            return (origin or tp)(items)
        return items
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise InputError(f"{path} must be an object, not {_kind(value)}")
        vt = args[1] if len(args) == 2 else Any
        return {k: build(vt, v, f"{path}.{k}") for k, v in value.items()}
    if tp is str:
        if not isinstance(value, str):
            raise InputError(f"{path} must be a string, not {_kind(value)}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise InputError(f"{path} must be a boolean, not {_kind(value)}")
        return value
    if isinstance(value, decimal.Decimal) and tp in (int, float):  # a number read exactly
        if tp is float:
            return float(value)
        if value.is_finite() and value.as_tuple().exponent == 0:  # 3, not 3.0 (as for a float)
            return int(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{path} must be an integer, not {_kind(value)}" + (f" ({value!r})" if isinstance(value, float) else ""))
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{path} must be a number, not {_kind(value)}")
        return float(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise InputError(f"{path}: {value!r} is not a {tp.__name__}") from None
    if callable(tp):
        try:
            return tp(value)
        except (TypeError, ValueError, KeyError) as e:
            raise InputError(f"{path}: {e}") from None
    raise TypeError(f"longrun_worker: cannot build into {tp!r}")
