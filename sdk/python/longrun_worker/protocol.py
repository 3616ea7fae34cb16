"""The step request (protocol longrun.step.v1) and the step a function sees."""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import decimal
import json
import math
import re
import time
from typing import Any, Optional

from . import _json
from ._input import InputError, _kind, build

#: The version of the step protocol this package speaks: the protocol member of every step
#: request.
PROTOCOL = "longrun.step.v1"

# Problem codes this package reports by itself (the Go SDK's CodeInvalidInput, …).
#: The request's input does not fit the function's input type.
CODE_INVALID_INPUT = "invalid_input"
#: The invocation is not a step request of this PROTOCOL.
CODE_INVALID_REQUEST = "invalid_request"
#: The problem code of result_lost().
CODE_RESULT_LOST = "result_lost"
#: The step's function failed after its stepTimeout had passed; it may have acted.
CODE_STEP_TIMEOUT = "step_timeout"

#: How a signal was sent: through longrun's API by a principal (Signal.sender names it)…
VIA_API = "api"
#: …or through the signal's callback URL, without credentials (no sender).
VIA_CALLBACK = "callback"


class InvalidRequest(ValueError):
    """The invocation is not a step request of PROTOCOL. The handler answers it with a
    failed report with the code CODE_INVALID_REQUEST; the function does not run."""


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def parse_time(text: str, member: str = "time") -> _dt.datetime:
    """An RFC 3339 time (as longrun writes it: UTC with milliseconds) as an aware datetime
    in UTC. Digits beyond microseconds are dropped."""
    m = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise InvalidRequest(f"{member}: {_go_quote(text) if isinstance(text, str) else text!r} is not an RFC 3339 time")
    y, mo, d, h, mi, s, frac, z, sign, oh, om = m.groups()
    try:
        tz = _dt.timezone.utc
        if not z:
            off = _dt.timedelta(hours=int(oh), minutes=int(om))
            if int(oh) > 23 or int(om) > 59:
                raise ValueError("offset out of range")
            tz = _dt.timezone(off if sign == "+" else -off)
        micro = int((frac or "0")[:6].ljust(6, "0"))
        t = _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro, tzinfo=tz)
    except ValueError as e:
        raise InvalidRequest(f"{member}: {_go_quote(text)} is not an RFC 3339 time: {e}") from None
    return t.astimezone(_dt.timezone.utc)


def format_time(t: _dt.datetime) -> str:
    """t in UTC with milliseconds, as longrun writes a request's times."""
    t = t.astimezone(_dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def _go_quote(s: str) -> str:
    """s quoted as Go's %q quotes it (for the texts of refusals, as the Go SDK writes them)."""
    out = ['"']
    for c in s:
        o = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif c in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(c)])
        elif c.isprintable() or c == " ":
            out.append(c)
        elif o < 0x80:
            out.append("\\x%02x" % o)
        elif "\ud800" <= c <= "\udfff":
            out.append("\\ufffd")
        elif o <= 0xFFFF:
            out.append("\\u%04x" % o)
        else:
            out.append("\\U%08x" % o)
    out.append('"')
    return "".join(out)


@dataclasses.dataclass(frozen=True)
class Signal:
    """A message the operation received while its work ran, such as an approval or a
    webhook's call. longrun gives each signal to one step: the first it sends after the
    signal arrived (Step.signals)."""

    #: The signal's name, as the type declares it.
    name: str
    #: The signal's data, a JSON object valid under the signal's schema ({} when absent).
    data: Any
    #: When longrun received it (UTC).
    received_at: Optional[_dt.datetime]
    #: The principal that sent it through longrun's API; None for a signal sent through a
    #: callback URL, whose sender holds no credentials.
    sender: Optional[str]
    #: How it was sent: VIA_API or VIA_CALLBACK.
    via: str

    def decode(self, into: Any = None) -> Any:
        """The signal's data, built into `into` (a dataclass, a type or a callable, as the
        handler's input_type) when given. Data that does not fit raises ValueError, which
        fails the invocation (the Go SDK's Signal.Decode returns such an error)."""
        data = copy.deepcopy(self.data) if self.data is not None else {}
        if into is None:
            return data
        try:
            return build(into, data, "data")
        except InputError as e:
            raise ValueError(f"longrun_worker: decode the data of the signal {self.name}: {e}") from None

    def to_json(self) -> dict:
        """The signal as longrun sends it."""
        out = {"name": self.name, "data": self.data if self.data is not None else {}}
        out["receivedAt"] = format_time(self.received_at) if self.received_at else "0001-01-01T00:00:00.000Z"
        if self.sender:
            out["sender"] = self.sender
        out["via"] = self.via
        return out


@dataclasses.dataclass(frozen=True)
class Awaited:
    """What the previous step's wait for a signal came to: the signal it waited for, and
    whether the wait's timeout passed before it arrived (then no signal of that name is in
    Step.signals)."""

    signal: str
    timed_out: bool


class Step:
    """What a step function knows about the step it runs: the request, read.

    Attributes: operation_id, type, version, number (from 1), max_steps, attempt (1 on the
    step's first run, 2 and up when an operator had it run again after its outcome was
    unknown), deadline (the operation's, an aware datetime in UTC), step_timeout (seconds
    this invocation may run), correlation_id (None when the request has none), input (the
    validated input as the request carries it), signals (a list of Signal, in the order they
    arrived), awaited (an Awaited, or None), lambda_context (the Lambda context, or None).
    """

    __slots__ = (
        "operation_id", "type", "version", "number", "max_steps", "attempt", "deadline",
        "step_timeout", "correlation_id", "input", "signals", "awaited", "lambda_context",
        "_state", "_has_state", "_has_input", "_callbacks", "_started",
    )

    def __init__(
        self,
        *,
        operation_id: str = "",
        type: str = "",
        version: int = 0,
        number: int = 0,
        max_steps: int = 0,
        attempt: int = 1,
        deadline: Optional[_dt.datetime] = None,
        step_timeout: int = 0,
        correlation_id: Optional[str] = None,
        input: Any = None,
        state: Any = None,
        signals: Optional[list[Signal]] = None,
        awaited: Optional[Awaited] = None,
        callbacks: Optional[dict[str, str]] = None,
        lambda_context: Any = None,
    ) -> None:
        self.operation_id = operation_id
        self.type = type
        self.version = version
        self.number = number
        self.max_steps = max_steps
        self.attempt = max(attempt or 1, 1)
        self.deadline = deadline
        self.step_timeout = step_timeout
        self.correlation_id = correlation_id or None
        self.input = input
        self.signals = list(signals or [])
        self.awaited = awaited
        self.lambda_context = lambda_context
        self._state = state
        self._has_state = state is not None
        self._has_input = True
        self._callbacks = dict(callbacks or {})
        self._started = time.monotonic()

    def __repr__(self) -> str:
        return f"Step(operation_id={self.operation_id!r}, type={self.type!r}, number={self.number}, attempt={self.attempt})"

    def state(self, into: Any = None) -> Any:
        """The state the previous step carried (a fresh copy), or None when there is none:
        on the first step, after a step that carried none, or when it carried null. With
        `into` (a dataclass, a type or a callable), the state built into it; a state that
        does not fit raises ValueError, which fails the invocation (as the Go SDK's
        Step.State returns an error)."""
        if not self._has_state:
            return None
        state = copy.deepcopy(self._state)
        if into is None:
            return state
        try:
            return build(into, state, "state")
        except InputError as e:
            raise ValueError(f"longrun_worker: decode the state of step {self.number}: {e}") from None

    def signal(self, name: str) -> Optional[Signal]:
        """The last signal called name that the step received, or None. A signal sent more
        than once before a step ran is in signals once per send; the last one stands."""
        for s in reversed(self.signals):
            if s.name == name:
                return s
        return None

    def callback_url(self, name: str) -> Optional[str]:
        """The callback URL of the type's signal called name, or None when the type does not
        let a third party send it without credentials. Whoever holds it can send the signal."""
        return self._callbacks.get(name)

    @property
    def callbacks(self) -> dict[str, str]:
        """The callback URLs by signal name (a copy)."""
        return dict(self._callbacks)

    def idempotency_key(self) -> str:
        """The step's deduplication identity, "<operation id>-step-<number>", to pass to
        whatever the step changes downstream: a redelivered request has the same key."""
        return f"{self.operation_id}-step-{self.number}"

    def remaining_time(self) -> float:
        """Seconds left of this step: until its step_timeout since it started, or until the
        Lambda invocation's own end, whichever comes first (it may be 0 or less). Python
        cannot stop a running function: a step that works in a loop checks this and returns
        continue_(state) in time. An exception raised after step_timeout has passed is
        reported as outcome_unknown with the code step_timeout."""
        left = float("inf")
        if self.step_timeout and self.step_timeout > 0:
            left = self.step_timeout - (time.monotonic() - self._started)
        ctx = self.lambda_context
        if ctx is not None and hasattr(ctx, "get_remaining_time_in_millis"):
            left = min(left, ctx.get_remaining_time_in_millis() / 1000.0)
        return left

    def to_json(self) -> dict:
        """The step as the request's members (without protocol): for logs and tests."""
        out: dict[str, Any] = {
            "operationId": self.operation_id, "type": self.type, "version": self.version,
            "number": self.number, "maxSteps": self.max_steps, "attempt": self.attempt,
            "deadline": format_time(self.deadline) if self.deadline else None,
            "stepTimeoutSeconds": self.step_timeout, "correlationId": self.correlation_id,
            "input": self.input, "state": self.state(),
            "signals": [s.to_json() for s in self.signals],
            "awaited": {"signal": self.awaited.signal, "timedOut": self.awaited.timed_out} if self.awaited else None,
            "callbacks": self.callbacks,
        }
        return out


# --- reading a request ----------------------------------------------------------------------

def _str(m: dict, key: str, where: str = "") -> str:
    v = m.get(key)
    if v is None:  # absent or null: Go leaves the zero value
        return ""
    if not isinstance(v, str):
        raise InvalidRequest(f"{where}{key} must be a string, not {_kind(v)}")
    return _json.fix_text(v)


def _raw(v: Any) -> str:
    """v as JSON text, for a refusal's message (at most 40 characters, as Go's %.40s)."""
    if isinstance(v, decimal.Decimal):
        return str(v)[:40]
    try:
        return json.dumps(v, ensure_ascii=False, default=str)[:40]
    except (TypeError, ValueError):
        return repr(v)[:40]


def _int(m: dict, key: str, where: str = "") -> int:
    """An integer member as the Go SDK reads one: a JSON number that JSON Schema counts as
    an integer (3.0 is 3, as JSON re-serialised on the way may spell it) of at most 18
    digits; null or absent is 0. A decimal.Decimal (from json.loads(…,
    parse_float=Decimal)) is read exactly."""
    v = m.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float, decimal.Decimal)):
        raise InvalidRequest(f"{where}{key} must be a number, not {_raw(v)}")
    if isinstance(v, float) and not math.isfinite(v) or isinstance(v, decimal.Decimal) and not v.is_finite():
        raise InvalidRequest(f"{where}{key} must be a number, not {_raw(v)}")
    d = decimal.Decimal(v) if not isinstance(v, decimal.Decimal) else v
    if not d.is_zero():
        _, digits, exp = d.as_tuple()
        trimmed = len(digits) - len("".join(map(str, digits)).rstrip("0"))
        if exp + trimmed < 0 or d.adjusted() + 1 > 18:  # a fraction, or more than 18 digits
            raise InvalidRequest(f"{where}{key} {_raw(v)} is not an integer")
    return int(d)


def _bool(m: dict, key: str, where: str = "") -> bool:
    v = m.get(key)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise InvalidRequest(f"{where}{key} must be a boolean, not {_kind(v)}")
    return v


def _time(m: dict, key: str, where: str = "") -> Optional[_dt.datetime]:
    v = m.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise InvalidRequest(f"{where}{key} must be a time as a string, not {_kind(v)}")
    return parse_time(v, where + key)


def _signals(v: Any) -> list[Signal]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise InvalidRequest(f"signals must be an array, not {_kind(v)}")
    out = []
    for i, s in enumerate(v):
        where = f"signals[{i}]."
        if not isinstance(s, dict):
            raise InvalidRequest("a signal must be a JSON object")
        out.append(Signal(
            name=_str(s, "name", where), data=copy.deepcopy(s.get("data")), received_at=_time(s, "receivedAt", where),
            sender=_str(s, "sender", where) or None, via=_str(s, "via", where),
        ))
    return out


def _awaited(v: Any) -> Optional[Awaited]:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise InvalidRequest(f"awaited must be an object, not {_kind(v)}")
    return Awaited(signal=_str(v, "signal", "awaited."), timed_out=_bool(v, "timedOut", "awaited."))


def _callbacks(v: Any) -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InvalidRequest(f"callbacks must be an object, not {_kind(v)}")
    out = {}
    for k, url in v.items():
        if url is None:
            url = ""
        if not isinstance(url, str):
            raise InvalidRequest(f"callbacks.{k} must be a string, not {_kind(url)}")
        out[_json.fix_text(k)] = _json.fix_text(url)
    return out


def _check(protocol: str, operation_id: str, number: int) -> None:
    """Refuses what is not a step request of this protocol, as the Go SDK's Request.check."""
    if protocol != PROTOCOL:
        raise InvalidRequest(f"protocol {_go_quote(protocol)} is not {_go_quote(PROTOCOL)}")
    if operation_id == "":
        raise InvalidRequest("operationId is missing")
    if number < 1:
        raise InvalidRequest(f"step {number} is not a step number (they start at 1)")


def parse_request(event: Any, *, check: bool = True, lambda_context: Any = None) -> Step:
    """The Step of a step request (the invocation's payload, decoded from JSON).

    A payload that is not a step request of PROTOCOL raises InvalidRequest: a member of
    the wrong JSON type, a protocol other than PROTOCOL, no operationId, or a step number
    below 1 (the checks of the Go SDK's handler). Members it does not know are ignored, and
    a member that is null counts as absent, as in the Go SDK. With check=False (what run()
    does, like the Go SDK's Run) the protocol, operationId and step are not checked, so a
    test sets only what its function reads.
    """
    if not isinstance(event, dict):
        raise InvalidRequest("a step request must be a JSON object")
    protocol = _str(event, "protocol")
    operation_id = _str(event, "operationId")
    number = _int(event, "step")
    step = Step(
        operation_id=operation_id,
        type=_str(event, "type"),
        version=_int(event, "version"),
        number=number,
        max_steps=_int(event, "maxSteps"),
        attempt=_int(event, "attempt"),
        deadline=_time(event, "deadline"),
        step_timeout=_int(event, "stepTimeoutSeconds"),
        correlation_id=_str(event, "correlationId") or None,
        input=copy.deepcopy(event.get("input")),
        state=copy.deepcopy(event.get("state")),
        signals=_signals(event.get("signals")),
        awaited=_awaited(event.get("awaited")),
        callbacks=_callbacks(event.get("callbacks")),
        lambda_context=lambda_context,
    )
    if "input" not in event:
        step._has_input = False
    if check:
        _check(protocol, operation_id, number)
    return step
