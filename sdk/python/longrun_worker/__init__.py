"""longrun_worker: write the work of a longrun operation type in Python.

longrun runs an operation's work one step per invocation of the type's worker Lambda
function, with a step request (protocol longrun.step.v1, docs/worker-protocol.md). A worker
is a step function: it receives a Step and the operation's input, does one bounded piece of
work and returns a Report:

    import longrun_worker as lw

    @dataclass
    class Input:
        bucket: str

    def export(step: lw.Step, input: Input) -> lw.Report:
        job = step.state()                      # None on the first step
        if job is None:
            job_id = jobs.submit(input.bucket, key=step.operation_id)
            return lw.continue_({"jobId": job_id}).after(30)
        if not jobs.done(job["jobId"]):
            return lw.continue_(job).wait()     # again after the type's stepDelay
        return lw.succeed({"jobId": job["jobId"]})

    handler = lw.handler(export, input_type=Input)

This package is the Python counterpart of the Go SDK (github.com/longrun-dev/longrun/worker):
the same checks, the same limits, the same text cutting, and the same JSON for the same
report. It uses only the standard library.
"""

from .protocol import (CODE_INVALID_INPUT, CODE_INVALID_REQUEST, CODE_RESULT_LOST, CODE_STEP_TIMEOUT,
                       PROTOCOL, VIA_API, VIA_CALLBACK, Awaited, InvalidRequest, Signal, Step,
                       format_time, parse_request)
from .report import (CONTINUE, FAILED, MAX_AWAIT_SECONDS, MAX_DELAY_SECONDS, MAX_DETAIL_CHARS,
                     MAX_MESSAGE_CHARS, MAX_RESULT_BYTES, MAX_STATE_BYTES, MAX_TITLE_CHARS,
                     OUTCOME_UNKNOWN, SUCCEEDED, Continue, InvalidReport, Problem, Progress, Report,
                     clamp, continue_, fail, result_lost, succeed, validate_report)
from .runner import StepFunction, handler, run
from ._input import InputError

__all__ = [
    "PROTOCOL", "CODE_INVALID_INPUT", "CODE_INVALID_REQUEST", "CODE_RESULT_LOST", "CODE_STEP_TIMEOUT",
    "VIA_API", "VIA_CALLBACK", "CONTINUE", "SUCCEEDED", "FAILED", "OUTCOME_UNKNOWN",
    "MAX_STATE_BYTES", "MAX_RESULT_BYTES", "MAX_DELAY_SECONDS", "MAX_AWAIT_SECONDS",
    "MAX_TITLE_CHARS", "MAX_DETAIL_CHARS", "MAX_MESSAGE_CHARS",
    "Step", "Signal", "Awaited", "InvalidRequest", "parse_request", "format_time",
    "Report", "Progress", "Problem", "InvalidReport", "InputError",
    "continue_", "Continue", "succeed", "fail", "result_lost", "clamp", "validate_report",
    "StepFunction", "handler", "run",
]

__version__ = "0.1.0"
