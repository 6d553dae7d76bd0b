"""One codec for every record: Arrow types derived from the type hints of frozen dataclasses, and the encoding
of a record (or any part of one) to JSON or Arrow values and back. `core.records` builds its records on it."""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, TypeVar, Union, overload

import pyarrow as pa

from core.cli import InputError

T = TypeVar("T")


class RecordError(InputError, ValueError):
    """A record file or payload that does not match the expected schema."""


@cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def init_fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.init]


def optional_inner(tp: Any) -> Any | None:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return None


def arrow_type(tp: Any) -> pa.DataType:
    inner = optional_inner(tp)
    if inner is not None:
        return arrow_type(inner)
    origin = typing.get_origin(tp)
    if origin is tuple:
        return pa.list_(arrow_type(typing.get_args(tp)[0]))
    if origin is dict:  # as key/value pairs: `datasets` cannot load Arrow map columns
        key, value = typing.get_args(tp)
        return pa.list_(pa.struct([pa.field("key", arrow_type(key), nullable=False), pa.field("value", arrow_type(value))]))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):  # a hint is a class, never an instance
        return pa.struct([pa.field(f.name, arrow_type(hints(tp)[f.name])) for f in init_fields(tp)])
    simple: dict[Any, pa.DataType] = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    if tp in simple:
        return simple[tp]
    raise TypeError(f"no Arrow type for {tp!r}")


def encode(value: Any, arrow: bool = False) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: encode(getattr(value, f.name), arrow) for f in init_fields(type(value))}
    if isinstance(value, tuple):
        return [encode(v, arrow) for v in value]
    if isinstance(value, dict):
        if arrow:
            return [{"key": k, "value": encode(v, arrow)} for k, v in value.items()]
        return {k: encode(v, arrow) for k, v in value.items()}
    return value


@overload
def decode(tp: type[T], value: Any) -> T: ...  # a class (a record, a str...): one of it


@overload
def decode(tp: Any, value: Any) -> Any: ...  # any other type hint (Optional[...], ...)


def decode(tp: Any, value: Any) -> Any:
    inner = optional_inner(tp)
    if inner is not None:
        return None if value is None else decode(inner, value)
    origin = typing.get_origin(tp)
    if origin is tuple:
        return tuple(decode(typing.get_args(tp)[0], v) for v in value or ())
    if origin is dict:
        _, vt = typing.get_args(tp)
        if isinstance(value, dict):
            return {k: decode(vt, v) for k, v in value.items()}
        return {item["key"]: decode(vt, item["value"]) for item in value or ()}  # Arrow key/value pairs
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise RecordError(f"{tp.__name__}: expected an object, got {type(value).__name__}")
        types_of = hints(tp)
        names = {f.name for f in init_fields(tp)}
        unknown = set(value) - names
        if unknown:
            raise RecordError(f"{tp.__name__}: unknown field(s) {sorted(unknown)}")
        return tp(**{k: decode(types_of[k], v) for k, v in value.items()})
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp in (str, int, float, bool) and not isinstance(value, tp):
        raise RecordError(f"expected {tp.__name__}, got {value!r}")
    return value
