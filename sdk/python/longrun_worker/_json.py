"""JSON as the Go SDK writes and longrun reads it.

`go_marshal` encodes a value exactly as Go's encoding/json does (compact, ``<``, ``>``,
``&``, U+2028 and U+2029 escaped, floats in ES6 form such as ``30`` for ``30.0``): the size
of a state or result is measured on it, as the Go SDK measures it. `members` and `compact`
read a JSON object's members as raw text, as longrun's recorder does (it measures a state
or result as compact JSON of the text the worker sent).
"""

from __future__ import annotations

import dataclasses
import decimal
import json
import math
from typing import Any

_HEX = "0123456789abcdef"


def fix_text(s: str) -> str:
    """s with each lone surrogate (a string that is not Unicode text, as json.loads can
    make from "\\ud800") replaced by U+FFFD, as Go reads and writes such text; a valid
    surrogate pair becomes its character."""
    if not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _go_string(s: str, out: list[str], html: bool = True) -> None:
    out.append('"')
    for c in fix_text(s):
        o = ord(c)
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif o < 0x20:
            short = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c)
            out.append(short or "\\u00" + _HEX[o >> 4] + _HEX[o & 0xF])
        elif html and (c in "<>&" or c in "\u2028\u2029"):
            out.append("\\u%04x" % o)
        else:
            out.append(c)
    out.append('"')


def _shortest(f: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as f (f > 0), and the exponent of the
    first: f = 0.d1d2d3... × 10^(exp+1), i.e. d1 is the 10^exp digit."""
    d = decimal.Decimal(repr(f))
    _, digits, exp = d.as_tuple()
    s = "".join(map(str, digits)).rstrip("0")
    trailing = len(digits) - len(s)
    s = s.lstrip("0")
    lead = len(digits) - trailing - len(s)
    # value = digits × 10^exp; the first significant digit is the 10^(…) one.
    top = exp + len(digits) - 1 - lead
    return s, top


def go_float(f: float) -> str:
    """f as Go's encoding/json writes a float64."""
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"json: unsupported value: {f}")
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign = "-" if f < 0 else ""
    digits, top = _shortest(abs(f))
    a = abs(f)
    if a < 1e-6 or a >= 1e21:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        e = "%+03d" % top  # at least two digits, as strconv's 'e' writes it
        if e.startswith("-0"):  # Go cleans e-09 up to e-9
            e = "-" + e[2:]
        return sign + mant + "e" + e
    if top >= 0:
        whole = digits[: top + 1].ljust(top + 1, "0")
        frac = digits[top + 1 :]
    else:
        whole = "0"
        frac = "0" * (-top - 1) + digits
    return sign + whole + ("." + frac if frac else "")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _go(value: Any, out: list[str], seen: set[int], html: bool) -> None:
    value = _plain(value)
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(go_float(value))
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"json: unsupported value: {value}")
        out.append(str(value))
    elif isinstance(value, str):
        _go_string(value, out, html)
    elif isinstance(value, dict):
        if id(value) in seen:
            raise ValueError("json: unsupported value: a cycle")
        seen.add(id(value))
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(f"json: unsupported key type {type(k).__name__}")
            if i:
                out.append(",")
            _go_string(str(k), out, html)
            out.append(":")
            _go(v, out, seen, html)
        out.append("}")
        seen.discard(id(value))
    elif isinstance(value, (list, tuple)):
        if id(value) in seen:
            raise ValueError("json: unsupported value: a cycle")
        seen.add(id(value))
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _go(v, out, seen, html)
        out.append("]")
        seen.discard(id(value))
    else:
        raise TypeError(f"json: unsupported type: {type(value).__name__}")


def go_marshal(value: Any, escape_html: bool = True) -> str:
    """value as Go's json.Marshal writes it (dataclasses as their asdict); a value JSON
    cannot hold (NaN, a set, an object) is a TypeError or ValueError. escape_html=False
    leaves <, >, &, U+2028 and U+2029 as they are: plain compact UTF-8 JSON."""
    out: list[str] = []
    _go(value, out, set(), escape_html)
    return "".join(out)


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


# --- reading JSON as longrun's recorder does ---------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def loads_exact(text: str | bytes) -> Any:
    """text as JSON, numbers read exactly (decimal.Decimal), NaN and Infinity refused as Go
    refuses them."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal, parse_constant=_reject_constant)


_WS = " \t\r\n"


def _skip_ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WS:
        i += 1
    return i


def _skip_string(s: str, i: int) -> int:
    i += 1  # the opening quote
    while True:
        c = s[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        else:
            i += 1


def _skip_value(s: str, i: int) -> int:
    """The index after the JSON value at s[i] (s is known to be valid JSON)."""
    c = s[i]
    if c == '"':
        return _skip_string(s, i)
    if c in "{[":
        depth = 0
        while True:
            c = s[i]
            if c == '"':
                i = _skip_string(s, i)
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    while i < len(s) and s[i] not in _WS + ",}]":
        i += 1
    return i


def raw_members(text: str) -> dict[str, str]:
    """The members of the JSON object text (valid JSON) as their raw text, the last of a
    name winning, as Go's json.Unmarshal into map[string]json.RawMessage gives them."""
    out: dict[str, str] = {}
    i = _skip_ws(text, 0)
    assert text[i] == "{"
    i = _skip_ws(text, i + 1)
    if text[i] == "}":
        return out
    while True:
        end = _skip_string(text, i)
        name = fix_text(json.loads(text[i:end]))
        i = _skip_ws(text, end)
        assert text[i] == ":"
        i = _skip_ws(text, i + 1)
        end = _skip_value(text, i)
        out[name] = text[i:end]
        i = _skip_ws(text, end)
        if text[i] == "}":
            return out
        i = _skip_ws(text, i + 1)  # the comma


def compact(raw: str) -> str:
    """raw JSON text without whitespace between tokens, its strings and numbers as they
    are, as Go's json.Compact makes it."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == '"':
            end = _skip_string(raw, i)
            out.append(raw[i:end])
            i = end
        elif c in _WS:
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
