"""The step report: building one as the Go SDK does, and reading one as longrun does."""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import _json
from .protocol import CODE_RESULT_LOST

# Statuses of a step report.
#: The work is not done: longrun invokes the next step, carrying the report's state.
CONTINUE = "continue"
#: The work is done: the report's result is the operation's result.
SUCCEEDED = "succeeded"
#: The work did not and will not happen: the report's problem says why.
FAILED = "failed"
#: The work may have happened and its result is lost: longrun never retries it blindly.
OUTCOME_UNKNOWN = "outcome_unknown"

# The protocol's limits on a report.
MAX_STATE_BYTES = 32 << 10
MAX_RESULT_BYTES = 64 << 10
MAX_DELAY_SECONDS = 86400
MAX_AWAIT_SECONDS = 30 * 86400
MAX_TITLE_CHARS = 200
MAX_DETAIL_CHARS = 2000
MAX_MESSAGE_CHARS = 200

_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
_SIGNAL_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_CODE_PATTERN = "^[a-z][a-z0-9_]{0,63}$"
_SIGNAL_PATTERN = "^[a-z][a-z0-9_-]{0,63}$"

_ALLOWED = {
    CONTINUE: ("status", "state", "progress", "delaySeconds", "wait", "await"),
    SUCCEEDED: ("status", "result", "progress"),
    FAILED: ("status", "problem", "progress"),
    OUTCOME_UNKNOWN: ("status", "problem", "progress"),
}


class InvalidReport(ValueError):
    """A report that breaks the protocol: building one is a bug in the worker (raised where
    it is built, and, from the step function, the invocation's failure, which longrun records
    as outcome_unknown), and validate_report refuses one as longrun would (invalid_report)."""


def clamp(text: str, limit: int) -> str:
    """text cut to at most limit characters (Unicode code points), the last of them "…"
    when it cut: its first limit-1 characters and "…". Text within its limit is unchanged.
    A lone surrogate (text that is not Unicode, which Go holds as an invalid byte) counts
    as one character and becomes U+FFFD, as Go writes it. A limit below 1 gives "". This
    is the Go SDK's clamp and longrun's runes.Cut."""
    if limit < 1:
        return ""
    text = _json.fix_text(text)
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


class Problem(Exception):
    """Why a step failed (or, optionally, why its outcome is unknown): code matches
    ^[a-z][a-z0-9_]{0,63}$ and names the kind of failure for programs, title (1 to 200
    characters) says it to people, detail (at most 2000) says what happened this time.

    Raise one from a step function (directly, or as the cause of another: `raise X from
    problem`) and the step's report is failed with it, as fail() makes it: the work says, as
    a fact, that it did not and will not happen. Any other exception fails the invocation,
    which longrun records as outcome_unknown."""

    def __init__(self, code: str, title: str, detail: str = "") -> None:
        self.code = code
        self.title = title
        self.detail = detail or ""
        super().__init__(str(self))

    def __str__(self) -> str:
        if not self.detail:
            return f"{self.code}: {self.title}"
        return f"{self.code}: {self.title}: {self.detail}"

    def __repr__(self) -> str:
        return f"Problem(code={self.code!r}, title={self.title!r}, detail={self.detail!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Problem):
            return NotImplemented
        return (self.code, self.title, self.detail) == (other.code, other.title, other.detail)

    __hash__ = None  # type: ignore[assignment]

    def to_json(self) -> dict:
        out = {"code": self.code, "title": self.title}
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True)
class Progress:
    """How far the work has come: every member optional (None or 0/"" is not reported)."""

    total_steps: Optional[int] = None
    percent: Optional[float] = None
    message: Optional[str] = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {}
        if self.total_steps:
            out["totalSteps"] = self.total_steps
        if self.percent is not None:
            out["percent"] = _number(self.percent)
        if self.message:
            out["message"] = self.message
        return out


def _number(f: float) -> Union[int, float]:
    """f as Go writes a float64: an integral one without ".0" (30, not 30.0)."""
    if isinstance(f, float) and f.is_integer() and abs(f) < 1e21:
        return int(f)
    return f


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _seconds(v: Any, what: str) -> float:
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    if not _is_number(v):
        raise InvalidReport(f"longrun_worker: {what} must be a number of seconds or a timedelta, not {type(v).__name__}")
    return float(v)


def _whole_seconds(secs: float) -> int:
    """secs rounded up to a whole second, as the Go SDK rounds a Duration."""
    return int(math.ceil(secs))


def _encode(what: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    try:
        text = _json.go_marshal(value)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidReport(f"longrun_worker: encode the {what}: {e}") from None
    return None if text == "null" else text


class Report:
    """What a step returns to longrun. Build one with continue_(), succeed(), fail() or
    result_lost(); its methods return modified copies. A report is checked against the
    protocol as it is built: whatever would break it raises InvalidReport there, except
    text over its limit (a problem's title or detail, a progress message), which is cut as
    the Go SDK cuts it. to_dict() is the report as the step's return value."""

    __slots__ = ("_status", "_state", "_result", "_problem", "_progress", "_delay", "_wait", "_await")

    def __init__(self, status: str) -> None:
        if status not in _ALLOWED:
            raise InvalidReport(f"longrun_worker: status {status!r} is not one of continue, succeeded, failed, outcome_unknown")
        self._status = status
        self._state: Optional[str] = None  # the state as Go's JSON
        self._result: Optional[str] = None
        self._problem: Optional[tuple[str, str, str]] = None
        self._progress: Optional[Progress] = None
        self._delay: Optional[int] = None
        self._wait = False
        self._await: Optional[tuple[str, int]] = None

    def _copy(self) -> "Report":
        r = Report.__new__(Report)
        for k in Report.__slots__:
            setattr(r, k, getattr(self, k))
        return r

    def _continuing(self, method: str) -> None:
        if self._status != CONTINUE:
            raise InvalidReport(f"longrun_worker: {method} is only for a continue report, not a {self._status!r} one")

    # --- modifiers ----------------------------------------------------------------------

    def wait(self) -> "Report":
        """A continue report that asks longrun to wait the type's configured stepDelay
        before the next step: how a worker polls without sleeping in Lambda. after() wins
        over it."""
        self._continuing("wait")
        if self._await is not None:
            raise InvalidReport("longrun_worker: a report waits for a signal (await_signal) or for a time (wait, after), not both")
        r = self._copy()
        r._wait = True
        return r

    def after(self, seconds: Union[int, float, _dt.timedelta]) -> "Report":
        """A continue report that asks longrun to wait `seconds` (a number or a timedelta,
        rounded up to a whole second, 0 to 86400) before the next step (its delaySeconds).
        It wins over wait(); after(0) asks for the next step at once even after wait()."""
        self._continuing("after")
        secs = _seconds(seconds, "the delay")
        if not (0 <= secs <= MAX_DELAY_SECONDS):
            raise InvalidReport(f"longrun_worker: a delay of {seconds}s is not between 0 and {MAX_DELAY_SECONDS}s")
        if self._await is not None:
            raise InvalidReport("longrun_worker: a report waits for a signal (await_signal) or for a time (wait, after), not both")
        r = self._copy()
        r._delay = _whole_seconds(secs)
        return r

    def await_signal(self, name: str, timeout_seconds: Union[int, float, _dt.timedelta]) -> "Report":
        """A continue report that asks longrun to run the next step when the signal called
        name arrives, or when timeout_seconds (rounded up to a whole second, more than 0 and
        at most 30 days) pass without it. name must match ^[a-z][a-z0-9_-]{0,63}$ and be a
        signal the type declares. It cannot go with wait() or after()."""
        self._continuing("await_signal")
        secs = _seconds(timeout_seconds, "the timeout")
        if not (0 < secs <= MAX_AWAIT_SECONDS):
            raise InvalidReport(
                f"longrun_worker: the timeout {timeout_seconds}s of the wait for the signal {clamp(str(name), 80)!r} "
                f"is not more than 0 and at most {MAX_AWAIT_SECONDS}s")
        if not isinstance(name, str) or not _SIGNAL_NAME.fullmatch(name):
            raise InvalidReport(f"longrun_worker: the signal name {clamp(str(name), 80)!r} does not match {_SIGNAL_PATTERN}")
        if self._wait or self._delay is not None:
            raise InvalidReport("longrun_worker: a report waits for a signal (await_signal) or for a time (wait, after), not both")
        r = self._copy()
        r._await = (name, _whole_seconds(secs))
        return r

    def with_progress(self, total_steps: Optional[int] = None, percent: Optional[float] = None,
                      message: Optional[str] = None) -> "Report":
        """The report with this progress (replacing any): total_steps (at least 1; None or 0
        is not reported), percent (0 to 100; None is not reported), message (cut to 200
        characters; None or "" is not reported). Any status may carry progress."""
        if total_steps is not None and (not isinstance(total_steps, int) or isinstance(total_steps, bool)):
            raise InvalidReport(f"longrun_worker: progress total_steps must be an integer, not {type(total_steps).__name__}")
        if total_steps is not None and total_steps < 0:
            raise InvalidReport(f"longrun_worker: progress totalSteps {total_steps} is less than 1")
        if percent is not None:
            if not _is_number(percent):
                raise InvalidReport(f"longrun_worker: progress percent must be a number, not {type(percent).__name__}")
            percent = float(percent)
            if not (0 <= percent <= 100):
                raise InvalidReport(f"longrun_worker: progress percent {percent:g} is not between 0 and 100")
        if message is not None and not isinstance(message, str):
            raise InvalidReport(f"longrun_worker: progress message must be a string, not {type(message).__name__}")
        r = self._copy()
        r._progress = Progress(total_steps or None, percent, clamp(message, MAX_MESSAGE_CHARS) if message else None)
        return r

    def _check(self) -> None:
        """What building cannot ensure of a Report made with its constructor."""
        if self._status == FAILED and self._problem is None:
            raise InvalidReport("longrun_worker: invalid failed report: a failed report needs a problem: build it with fail()")

    # --- accessors ----------------------------------------------------------------------

    @property
    def status(self) -> str:
        return self._status

    @property
    def state(self) -> Any:
        """The state a continue report carries (a fresh copy), None when it carries none."""
        return None if self._state is None else json.loads(self._state)

    @property
    def result(self) -> Any:
        """A succeeded report's result ({} when it was given none); None for other statuses."""
        if self._status == SUCCEEDED and self._result is None:
            return {}
        return None if self._result is None else json.loads(self._result)

    @property
    def problem(self) -> Optional[Problem]:
        return None if self._problem is None else Problem(*self._problem)

    @property
    def progress(self) -> Optional[Progress]:
        return self._progress

    @property
    def delay_seconds(self) -> Optional[int]:
        """The delay after() asked for, or None."""
        return self._delay

    @property
    def waits_step_delay(self) -> bool:
        """Whether wait() asked for the type's stepDelay (after() wins over it)."""
        return self._wait

    @property
    def awaits_signal(self) -> Optional[tuple[str, int]]:
        """(signal name, timeout in seconds) that await_signal() asked for, or None."""
        return self._await

    # --- the wire -----------------------------------------------------------------------

    def to_dict(self) -> dict:
        """The report as the step's return value (the Lambda runtime encodes it as JSON),
        its members in the protocol's order, as the Go SDK writes them."""
        out: dict[str, Any] = {"status": self._status}
        if self._state is not None:
            out["state"] = json.loads(self._state)
        if self._result is not None:
            out["result"] = json.loads(self._result)
        if self._problem is not None:
            out["problem"] = Problem(*self._problem).to_json()
        if self._progress is not None:
            out["progress"] = self._progress.to_json()
        if self._delay is not None:
            out["delaySeconds"] = self._delay
        if self._wait:
            out["wait"] = True
        if self._await is not None:
            out["await"] = {"signal": self._await[0], "timeoutSeconds": self._await[1]}
        return out

    def to_json(self) -> str:
        """The report as JSON text, exactly as the Go SDK writes it (compact, Go's escapes)."""
        parts = ['{"status":', json.dumps(self._status)]
        if self._state is not None:
            parts += [',"state":', self._state]
        if self._result is not None:
            parts += [',"result":', self._result]
        if self._problem is not None:
            parts += [',"problem":', _json.go_marshal(Problem(*self._problem).to_json())]
        if self._progress is not None:
            parts += [',"progress":', _json.go_marshal(self._progress.to_json())]
        if self._delay is not None:
            parts += [',"delaySeconds":', str(self._delay)]
        if self._wait:
            parts.append(',"wait":true')
        if self._await is not None:
            parts += [',"await":', _json.go_marshal({"signal": self._await[0], "timeoutSeconds": self._await[1]})]
        parts.append("}")
        return "".join(parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Report):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in Report.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Report({self.to_json()})"


def continue_(state: Any = None) -> Report:
    """The work is not done: longrun invokes the next step, with state (any JSON value, or a
    dataclass, at most 32 KiB as compact JSON) as its Step.state(). None, or a state that
    encodes as null, carries none. Without wait(), after() or await_signal() the next step
    is invoked at once."""
    r = Report(CONTINUE)
    r._state = _encode("state", state)
    if r._state is not None and _json.utf8_len(r._state) > MAX_STATE_BYTES:
        raise InvalidReport(f"longrun_worker: the state takes {_json.utf8_len(r._state)} bytes, more than {MAX_STATE_BYTES}")
    return r


#: continue_, under the Go SDK's name (continue is a keyword in Python).
Continue = continue_


def succeed(result: Any = None) -> Report:
    """The work is done, with result (a dict, or a dataclass: a JSON object of at most 64
    KiB as compact JSON) as the operation's result. None is the empty object."""
    r = Report(SUCCEEDED)
    r._result = _encode("result", result)
    if r._result is not None:
        if not r._result.startswith("{"):
            raise InvalidReport(f"longrun_worker: invalid succeeded report: the result must be a JSON object, not {r._result[:40]}")
        if _json.utf8_len(r._result) > MAX_RESULT_BYTES:
            raise InvalidReport(f"longrun_worker: the result takes {_json.utf8_len(r._result)} bytes, more than {MAX_RESULT_BYTES}")
    return r


def _problem(code: Any, title: Any, detail: Any) -> tuple[str, str, str]:
    for what, v in (("code", code), ("title", title)):
        if not isinstance(v, str):
            raise InvalidReport(f"longrun_worker: the problem's {what} must be a string, not {type(v).__name__}")
    if detail is None:
        detail = ""
    if not isinstance(detail, str):
        raise InvalidReport(f"longrun_worker: the problem's detail must be a string, not {type(detail).__name__}")
    title, detail = clamp(title, MAX_TITLE_CHARS), clamp(detail, MAX_DETAIL_CHARS)
    if not _CODE.fullmatch(code):
        raise InvalidReport(f"longrun_worker: problem code {code!r} does not match {_CODE_PATTERN}")
    if not title:
        raise InvalidReport(f"longrun_worker: the problem's title must have 1 to {MAX_TITLE_CHARS} characters, not 0")
    return code, title, detail


def fail(code: str, title: str, detail: Optional[str] = "") -> Report:
    """The work did not and will not happen, for the reason the problem says (code matches
    ^[a-z][a-z0-9_]{0,63}$; title is not empty; detail may be empty). A title longer than
    200 characters, or a detail longer than 2000, is cut to its limit, ending with "…", as
    the Go SDK cuts it. Fail only when nothing happened (or it is undone): after an effect
    whose result is lost, report result_lost()."""
    r = Report(FAILED)
    r._problem = _problem(code, title, detail)
    return r


def result_lost(detail: Optional[str] = "") -> Report:
    """The work may have happened and its result is lost (status outcome_unknown), with the
    problem code result_lost and detail, cut as fail() cuts it. longrun records
    outcome_unknown and never retries blindly: someone resolves it."""
    r = Report(OUTCOME_UNKNOWN)
    r._problem = _problem(CODE_RESULT_LOST, "The result of the step is lost.", detail)
    return r


# --- reading a report as longrun's recorder does ------------------------------------------

_NUMBER = re.compile(r"(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?")
_INT_MAX = (1 << 63) - 1


def _num(raw: str, member: str) -> decimal.Decimal:
    """A member that must be a JSON number, read exactly."""
    if not _NUMBER.fullmatch(raw):
        raise InvalidReport(f"{member} must be a number, not {raw[:40]}")
    return decimal.Decimal(raw)


def _integral(d: decimal.Decimal) -> bool:
    if d.is_zero():
        return True
    _, digits, exp = d.as_tuple()
    stripped = "".join(map(str, digits)).rstrip("0")
    return exp + (len(digits) - len(stripped)) >= 0


def _saturate(d: decimal.Decimal) -> int:
    if d.adjusted() > 19:
        return _INT_MAX if d > 0 else -_INT_MAX - 1
    return max(-_INT_MAX - 1, min(_INT_MAX, int(d)))


def _str_member(raw: str, member: str) -> str:
    if not raw.startswith('"'):
        raise InvalidReport(f"{member} must be a string, not {raw[:40]}")
    return _json.fix_text(json.loads(raw))


def _object(raw: str, what: str) -> dict[str, str]:
    if not raw.startswith("{"):
        raise InvalidReport(f"{what} must be a JSON object")
    return _json.raw_members(raw)


def _await(raw: str) -> dict:
    m = _object(raw, "await")
    out: dict[str, Any] = {}
    for k in sorted(m):
        v = m[k]
        if k == "signal":
            s = _str_member(v, "await.signal")
            if not _SIGNAL_NAME.fullmatch(s):
                raise InvalidReport(f"await.signal {clamp(s, 80)!r} must match {_SIGNAL_PATTERN}")
            out["signal"] = s
        elif k == "timeoutSeconds":
            d = _num(v, "await.timeoutSeconds")
            if not _integral(d) or d < 1 or d > MAX_AWAIT_SECONDS:
                raise InvalidReport(f"await.timeoutSeconds {v} is not an integer from 1 to {MAX_AWAIT_SECONDS}")
            out["timeoutSeconds"] = int(d)
        else:
            raise InvalidReport(f"{k!r} is not a member of await")
    for k in ("signal", "timeoutSeconds"):
        if k not in m:
            raise InvalidReport(f"await.{k} is missing")
    return {"signal": out["signal"], "timeoutSeconds": out["timeoutSeconds"]}


def _problem_member(raw: str) -> dict:
    m = _object(raw, "problem")
    p = {"code": "", "title": "", "detail": ""}
    for k in sorted(m):
        if k not in p:
            raise InvalidReport(f"{k!r} is not a member of problem")
        p[k] = _str_member(m[k], "problem." + k)
    for k in ("code", "title"):
        if k not in m:
            raise InvalidReport(f"problem.{k} is missing")
    p["title"], p["detail"] = clamp(p["title"], MAX_TITLE_CHARS), clamp(p["detail"], MAX_DETAIL_CHARS)
    if not _CODE.fullmatch(p["code"]):
        raise InvalidReport(f"problem.code {p['code']!r} must match {_CODE_PATTERN}")
    if not p["title"]:
        raise InvalidReport(f"problem.title must be 1 to {MAX_TITLE_CHARS} characters")
    if not p["detail"]:
        del p["detail"]
    return p


def _progress_member(raw: str) -> dict:
    m = _object(raw, "progress")
    out: dict[str, Any] = {}
    for k in sorted(m):
        v = m[k]
        if k == "totalSteps":
            d = _num(v, "progress.totalSteps")
            if not _integral(d) or d < 1:
                raise InvalidReport(f"progress.totalSteps {v} is not an integer of at least 1")
            out["totalSteps"] = _saturate(d)
        elif k == "percent":
            d = _num(v, "progress.percent")
            if d < 0 or d > 100:
                raise InvalidReport(f"progress.percent {v} is not from 0 to 100")
            out["percent"] = _number(abs(float(d)))  # -0 is 0; a value too small for a float is 0
        elif k == "message":
            msg = clamp(_str_member(v, "progress.message"), MAX_MESSAGE_CHARS)
            if msg:
                out["message"] = msg
        else:
            raise InvalidReport(f"{k!r} is not a member of progress")
    return {k: out[k] for k in ("totalSteps", "percent", "message") if k in out}


def validate_report(report: Union[dict, str, bytes]) -> dict:
    """The report as longrun's recorder reads it, or InvalidReport where the recorder would
    refuse it (and record outcome_unknown, invalid_report): a member its status does not
    allow (null too), an unknown or wrongly cased member, a value of the wrong JSON type or
    out of range (numbers compared exactly: 30.0 is the integer 30, 100.00000000000000001 is
    more than 100), a state over 32 KiB or a result over 64 KiB as compact JSON, a failed
    report without a problem, await with wait true or delaySeconds, an empty title. Text
    over its limit is cut, not refused, as the recorder cuts it.

    report is the JSON text (str or bytes: measured as it is, the way the recorder measures
    what it receives) or a decoded value (measured as compact UTF-8 JSON). The answer has
    the members the recorder keeps: status; state (absent when null); result; problem
    (title and detail cut, an empty detail absent); progress (message cut, an empty one
    absent; percent a number); delaySeconds; wait (only when true); await.
    """
    if isinstance(report, (str, bytes)):
        text = report.decode("utf-8", "replace") if isinstance(report, bytes) else report
    else:
        try:
            text = _json.go_marshal(report, escape_html=False)
        except (TypeError, ValueError, RecursionError) as e:
            raise InvalidReport(f"a report must be JSON: {e}") from None
    try:
        _json.loads_exact(text)
    except (ValueError, RecursionError) as e:
        raise InvalidReport(f"a report: {e}") from None
    text = text.strip(" \t\r\n")
    m = _object(text, "a report")
    if "status" not in m:
        raise InvalidReport("status is missing")
    status = _str_member(m["status"], "status")
    names = _ALLOWED.get(status)
    if names is None:
        raise InvalidReport(f"status {status!r} is not one of continue, succeeded, failed, outcome_unknown")
    out: dict[str, Any] = {"status": status}
    for k in sorted(m):
        if k not in names:
            raise InvalidReport(f"{k!r} is not a member of a {status} report")
        v = m[k]
        if k == "state":
            state = _json.compact(v)
            size = _json.utf8_len(state)
            if size > MAX_STATE_BYTES:
                raise InvalidReport(f"state takes {size} bytes as compact JSON, more than {MAX_STATE_BYTES}")
            if state != "null":  # null is no state
                out["state"] = json.loads(state)
        elif k == "delaySeconds":
            d = _num(v, "delaySeconds")
            if not _integral(d) or d < 0 or d > MAX_DELAY_SECONDS:
                raise InvalidReport(f"delaySeconds {v} is not an integer from 0 to {MAX_DELAY_SECONDS}")
            out["delaySeconds"] = int(d)
        elif k == "wait":
            if v == "true":
                out["wait"] = True
            elif v != "false":
                raise InvalidReport(f"wait must be true or false, not {v[:40]}")
        elif k == "await":
            out["await"] = _await(v)
        elif k == "result":
            _object(v, "result")
            result = _json.compact(v)
            size = _json.utf8_len(result)
            if size > MAX_RESULT_BYTES:
                raise InvalidReport(f"result takes {size} bytes as compact JSON, more than {MAX_RESULT_BYTES}")
            out["result"] = json.loads(result)
        elif k == "problem":
            out["problem"] = _problem_member(v)
        elif k == "progress":
            out["progress"] = _progress_member(v)
    if status == FAILED and "problem" not in out:
        raise InvalidReport("status failed needs a problem")
    if "await" in out and (out.get("wait") or "delaySeconds" in out):
        raise InvalidReport("await cannot go with wait or delaySeconds: a report waits for a signal or for a time")
    order = ("status", "state", "result", "problem", "progress", "delaySeconds", "wait", "await")
    return {k: out[k] for k in order if k in out}
