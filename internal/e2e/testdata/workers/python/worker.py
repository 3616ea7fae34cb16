"""The e2e suite's Python worker (type test.python in ../../e2e.types.yaml), written as a
team writes one with longrun_worker (sdk/python), which the types file's local section puts
on PYTHONPATH. The Node.js worker (../node/worker.mjs) does the same steps, so one Go test
(internal/e2e/runtimes_test.go) holds both to the same results.

outcome "succeed": `steps` steps, each carrying every step number so far as state, the last
succeeding with them; "fail": a typed failure at step 2; "wait": a 2-second delay after
step 1, then success with how long the wait took.
"""

import platform
import time
from dataclasses import dataclass
from typing import Literal

import longrun_worker as lw


@dataclass
class Input:  # longrun validated it and applied the schema's defaults
    name: str
    outcome: Literal["succeed", "fail", "wait"]
    steps: int


def now_ms() -> int:
    return int(time.time() * 1000)


def work(step: lw.Step, input: Input) -> lw.Report:
    runtime = "python " + platform.python_version()
    if input.outcome == "wait":
        state = step.state()
        if state is None:
            return lw.continue_({"startedAt": now_ms()}).after(2).with_progress(message="Waiting 2 s.")
        return lw.succeed({"name": input.name, "runtime": runtime, "waitedMs": now_ms() - state["startedAt"]}).with_progress(
            percent=100, message="Waited.")
    seen = (step.state() or {}).get("seen", []) + [step.number]
    if len(seen) != step.number:
        raise RuntimeError(f"step {step.number} got the state of {len(seen) - 1} steps")  # outcome_unknown
    progress = dict(total_steps=input.steps, percent=100 * step.number // input.steps,
                    message=f"step {step.number} of {input.steps}")
    if input.outcome == "fail" and step.number == 2:
        raise lw.Problem("asked_to_fail", "The worker failed as asked.",
                         f"The python worker failed at step {step.number}.")
    if step.number < input.steps:
        return lw.continue_({"seen": seen}).with_progress(**progress)
    return lw.succeed({"name": input.name, "runtime": runtime, "seen": seen,
                       "maxSteps": step.max_steps}).with_progress(**progress)


handler = lw.handler(work, input_type=Input)
