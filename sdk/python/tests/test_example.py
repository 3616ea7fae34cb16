"""The example worker, run step by step as longrun runs it."""

import importlib.util
import io
import json
import os
import sys
import unittest

from _support import SDK

import longrun_worker as lw


def load_example():
    """A fresh copy of examples/export_worker.py (its export service starts empty)."""
    path = os.path.join(SDK, "examples", "export_worker.py")
    spec = importlib.util.spec_from_file_location("export_worker", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and type hints look the module up
    spec.loader.exec_module(module)
    return module


class ExampleTest(unittest.TestCase):
    def setUp(self):
        self.example = load_example()
        self.log = io.StringIO()
        self.handler = lw.handler(self.example.export, input_type=self.example.ExportInput, log_stream=self.log)

    def run_steps(self, input, **kw):
        return self.example.simulate(input, call=lambda event: self.handler(event, None), **kw)

    def test_three_steps_with_state_and_progress(self):
        reports = self.run_steps({"bucket": "invoices"})
        self.assertEqual(reports, [
            {"status": "continue", "state": {"jobId": "job-1", "polls": 0},
             "progress": {"totalSteps": 3, "percent": 10, "message": "Export submitted."}, "delaySeconds": 30},
            {"status": "continue", "state": {"jobId": "job-1", "polls": 1},
             "progress": {"totalSteps": 3, "percent": 50, "message": "Exporting."}, "wait": True},
            {"status": "succeeded", "result": {"jobId": "job-1", "rows": 92}, "progress": {"totalSteps": 3, "percent": 100}},
        ])
        # Every report is one longrun accepts as it is, once encoded as the runtime encodes it.
        for rep in reports:
            self.assertEqual(lw.validate_report(json.dumps(rep)), rep)
        # One log line per step.
        lines = [json.loads(line) for line in self.log.getvalue().splitlines()]
        self.assertEqual([(l["step"], l["status"]) for l in lines], [(1, "continue"), (2, "continue"), (3, "succeeded")])

    def test_a_redelivered_first_step_submits_once(self):
        first = self.run_steps({"bucket": "invoices"}, max_steps=1)
        again = self.run_steps({"bucket": "invoices"}, max_steps=1)
        self.assertEqual(first, again)
        self.assertEqual(self.example.exports.submitted, 1)

    def test_a_rejected_job_fails(self):
        reports = self.run_steps({"bucket": "forbidden-logs"})
        self.assertEqual(reports, [{"status": "failed", "problem": {
            "code": "export_rejected", "title": "The export service rejected the job.",
            "detail": "the bucket forbidden-logs is not exportable"}}])

    def test_an_input_without_a_bucket_fails_without_running(self):
        reports = self.run_steps({"prefix": "2026/"})
        self.assertEqual(len(reports), 1)
        self.assertEqual(reports[0]["problem"]["code"], "invalid_input")
        self.assertEqual(self.example.exports.submitted, 0)

    def test_a_longer_job(self):
        self.example.exports.polls = 3
        reports = self.run_steps({"bucket": "invoices"})
        self.assertEqual([r["status"] for r in reports], ["continue"] * 4 + ["succeeded"])
        self.assertEqual(reports[3]["state"], {"jobId": "job-1", "polls": 3})


if __name__ == "__main__":
    unittest.main()
