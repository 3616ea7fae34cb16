import enum
import io
import json
import unittest
from dataclasses import dataclass, field
from typing import Literal, Optional
from unittest import mock

from _support import FakeContext, request, sample

import longrun_worker as lw
from longrun_worker._input import InputError, build


# "from" is a keyword: the field reads the member its metadata names.
@dataclass
class Order:
    to: str
    from_: str = field(default="", metadata={"json": "from"})


class InputTest(unittest.TestCase):
    def test_dataclasses(self):
        @dataclass
        class Item:
            sku: str
            qty: int = 1

        @dataclass
        class In:
            bucket: str
            items: list[Item]
            limit: Optional[int]
            ratio: float = 0.5
            tags: dict[str, str] = field(default_factory=dict)
            mode: Literal["fast", "safe"] = "safe"

        got = build(In, {"bucket": "b", "items": [{"sku": "a"}, {"sku": "b", "qty": 2}], "limit": None, "ratio": 1, "ignored": True})
        self.assertEqual(got, In("b", [Item("a"), Item("b", 2)], None, 1.0))
        self.assertIsInstance(got.ratio, float)
        self.assertEqual(build(In, {"bucket": "b", "items": []}).limit, None)  # Optional: absent is None
        for value, want in [
            ({"items": []}, r"input.bucket is missing"),
            ({"bucket": 7, "items": []}, r"input.bucket must be a string, not a number"),
            ({"bucket": "b", "items": [{"sku": "a", "qty": "2"}]}, r"input.items\[0\].qty must be an integer"),
            ({"bucket": "b", "items": [], "limit": 1.5}, r"input.limit"),
            ({"bucket": "b", "items": [], "mode": "slow"}, r"input.mode must be one of"),
            ({"bucket": "b", "items": {}}, r"input.items must be an array"),
            ({"bucket": "b", "items": [], "tags": {"a": 1}}, r"input.tags.a must be a string"),
            ([], r"input must be an object, not an array"),
            (None, r"input must be an object, not null"),
        ]:
            with self.subTest(value=value), self.assertRaisesRegex(InputError, want):
                build(In, value)

    def test_json_names(self):
        self.assertEqual(build(Order, {"from": "a", "to": "b"}), Order(to="b", from_="a"))

    def test_types_and_callables(self):
        class Color(enum.Enum):
            RED = "red"

        self.assertEqual(build(Color, "red"), Color.RED)
        self.assertEqual(build(dict, {"a": 1}), {"a": 1})
        self.assertEqual(build(int, 3), 3)
        with self.assertRaises(InputError):
            build(int, True)  # a boolean is no integer
        with self.assertRaises(InputError):
            build(bool, 1)
        with self.assertRaises(InputError):
            build(Color, "blue")

        def parse(d):
            return d["n"] * 2

        self.assertEqual(build(parse, {"n": 2}), 4)
        with self.assertRaisesRegex(InputError, "input: 'n'"):
            build(parse, {})


class RunTest(unittest.TestCase):
    def test_typed_input(self):
        seen = []

        def fn(step, order):
            seen.append(order)
            return lw.succeed({"to": order.to})

        rep = lw.run(fn, {"step": 1, "input": {"from": "a", "to": "b"}}, input_type=Order)
        self.assertEqual(rep.to_dict(), {"status": "succeeded", "result": {"to": "b"}})
        self.assertEqual(seen, [Order(to="b", from_="a")])

    def test_input_that_does_not_fit_fails_without_running(self):
        for req in ({"step": 1, "input": {"from": 7, "to": "b"}}, {"step": 1, "input": []}, {"step": 1}, {"step": 1, "input": "x"}):
            ran = []
            rep = lw.run(lambda s, i: ran.append(1) or lw.succeed(), req, input_type=Order)
            with self.subTest(req=req):
                self.assertEqual(ran, [])
                self.assertEqual(rep.status, lw.FAILED)
                self.assertEqual(rep.problem.code, lw.CODE_INVALID_INPUT)
                self.assertEqual(rep.problem.code, "invalid_input")
                self.assertEqual(rep.problem.title, "The operation's input is not what the worker reads.")
                self.assertTrue(rep.problem.detail)

    def test_no_input_type_passes_the_input_as_it_is(self):
        rep = lw.run(lambda s, i: lw.succeed({"got": i}), {"step": 1, "input": {"items": ["a"]}})
        self.assertEqual(rep.result, {"got": {"items": ["a"]}})
        # A request without input fails as in Go (there is nothing to decode).
        self.assertEqual(lw.run(lambda s, i: lw.succeed(), {"step": 1}).problem.code, "invalid_input")

    def test_problems_are_failed_reports(self):
        errors = [
            (lw.Problem("quota_exhausted", "No quota."), {"code": "quota_exhausted", "title": "No quota."}),
            (lw.Problem("too_big", "Too big.", "9 GB"), {"code": "too_big", "title": "Too big.", "detail": "9 GB"}),
            (lw.Problem("long", "t", "d" * 3000), {"code": "long", "title": "t", "detail": "d" * 1999 + "…"}),
        ]
        for problem, want in errors:
            def fn(step, _):
                raise problem

            with self.subTest(problem=problem):
                self.assertEqual(lw.run(fn, {"step": 1, "input": {}}).to_dict(), {"status": "failed", "problem": want})

        class Quota(lw.Problem):
            def __init__(self):
                super().__init__("quota_exhausted", "No quota.")

        def wrapped(step, _):
            try:
                raise Quota()
            except Quota as p:
                raise RuntimeError("export failed") from p  # wrapped, as Go's %w

        self.assertEqual(lw.run(wrapped, {"step": 1, "input": {}}).problem.code, "quota_exhausted")

    def test_other_exceptions_propagate(self):
        class Reset(Exception):
            pass

        def fn(step, _):
            raise Reset("the connection dropped after the charge")

        with self.assertRaises(Reset):
            lw.run(fn, {"step": 1, "input": {}, "stepTimeoutSeconds": 30})

        def during(step, _):  # a Problem seen while handling is no wrapping (no "from")
            try:
                raise lw.Problem("quota", "t")
            except lw.Problem:
                raise Reset("other")

        with self.assertRaises(Reset):
            lw.run(during, {"step": 1, "input": {}})

    def test_wrong_reports_are_errors(self):
        for ret in (None, {"status": "succeeded"}, "succeeded", lw.Report(lw.FAILED)):
            with self.subTest(ret=ret), self.assertRaises(lw.InvalidReport):
                lw.run(lambda s, i: ret, {"step": 1, "input": {}})

        def bad_problem(step, _):
            raise lw.Problem("bad code", "t")

        with self.assertRaisesRegex(lw.InvalidReport, "does not match"):
            lw.run(bad_problem, {"step": 1, "input": {}})

    def test_a_failure_after_the_step_timeout_is_outcome_unknown(self):
        clock = [1000.0]
        with mock.patch("time.monotonic", lambda: clock[0]):
            def slow(step, _):
                clock[0] += 1.5  # the step outlives its timeout of 1 s
                raise TimeoutError("the provider did not answer")

            rep = lw.run(slow, {"step": 2, "input": {}, "stepTimeoutSeconds": 1})
            self.assertEqual(rep.to_dict(), {"status": "outcome_unknown", "problem": {
                "code": "step_timeout", "title": "Step timed out",
                "detail": "Step 2 did not finish within its step timeout of 1s; it may have acted, so the outcome is unknown."}})

            def late_but_done(step, _):
                clock[0] += 1.5
                return lw.succeed({"late": True})  # a late report is kept: its effect is real

            self.assertEqual(lw.run(late_but_done, {"step": 2, "input": {}, "stepTimeoutSeconds": 1}).result, {"late": True})

            def late_problem(step, _):
                clock[0] += 1.5
                raise lw.Problem("nope", "Nothing happened.")

            self.assertEqual(lw.run(late_problem, {"step": 2, "input": {}, "stepTimeoutSeconds": 1}).problem.code, "nope")

            def within(step, _):
                clock[0] += 0.5
                raise TimeoutError("boom")

            with self.assertRaises(TimeoutError):
                lw.run(within, {"step": 2, "input": {}, "stepTimeoutSeconds": 1})

            # When the invocation's own time is up too, it is the invocation's failure.
            with self.assertRaises(TimeoutError):
                lw.run(slow, {"step": 2, "input": {}, "stepTimeoutSeconds": 1}, lambda_context=FakeContext(remaining_ms=0))

    def test_remaining_time_starts_with_the_function(self):
        seen = []
        lw.run(lambda s, i: seen.append(s.remaining_time()) or lw.succeed(), {"step": 1, "input": {}, "stepTimeoutSeconds": 30})
        self.assertGreater(seen[0], 29)
        self.assertLessEqual(seen[0], 30)


class HandlerTest(unittest.TestCase):
    def handler(self, fn, **kw):
        self.log = io.StringIO()
        return lw.handler(fn, log_stream=self.log, **kw)

    def test_runs_a_step(self):
        @dataclass
        class In:
            steps: int

        def fn(step, inp):
            done = step.state() or {"done": 0}
            if step.number < inp.steps:
                return lw.continue_({"done": step.number}).after(60)
            return lw.succeed({"steps": inp.steps, "carried": done["done"]})

        h = self.handler(fn, input_type=In)
        self.assertEqual(h(sample("step-request-first"), None), {"status": "continue", "state": {"done": 1}, "delaySeconds": 60})
        self.assertEqual(h(sample("step-request-later"), None), {"status": "succeeded", "result": {"carried": 2, "steps": 3}})

    def test_refuses_what_is_not_a_step_request(self):
        ran = []
        h = self.handler(lambda s, i: ran.append(1) or lw.succeed())
        for event in ("not json", {"protocol": "longrun.step.v1"}, [], None, request(protocol="longrun.step.v2"),
                      request(step=0), request(operationId="")):
            with self.subTest(event=str(event)[:50]):
                out = h(event, None)
                self.assertEqual(out["status"], "failed")
                self.assertEqual(out["problem"]["code"], "invalid_request")
                self.assertEqual(out["problem"]["title"], "The invocation is not a step request.")
                self.assertTrue(out["problem"]["detail"].startswith("the payload is not a longrun.step.v1 step request: "))
        self.assertEqual(ran, [])
        self.assertEqual(self.log.getvalue(), "")  # no step ran: no step line
        self.assertEqual(h(request(protocol="x"), None)["problem"]["detail"],
                         'the payload is not a longrun.step.v1 step request: protocol "x" is not "longrun.step.v1"')
        # A protocol of any length still makes a failed report: the detail is cut.
        self.assertEqual(len(h(request(protocol="x" * 5000), None)["problem"]["detail"]), 2000)

    def test_invalid_input(self):
        out = self.handler(lambda s, i: lw.succeed(), input_type=Order)(request(input={"to": 3}), None)
        self.assertEqual(out["problem"]["code"], "invalid_input")

    def test_exceptions_propagate_and_are_logged(self):
        def fn(step, _):
            raise ConnectionResetError("secret-marker")

        h = self.handler(fn)
        with self.assertRaises(ConnectionResetError):
            h(request(correlationId="corr-1"), FakeContext("req-9"))
        line = json.loads(self.log.getvalue())
        self.assertEqual(line["level"], "ERROR")
        self.assertEqual(line["status"], "error")
        self.assertNotIn("secret-marker", self.log.getvalue())

    def test_logs_one_line_per_step(self):
        env = {"POWERTOOLS_SERVICE_NAME": "", "AWS_LAMBDA_FUNCTION_NAME": "provision-dev-worker"}
        with mock.patch.dict("os.environ", env):
            def fn(step, inp):
                if step.number == 3:
                    raise lw.Problem("quota_exhausted", "No quota.")
                return lw.continue_({"cursor": "state-marker"})

            h = self.handler(fn)
            for n in (1, 2, 3):
                h(request(step=n, input={"secret": "input-marker"}, correlationId="corr-1"), FakeContext("req-1"))
            h(request(step=4, input={}), None)
        lines = self.log.getvalue().splitlines()
        self.assertEqual(len(lines), 4)
        self.assertNotIn("marker", self.log.getvalue())
        first = json.loads(lines[0])
        self.assertEqual(list(first), ["timestamp", "level", "message", "service", "function_request_id", "correlation_id",
                                       "operation_id", "step", "duration_ms", "status"])
        self.assertEqual({k: first[k] for k in ("level", "message", "service", "function_request_id", "correlation_id", "operation_id", "step", "status")},
                         {"level": "INFO", "message": "step", "service": "provision-dev-worker", "function_request_id": "req-1",
                          "correlation_id": "corr-1", "operation_id": "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "step": 1, "status": "continue"})
        self.assertRegex(first["timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertIsInstance(first["duration_ms"], int)
        third = json.loads(lines[2])
        self.assertEqual((third["status"], third["code"]), ("failed", "quota_exhausted"))
        fourth = json.loads(lines[3])
        self.assertNotIn("correlation_id", fourth)
        self.assertNotIn("function_request_id", fourth)

    def test_powertools_service_name_wins(self):
        with mock.patch.dict("os.environ", {"POWERTOOLS_SERVICE_NAME": "exports", "AWS_LAMBDA_FUNCTION_NAME": "fn"}):
            h = self.handler(lambda s, i: lw.succeed())
        h(request(), None)
        self.assertEqual(json.loads(self.log.getvalue())["service"], "exports")

    def test_log_false_writes_nothing(self):
        out = io.StringIO()
        with mock.patch("sys.stdout", out):
            lw.handler(lambda s, i: lw.succeed(), log=False)(request(), None)
        self.assertEqual(out.getvalue(), "")

    def test_logs_to_stdout_by_default(self):
        out = io.StringIO()
        with mock.patch("sys.stdout", out):
            lw.handler(lambda s, i: lw.succeed())(request(), None)
        self.assertEqual(json.loads(out.getvalue())["status"], "succeeded")

    def test_the_step_has_the_lambda_context(self):
        ctx = FakeContext(remaining_ms=1234)
        seen = []
        self.handler(lambda s, i: seen.append(s.lambda_context) or lw.succeed())(request(), ctx)
        self.assertIs(seen[0], ctx)

    def test_the_answer_is_json(self):
        h = self.handler(lambda s, i: lw.continue_({"t": (1, 2)}).with_progress(percent=12.5))
        out = h(request(), None)
        self.assertEqual(json.loads(json.dumps(out)), {"status": "continue", "state": {"t": [1, 2]}, "progress": {"percent": 12.5}})


if __name__ == "__main__":
    unittest.main()
