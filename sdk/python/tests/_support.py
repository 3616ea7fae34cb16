"""Shared by the tests: the package on sys.path, the repository's files, and helpers."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(SDK))
if SDK not in sys.path:
    sys.path.insert(0, SDK)

SAMPLES = os.path.join(REPO, "events", "samples", "worker")
VECTORS = os.path.join(REPO, "api", "worker", "vectors")


def sample(name):
    """A sample of events/samples/worker, decoded."""
    with open(os.path.join(SAMPLES, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def request(**members):
    """A valid step request (step 1 of demo.task), with members replaced; a member given
    as ... is removed."""
    req = {
        "protocol": "longrun.step.v1", "operationId": "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "type": "demo.task",
        "version": 1, "input": {}, "step": 1, "maxSteps": 20, "deadline": "2026-12-01T12:00:00.000Z",
        "stepTimeoutSeconds": 60,
    }
    for k, v in members.items():
        if v is ...:
            req.pop(k, None)
        else:
            req[k] = v
    return req


class FakeContext:
    """A Lambda context as the Python runtime passes one."""

    def __init__(self, request_id="req-1", remaining_ms=60000):
        self.aws_request_id = request_id
        self._remaining = remaining_ms

    def get_remaining_time_in_millis(self):
        return self._remaining
