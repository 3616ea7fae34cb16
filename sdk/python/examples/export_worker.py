"""An example worker: a three-step export, with carried state and progress.

The type "export.bucket" exports the objects of a bucket through an external export
service. Step 1 submits the job (once per operation, however often the step is delivered:
the service deduplicates on the operation id), step 2 and later poll it, longrun waiting
between them, and the last step reports the result:

    step 1: {"status":"continue","state":{"jobId":"job-1","polls":0},"progress":{"totalSteps":3,"percent":10,"message":"Export submitted."},"delaySeconds":30}
    step 2: {"status":"continue","state":{"jobId":"job-1","polls":1},"progress":{"totalSteps":3,"percent":50,"message":"Exporting."},"wait":true}
    step 3: {"status":"succeeded","result":{"jobId":"job-1","rows":92},"progress":{"totalSteps":3,"percent":100}}

Deployed, the Lambda function's handler setting is "export_worker.handler" (with the
longrun_worker package in the function's code). Run this file to see the steps as longrun
would run them:

    python3 sdk/python/examples/export_worker.py
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Optional

try:
    import longrun_worker as lw
except ImportError:  # run from the repository without installing the package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import longrun_worker as lw


class Rejected(Exception):
    """The export service refused the job: nothing was submitted."""


class ExportService:
    """Stands in for your client of an export service: a job is done after `polls` polls."""

    def __init__(self, polls: int = 1) -> None:
        self.polls = polls
        self.jobs: dict[str, dict] = {}  # idempotency key → job
        self.submitted = 0

    def submit(self, bucket: str, prefix: str, idempotency_key: str) -> str:
        if bucket.startswith("forbidden"):
            raise Rejected(f"the bucket {bucket} is not exportable")
        job = self.jobs.get(idempotency_key)
        if job is None:  # a redelivered step request finds the same job
            self.submitted += 1
            job = {"id": f"job-{self.submitted}", "polls": 0, "rows": 92}
            self.jobs[idempotency_key] = job
        return job["id"]

    def status(self, job_id: str) -> dict:
        job = next(j for j in self.jobs.values() if j["id"] == job_id)
        job["polls"] += 1
        if job["polls"] <= self.polls:
            return {"status": "running"}
        return {"status": "done", "rows": job["rows"]}


exports = ExportService()


@dataclass
class ExportInput:
    """The type's input (longrun validated it against the type's schema, defaults applied)."""

    bucket: str
    prefix: str = ""


@dataclass
class Job:
    """The state carried from step to step."""

    jobId: str
    polls: int = 0


TOTAL_STEPS = 3


def export(step: lw.Step, input: ExportInput) -> lw.Report:
    job: Optional[Job] = step.state(Job)  # None on the first step
    if job is None:
        try:
            # Keyed by the operation id: one job per operation, however often step 1 runs.
            job_id = exports.submit(input.bucket, input.prefix, idempotency_key=step.operation_id)
        except Rejected as e:  # the service refused: nothing was submitted, nothing will be
            raise lw.Problem("export_rejected", "The export service rejected the job.", str(e))
        # Any other exception escapes: the job may have been submitted (outcome_unknown).
        return (lw.continue_(Job(job_id))
                .after(30)
                .with_progress(total_steps=TOTAL_STEPS, percent=10, message="Export submitted."))

    status = exports.status(job.jobId)  # a read: safe to repeat
    if status["status"] == "running":
        return (lw.continue_(Job(job.jobId, job.polls + 1))  # carried again, or the next step has none
                .wait()  # again after the type's stepDelay
                .with_progress(total_steps=TOTAL_STEPS, percent=50, message="Exporting."))
    return lw.succeed({"jobId": job.jobId, "rows": status["rows"]}).with_progress(total_steps=TOTAL_STEPS, percent=100)


#: The Lambda function's handler.
handler = lw.handler(export, input_type=ExportInput)


def simulate(input: dict, operation_id: str = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", max_steps: int = 20,
             call=None) -> list[dict]:
    """Runs the worker step by step as longrun does: each report's state is the next
    request's, until a report that is not continue. The reports, in order."""
    call = call or (lambda event: handler(event, None))
    reports = []
    state = None
    for number in range(1, max_steps + 1):
        event = {
            "protocol": lw.PROTOCOL, "operationId": operation_id, "type": "export.bucket", "version": 1,
            "input": input, "step": number, "maxSteps": max_steps, "deadline": "2026-12-01T12:00:00.000Z",
            "stepTimeoutSeconds": 60, "correlationId": "4bf92f3577b34da6a3ce929d0e0e4736",
        }
        if state is not None:
            event["state"] = state
        report = call(event)
        reports.append(report)
        if report["status"] != lw.CONTINUE:
            break
        state = report.get("state")
    return reports


if __name__ == "__main__":
    quiet = lw.handler(export, input_type=ExportInput, log=False)  # without the step log lines
    for n, report in enumerate(simulate({"bucket": "invoices"}, call=lambda event: quiet(event, None)), 1):
        print(f"step {n}: {json.dumps(report, separators=(',', ':'))}")
