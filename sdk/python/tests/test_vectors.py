"""The protocol's shared test vectors (api/worker/vectors, whose README.md is the format),
run against this package:

- requests/: each request is handed to handler() with a function that records the step it
  is given; a valid one runs it once and its view equals "step", an invalid one is answered
  with a failed report, code invalid_request, without running it.
- reports/: validate_report reads each report as written (its exact text), and what it read,
  mapped to the recorder's form, equals "recorder"; one the recorder records as
  invalid_report it refuses.
- builds/: each build is made with continue_/succeed/fail/result_lost and their modifiers
  and sends exactly "report", or raises InvalidReport where "report" is null.

Values are compared as JSON values: numbers by their decimal value, a zero's sign counting.
The "error" texts are for people and are not compared.
"""

import decimal
import glob
import json
import os
import unittest

from _support import VECTORS

import longrun_worker as lw
from longrun_worker import _json


def vectors(kind, exact=False):
    """(name, document, raw members of its file) of every vector of kind; exact reads the
    document's non-integer numbers as decimal.Decimal."""
    out = []
    for path in sorted(glob.glob(os.path.join(VECTORS, kind, "*.json"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        doc = json.loads(text, parse_float=decimal.Decimal) if exact else json.loads(text)
        out.append((os.path.basename(path)[:-5], doc, _json.raw_members(text)))
    return out


def canon(value):
    """value for comparing as JSON values (the vectors' README): member order aside, numbers by
    their decimal value (1e3, 1000 and 1000.0 alike, a float by the decimal it writes as), a
    zero's sign counting."""
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        value = decimal.Decimal(repr(value))
    if isinstance(value, (int, decimal.Decimal)):
        d = decimal.Decimal(value)
        return ("number", d, d.is_zero() and d.is_signed())
    raise TypeError(f"not a JSON value: {value!r}")


def view(step):
    """The step as the request vectors write it."""
    return {
        "operationId": step.operation_id, "type": step.type, "version": step.version, "number": step.number,
        "maxSteps": step.max_steps, "attempt": step.attempt,
        "deadline": lw.format_time(step.deadline) if step.deadline else None,
        "stepTimeoutSeconds": step.step_timeout, "correlationId": step.correlation_id or "",
        "input": step.input, "state": step.state(),
        "signals": [s.to_json() for s in step.signals],
        "awaited": {"signal": step.awaited.signal, "timedOut": step.awaited.timed_out} if step.awaited else None,
        "callbacks": step.callbacks,
    }


INVALID_REPORT = {"kind": "outcome_unknown", "code": "invalid_report", "problem": None, "progress": None}


def recorded(report):
    """What the recorder makes of a report validate_report accepted, as the report vectors
    write it."""
    p = report.get("progress")
    progress = None if p is None else {
        "totalSteps": p.get("totalSteps"), "percent": p.get("percent"), "message": p.get("message", "")}
    pr = report.get("problem")
    problem = None if pr is None else {"code": pr["code"], "title": pr["title"], "detail": pr.get("detail", "")}
    status = report["status"]
    if status == lw.CONTINUE:
        return {"kind": "continue", "state": report.get("state"), "progress": progress,
                "delaySeconds": report.get("delaySeconds"), "wait": report.get("wait", False), "await": report.get("await")}
    if status == lw.SUCCEEDED:
        return {"kind": "succeeded", "result": report.get("result", {}), "progress": progress}
    if status == lw.FAILED:
        return {"kind": "failed", "problem": problem, "progress": progress}
    return {"kind": "outcome_unknown", "code": problem["code"] if problem else "result_lost", "problem": problem, "progress": progress}


def build(b):
    """The report a build vector describes, built with this package's API."""
    status = b["status"]
    if status == lw.CONTINUE:
        rep = lw.continue_(b.get("state"))
    elif status == lw.SUCCEEDED:
        rep = lw.succeed(b.get("result"))
    elif status == lw.FAILED:
        p = b["problem"]
        rep = lw.fail(p["code"], p["title"], p.get("detail", ""))
    elif status == lw.OUTCOME_UNKNOWN:
        rep = lw.result_lost(b.get("detail", ""))
    else:
        raise AssertionError(f"a build of status {status!r}")
    if b.get("wait"):
        rep = rep.wait()
    if "delaySeconds" in b:
        rep = rep.after(b["delaySeconds"])
    if "await" in b:
        rep = rep.await_signal(b["await"]["signal"], b["await"]["timeoutSeconds"])
    if "progress" in b:
        p = b["progress"]
        rep = rep.with_progress(total_steps=p.get("totalSteps"), percent=p.get("percent"), message=p.get("message"))
    return rep


@unittest.skipUnless(os.path.isdir(VECTORS), "no api/worker/vectors")
class VectorsTest(unittest.TestCase):
    def test_there_are_vectors(self):
        for kind in ("requests", "reports", "builds"):
            self.assertTrue(vectors(kind), f"no {kind} vectors")

    def test_requests(self):
        given = []
        handler = lw.handler(lambda step, input: given.append(step) or lw.succeed(), log=False)
        for name, doc, raw in vectors("requests", exact=True):
            with self.subTest(vector=name):
                given.clear()
                if "requestText" in doc:
                    # Not JSON. Lambda's Python runtime refuses such a payload before any
                    # handler runs; handed over as text, the handler refuses it too.
                    text = doc["requestText"]
                    try:
                        event = json.loads(text, parse_float=decimal.Decimal)
                    except ValueError:
                        event = text
                else:
                    text = raw["request"]
                    event = json.loads(text, parse_float=decimal.Decimal)  # numbers exactly, as sent
                out = handler(event, None)
                if doc["valid"]:
                    self.assertEqual(out, {"status": "succeeded"})
                    self.assertEqual(len(given), 1)
                    self.assertEqual(canon(view(given[0])), canon(doc["step"]))
                    # As the Lambda runtime hands it over (numbers as floats): the same step.
                    self.assertEqual(canon(view(lw.parse_request(json.loads(text)))), canon(doc["step"]))
                else:
                    self.assertEqual(given, [])
                    self.assertEqual((out["status"], out["problem"]["code"]), ("failed", "invalid_request"))
                    self.assertEqual(lw.validate_report(out), out)
                    with self.assertRaises(lw.InvalidRequest):
                        lw.parse_request(event)

    def test_reports(self):
        for name, doc, raw in vectors("reports", exact=True):
            with self.subTest(vector=name):
                text = doc["reportText"] if "reportText" in doc else raw["report"]
                try:
                    got = recorded(lw.validate_report(text))
                except lw.InvalidReport:
                    got = INVALID_REPORT
                self.assertEqual(canon(got), canon(doc["recorder"]))
                # The same value decoded (not its text): the same answer, except where the
                # text's own spelling decides (an exact number, the bytes of an escape).
                if "report" in doc and not set(doc.get("tags", [])) & {"exact-numbers", "size-limit"}:
                    try:
                        got = recorded(lw.validate_report(json.loads(text)))
                    except lw.InvalidReport:
                        got = INVALID_REPORT
                    self.assertEqual(canon(got), canon(doc["recorder"]))

    def test_builds(self):
        for name, doc, raw in vectors("builds"):
            with self.subTest(vector=name):
                if doc.get("error") is not None or doc["report"] is None:
                    with self.assertRaises(lw.InvalidReport):
                        build(doc["build"]).to_dict()
                    continue
                rep = build(doc["build"])
                self.assertEqual(canon(rep.to_dict()), canon(doc["report"]))
                self.assertEqual(canon(json.loads(rep.to_json())), canon(doc["report"]))
                # What the package sends, longrun accepts as it is.
                self.assertEqual(lw.validate_report(rep.to_json()), rep.to_dict())


if __name__ == "__main__":
    unittest.main()
