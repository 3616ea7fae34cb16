"""Running a step function: as a Lambda handler, and without Lambda for tests."""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time
from typing import Any, Callable, Optional, TextIO

from ._input import InputError, build
from .protocol import (CODE_INVALID_INPUT, CODE_INVALID_REQUEST, CODE_STEP_TIMEOUT, PROTOCOL,
                       InvalidRequest, Step, parse_request)
from .report import OUTCOME_UNKNOWN, InvalidReport, Problem, Report, fail

#: A step function: it runs one step, given the Step and the input built from the request's
#: input, and returns the step's Report. It may raise Problem (a failed report); any other
#: exception fails the invocation (longrun records outcome_unknown).
StepFunction = Callable[[Step, Any], Report]


def _problem_of(exc: BaseException) -> Optional[Problem]:
    """The Problem exc is or wraps (raise … from problem, as far as the causes go): the Go
    SDK's errors.As(err, &problem)."""
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, Problem):
            return e
        seen.add(id(e))
        e = e.__cause__
    return None


def _input(step: Step, input_type: Any) -> Any:
    """The step's input built into input_type (the raw input when None); InputError when it
    does not fit, as the Go SDK's json.Unmarshal of the input into In fails."""
    if not step._has_input:
        raise InputError("the request has no input")
    if input_type is None:
        return step.input
    return build(input_type, step.input, "input")


def _timed_out_report(step: Step) -> Report:
    r = Report(OUTCOME_UNKNOWN)
    r._problem = (CODE_STEP_TIMEOUT, "Step timed out",
                  f"Step {step.number} did not finish within its step timeout of {step.step_timeout}s; "
                  "it may have acted, so the outcome is unknown.")
    return r


def _call(fn: StepFunction, step: Step, input_type: Any) -> Report:
    """Runs fn for step as the Go SDK's Run does (step is already read)."""
    try:
        value = _input(step, input_type)
    except InputError as e:
        return fail(CODE_INVALID_INPUT, "The operation's input is not what the worker reads.", str(e))
    step._started = time.monotonic()  # the step's time starts as its function does
    try:
        rep = fn(step, value)
    except Exception as exc:
        problem = _problem_of(exc)
        if problem is None:
            # The step's own time ran out, not the invocation's: it failed once its time was
            # up, and may have acted before.
            ctx = step.lambda_context
            invocation_left = ctx.get_remaining_time_in_millis() if ctx is not None and hasattr(ctx, "get_remaining_time_in_millis") else 1
            if step.step_timeout > 0 and time.monotonic() - step._started >= step.step_timeout and invocation_left > 0:
                return _timed_out_report(step)
            raise
        try:
            return fail(problem.code, problem.title, problem.detail)
        except InvalidReport as bad:
            raise InvalidReport(f"step {step.number} of {step.operation_id}: {bad}") from exc
    if not isinstance(rep, Report):
        raise InvalidReport(
            f"step {step.number} of {step.operation_id}: the step function returned {type(rep).__name__}, not a Report: "
            "build one with continue_, succeed, fail or result_lost")
    try:
        rep._check()
    except InvalidReport as bad:
        raise InvalidReport(f"step {step.number} of {step.operation_id}: {bad}") from None
    return rep


def run(fn: StepFunction, request: dict, *, input_type: Any = None, lambda_context: Any = None) -> Report:
    """Runs fn for request (a step request as a dict) as the Lambda handler does, without
    Lambda: for a team's unit tests. An input that does not fit input_type is a failed
    report with the code invalid_input (fn does not run); a Problem raised by fn is a failed
    report; any other exception propagates, except one raised after the step's
    stepTimeoutSeconds, which is an outcome_unknown report with the code step_timeout. Like
    the Go SDK's Run, it does not check the request's protocol, operationId or step number
    (the handler does), so a test sets only what its function reads."""
    step = parse_request(request, check=False, lambda_context=lambda_context)
    return _call(fn, step, input_type)


def _now() -> str:
    t = _dt.datetime.now(_dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


class _StepLogger:
    """The one JSON line logged per step, in the field names of longrun's own logs and of
    Powertools for AWS Lambda, as the Go SDK's worker.Start writes it. It never logs the
    input, the state or the result."""

    def __init__(self, stream: Optional[TextIO]) -> None:
        self.stream = stream
        self.service = os.environ.get("POWERTOOLS_SERVICE_NAME") or os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or ""

    def step(self, step: Step, context: Any, rep: Optional[Report], took: float, failed: bool) -> None:
        line: dict[str, Any] = {"timestamp": _now(), "level": "ERROR" if failed else "INFO", "message": "step",
                                "service": self.service}
        request_id = getattr(context, "aws_request_id", None)
        if request_id:
            line["function_request_id"] = request_id
        if step.correlation_id:
            line["correlation_id"] = step.correlation_id
        line["operation_id"] = step.operation_id
        line["step"] = step.number
        line["duration_ms"] = int(took * 1000)
        if failed or rep is None:
            # The exception's text may hold what the step worked on: its kind only.
            line["status"] = "error"
        else:
            line["status"] = rep.status
            if rep._problem is not None:
                line["code"] = rep._problem[0]
        stream = self.stream or sys.stdout
        stream.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")
        stream.flush()


def handler(fn: StepFunction, input_type: Any = None, *, log: bool = True,
            log_stream: Optional[TextIO] = None) -> Callable[[Any, Any], dict]:
    """fn as a handler for AWS Lambda's Python runtime:

        handler = longrun_worker.handler(export, input_type=ExportInput)

    The handler reads the event as a step request, builds the input into input_type (a
    dataclass, a type or a callable; the request's input as it is when None), runs fn and
    returns the report as a dict, which the runtime sends as JSON. An event that is not a
    step request of PROTOCOL is a failed report with the code invalid_request, and an input
    that does not fit one with the code invalid_input: fn does not run. A Problem raised by
    fn is a failed report. Any other exception propagates: Lambda reports a function error,
    which longrun records as outcome_unknown (worker_error), as it does a report that breaks
    the protocol (InvalidReport).

    It writes one JSON line per step to standard output (log_stream), which Lambda sends to
    the function's log group: message "step", with the operation id, the correlation id,
    the step number, its status ("error" when it raised), the problem's code and the
    duration, as the Go SDK's worker.Start does; log=False writes none.
    """
    logger = _StepLogger(log_stream) if log else None

    def lambda_handler(event: Any, context: Any = None) -> dict:
        try:
            step = parse_request(event, lambda_context=context)
        except InvalidRequest as e:
            return fail(CODE_INVALID_REQUEST, "The invocation is not a step request.",
                        f"the payload is not a {PROTOCOL} step request: {e}").to_dict()
        start = time.monotonic()
        try:
            rep = _call(fn, step, input_type)
        except BaseException:
            if logger:
                logger.step(step, context, None, time.monotonic() - start, True)
            raise
        if logger:
            logger.step(step, context, rep, time.monotonic() - start, False)
        return rep.to_dict()

    lambda_handler.__name__ = getattr(fn, "__name__", "handler")
    lambda_handler.__doc__ = getattr(fn, "__doc__", None)
    return lambda_handler
