import datetime as dt
import decimal
import unittest
from dataclasses import dataclass

from _support import FakeContext, request, sample

import longrun_worker as lw


class StepViewTest(unittest.TestCase):
    def test_the_step_is_the_request(self):
        step = lw.parse_request(sample("step-request-later"))
        self.assertEqual(step.operation_id, "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3")
        self.assertEqual((step.type, step.version, step.number, step.max_steps), ("demo.task", 1, 3, 20))
        self.assertEqual(step.deadline, dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc))
        self.assertEqual(step.deadline.tzinfo, dt.timezone.utc)
        self.assertEqual(step.step_timeout, 60)
        self.assertEqual(step.correlation_id, "4bf92f3577b34da6a3ce929d0e0e4736")
        self.assertEqual(step.input["target"], "demo:alpha")
        self.assertEqual(step.state(), {"done": 2})
        self.assertEqual(step.attempt, 1)
        self.assertEqual(step.idempotency_key(), "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3-step-3")
        self.assertEqual(step.signals, [])
        self.assertIsNone(step.awaited)
        self.assertIsNone(step.signal("approval"))
        self.assertIsNone(step.callback_url("payment-settled"))

    def test_first_step(self):
        step = lw.parse_request(sample("step-request-first"))
        self.assertIsNone(step.state())
        self.assertIsNone(step.correlation_id)
        self.assertEqual(step.number, 1)

    def test_attempt(self):
        self.assertEqual(lw.parse_request(request(attempt=2)).attempt, 2)
        self.assertEqual(lw.parse_request(request(attempt=None)).attempt, 1)
        retried = lw.parse_request(request(attempt=3, step=4))
        self.assertEqual(retried.idempotency_key(), "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3-step-4")

    def test_idempotency_keys_differ_per_step_and_operation(self):
        keys = set()
        for op in ("op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "op_01JDY3Q4W5E6R7T8Y9V0A1B2C4"):
            for n in range(1, 13):
                key = lw.parse_request(request(operationId=op, step=n)).idempotency_key()
                self.assertTrue(key.startswith(op))
                self.assertNotIn(key, keys)
                keys.add(key)

    def test_state(self):
        self.assertIsNone(lw.parse_request(request(step=2)).state())
        self.assertIsNone(lw.parse_request(request(step=2, state=None)).state())  # null is none
        self.assertEqual(lw.parse_request(request(step=2, state=7)).state(), 7)
        self.assertEqual(lw.parse_request(request(step=2, state=0)).state(), 0)
        self.assertEqual(lw.parse_request(request(step=2, state={})).state(), {})
        step = lw.parse_request(request(step=2, state={"page": [1]}))
        step.state()["page"].append(2)  # a copy
        self.assertEqual(step.state(), {"page": [1]})

        @dataclass
        class Cursor:
            page: int

        self.assertEqual(lw.parse_request(request(step=2, state={"page": 3})).state(Cursor), Cursor(3))
        with self.assertRaisesRegex(ValueError, "decode the state of step 2"):
            lw.parse_request(request(step=2, state={"page": "x"})).state(Cursor)
        self.assertIsNone(lw.parse_request(request(step=2)).state(Cursor))

    def test_signals(self):
        req = request(step=2, signals=[
            {"name": "approval", "data": {"approved": False}, "receivedAt": "2026-12-02T14:01:00.000Z", "sender": "arn:bob", "via": "api"},
            {"name": "comment", "data": {"text": "ship it"}, "receivedAt": "2026-12-02T14:03:00.000Z", "sender": "arn:alice", "via": "api"},
            {"name": "approval", "data": {"approved": True}, "receivedAt": "2026-12-02T14:05:16.512Z", "sender": "arn:alice", "via": "api"},
            {"name": "paid", "data": {"amount": 1200}, "receivedAt": "2026-12-02T14:06:00.000Z", "via": "callback"},
        ], awaited={"signal": "approval", "timedOut": False},
            callbacks={"paid": "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d"})
        step = lw.parse_request(req)
        self.assertEqual([s.name for s in step.signals], ["approval", "comment", "approval", "paid"])
        last = step.signal("approval")  # of two approvals, the last stands
        self.assertEqual(last.data, {"approved": True})
        self.assertEqual(last.sender, "arn:alice")
        self.assertEqual(last.via, lw.VIA_API)
        self.assertEqual(last.received_at, dt.datetime(2026, 12, 2, 14, 5, 16, 512000, tzinfo=dt.timezone.utc))
        paid = step.signal("paid")
        self.assertIsNone(paid.sender)
        self.assertEqual(paid.via, lw.VIA_CALLBACK)
        self.assertEqual(paid.to_json(), {"name": "paid", "data": {"amount": 1200}, "receivedAt": "2026-12-02T14:06:00.000Z", "via": "callback"})
        self.assertEqual(step.awaited, lw.Awaited(signal="approval", timed_out=False))
        self.assertEqual(step.callback_url("paid"), "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d")
        self.assertIsNone(step.callback_url("approval"))
        self.assertIsNone(step.signal("missing"))

        @dataclass
        class Approval:
            approved: bool
            comment: str = ""

        self.assertEqual(last.decode(Approval), Approval(approved=True))
        self.assertEqual(last.decode(), {"approved": True})
        with self.assertRaisesRegex(ValueError, "decode the data of the signal paid"):
            paid.decode(Approval)
        self.assertEqual(lw.Signal("x", None, None, None, "api").decode(), {})  # no data is {}

    def test_awaited_timed_out(self):
        step = lw.parse_request(request(step=2, awaited={"signal": "approval", "timedOut": True}))
        self.assertTrue(step.awaited.timed_out)

    def test_times(self):
        step = lw.parse_request(request(deadline="2026-12-01T13:30:00.250+01:30"))
        self.assertEqual(step.deadline, dt.datetime(2026, 12, 1, 12, 0, 0, 250000, tzinfo=dt.timezone.utc))
        self.assertEqual(lw.format_time(step.deadline), "2026-12-01T12:00:00.250Z")

    def test_integers_as_json_schema_counts_them(self):
        step = lw.parse_request(request(step=2.0, version=decimal.Decimal("1E0"), maxSteps=20))
        self.assertEqual((step.number, step.version), (2, 1))
        for bad in (2.5, decimal.Decimal("2.0000000000000001"), "2", True, 10 ** 18, [2]):
            with self.subTest(bad=bad), self.assertRaises(lw.InvalidRequest):
                lw.parse_request(request(step=bad))
        self.assertEqual(lw.parse_request(request(step=10 ** 18 - 1)).number, 10 ** 18 - 1)

    def test_refusals(self):
        for req, want in [
            (request(protocol="longrun.step.v2"), 'protocol "longrun.step.v2" is not "longrun.step.v1"'),
            (request(protocol=...), 'protocol "" is not "longrun.step.v1"'),
            (request(operationId=...), "operationId is missing"),
            (request(operationId=""), "operationId is missing"),
            (request(step=0), r"step 0 is not a step number \(they start at 1\)"),
            (request(step=-1), "step -1 is not a step number"),
            (request(step=...), "step 0 is not a step number"),
            (request(step="2"), 'step must be a number, not "2"'),
            (request(deadline="tomorrow"), "deadline"),
            (request(deadline=7), "deadline"),
            (request(signals=[None]), "a signal must be a JSON object"),
            (request(signals=[{"name": 1}]), "name must be a string"),
            (request(awaited={"signal": "a", "timedOut": "yes"}), "timedOut must be a boolean"),
            (request(callbacks={"a": 1}), "must be a string"),
            ([], "a step request must be a JSON object"),
            (None, "a step request must be a JSON object"),
            ("x", "a step request must be a JSON object"),
            ({"Protocol": "longrun.step.v1", "operationId": "op_1", "step": 1}, 'protocol ""'),  # exact names
        ]:
            with self.subTest(req=str(req)[:60]), self.assertRaisesRegex(lw.InvalidRequest, want):
                lw.parse_request(req)

    def test_unknown_members_are_ignored(self):
        step = lw.parse_request(request(seal="abc", later={"x": 1}, signals=[
            {"name": "a", "data": {}, "receivedAt": "2026-12-02T14:01:00.000Z", "via": "api", "extra": 1}]))
        self.assertEqual(step.number, 1)

    def test_unchecked_for_tests(self):
        step = lw.parse_request({"step": 2, "input": {}}, check=False)
        self.assertEqual((step.number, step.operation_id, step.deadline), (2, "", None))

    def test_remaining_time(self):
        step = lw.parse_request(request(stepTimeoutSeconds=60), lambda_context=FakeContext(remaining_ms=5000))
        self.assertLessEqual(step.remaining_time(), 5.0)
        self.assertGreater(step.remaining_time(), 4.0)
        step = lw.parse_request(request(stepTimeoutSeconds=2), lambda_context=FakeContext(remaining_ms=900000))
        self.assertLessEqual(step.remaining_time(), 2.0)
        self.assertEqual(lw.parse_request({"input": {}}, check=False).remaining_time(), float("inf"))


if __name__ == "__main__":
    unittest.main()
