import datetime as dt
import json
import math
import unittest
from dataclasses import dataclass

import _support  # noqa: F401  (the package on sys.path)

import longrun_worker as lw


def same(report, want):
    """The report's JSON, as a JSON value, is want (a JSON text, as the Go SDK writes it)."""
    return json.loads(report.to_json()) == json.loads(want) and report.to_dict() == json.loads(want)


class BuildTest(unittest.TestCase):
    # The Go SDK's outputs for the same calls (worker/example_test.go and worker_test.go).
    def test_the_go_sdks_examples(self):
        cases = [
            (lw.continue_({"id": "job-invoices-1"}).after(30), '{"status":"continue","state":{"id":"job-invoices-1"},"delaySeconds":30}'),
            (lw.continue_({"id": "job-invoices-1"}).wait(), '{"status":"continue","state":{"id":"job-invoices-1"},"wait":true}'),
            (lw.succeed({"jobId": "job-invoices-1"}), '{"status":"succeeded","result":{"jobId":"job-invoices-1"}}'),
            (lw.continue_({"page": 3}).after(90).with_progress(total_steps=10, percent=30.0, message="3 of 10 pages"),
             '{"status":"continue","state":{"page":3},"progress":{"totalSteps":10,"percent":30,"message":"3 of 10 pages"},"delaySeconds":90}'),
            (lw.continue_({"service": "billing"}).await_signal("approval", 72 * 3600),
             '{"status":"continue","state":{"service":"billing"},"await":{"signal":"approval","timeoutSeconds":259200}}'),
            (lw.fail("not_approved", "No one approved the change in time.", ""),
             '{"status":"failed","problem":{"code":"not_approved","title":"No one approved the change in time."}}'),
            (lw.fail("rejected", "The change was rejected.", "not on a Friday"),
             '{"status":"failed","problem":{"code":"rejected","title":"The change was rejected.","detail":"not on a Friday"}}'),
            (lw.continue_({"n": 1}).await_signal("approval", dt.timedelta(minutes=90, milliseconds=1)),
             '{"status":"continue","state":{"n":1},"await":{"signal":"approval","timeoutSeconds":5401}}'),
            (lw.continue_({"done": 1}).after(60), '{"status":"continue","state":{"done":1},"delaySeconds":60}'),
            (lw.succeed({"carried": 2, "steps": 3}), '{"status":"succeeded","result":{"carried":2,"steps":3}}'),
            (lw.result_lost("gone"), '{"status":"outcome_unknown","problem":{"code":"result_lost","title":"The result of the step is lost.","detail":"gone"}}'),
            (lw.result_lost(), '{"status":"outcome_unknown","problem":{"code":"result_lost","title":"The result of the step is lost."}}'),
            (lw.succeed(), '{"status":"succeeded"}'),
            (lw.continue_(), '{"status":"continue"}'),
            (lw.continue_(None).wait().after(0), '{"status":"continue","delaySeconds":0,"wait":true}'),
            (lw.succeed().with_progress(), '{"status":"succeeded","progress":{}}'),
            (lw.succeed().with_progress(percent=-0.0), '{"status":"succeeded","progress":{"percent":0}}'),
        ]
        for rep, want in cases:
            with self.subTest(want=want):
                self.assertTrue(same(rep, want), f"{rep.to_json()} != {want}")

    def test_json_text_is_gos(self):
        # Go escapes <, > and & (and U+2028/9) and writes an integral float without ".0".
        rep = lw.continue_({"html": "<a&b>", "ls": "\u2028", "f": 2.0, "g": 1e-7, "h": 1e21})
        self.assertEqual(rep.to_json(), '{"status":"continue","state":{"html":"\\u003ca\\u0026b\\u003e","ls":"\\u2028","f":2,"g":1e-7,"h":1e+21}}')
        self.assertEqual(rep.state, {"html": "<a&b>", "ls": "\u2028", "f": 2, "g": 1e-7, "h": 1e21})

    def test_continue_is_continue_(self):
        self.assertIs(lw.Continue, lw.continue_)

    def test_dataclasses_are_json_objects(self):
        @dataclass
        class Job:
            id: str
            polls: int = 0

        self.assertEqual(lw.continue_(Job("j1")).to_dict(), {"status": "continue", "state": {"id": "j1", "polls": 0}})
        self.assertEqual(lw.succeed(Job("j1")).result, {"id": "j1", "polls": 0})

    def test_states(self):
        for state in (0, "", False, [], {}, "x", [1, "a"]):
            with self.subTest(state=state):
                self.assertEqual(lw.continue_(state).to_dict(), {"status": "continue", "state": state})
        self.assertEqual(lw.continue_("x" * (lw.MAX_STATE_BYTES - 2)).status, "continue")
        with self.assertRaisesRegex(lw.InvalidReport, "32769 bytes, more than 32768"):
            lw.continue_("x" * (lw.MAX_STATE_BYTES - 1))
        with self.assertRaisesRegex(lw.InvalidReport, "more than 32768"):  # bytes of UTF-8, not characters
            lw.continue_("é" * 16384)
        with self.assertRaisesRegex(lw.InvalidReport, "more than 32768"):  # as Go writes it: < is \u003c
            lw.continue_("<" * 5462)
        for bad in (float("nan"), float("inf"), {1.5: "x"}, object(), {"s": {1, 2}}):
            with self.subTest(bad=bad), self.assertRaisesRegex(lw.InvalidReport, "encode the state"):
                lw.continue_(bad)
        cyclic = []
        cyclic.append(cyclic)
        with self.assertRaisesRegex(lw.InvalidReport, "encode the state"):
            lw.continue_(cyclic)

    def test_the_state_is_copied(self):
        state = {"pages": [1]}
        rep = lw.continue_(state)
        state["pages"].append(2)
        rep.state["pages"].append(3)
        self.assertEqual(rep.state, {"pages": [1]})

    def test_results(self):
        self.assertEqual(lw.succeed().result, {})
        self.assertEqual(lw.succeed(None).to_dict(), {"status": "succeeded"})
        self.assertIsNone(lw.continue_().result)
        for bad in ([1], "done", 3):
            with self.subTest(bad=bad), self.assertRaisesRegex(lw.InvalidReport, "must be a JSON object"):
                lw.succeed(bad)
        self.assertEqual(lw.succeed({"k": "v" * (lw.MAX_RESULT_BYTES - 8)}).status, "succeeded")
        with self.assertRaisesRegex(lw.InvalidReport, "65537 bytes, more than 65536"):
            lw.succeed({"k": "v" * (lw.MAX_RESULT_BYTES - 7)})

    def test_delays(self):
        self.assertEqual(lw.continue_().after(1.5).delay_seconds, 2)  # rounded up
        self.assertEqual(lw.continue_().after(1e-9).delay_seconds, 1)
        self.assertEqual(lw.continue_().after(0).delay_seconds, 0)
        self.assertEqual(lw.continue_().after(dt.timedelta(hours=24)).delay_seconds, 86400)
        for bad in (-1, -0.001, 86400.001, 86401):
            with self.subTest(bad=bad), self.assertRaisesRegex(lw.InvalidReport, "not between 0 and 86400"):
                lw.continue_().after(bad)
        with self.assertRaises(lw.InvalidReport):
            lw.continue_().after("30")
        rep = lw.continue_().wait()
        self.assertTrue(rep.waits_step_delay)
        self.assertIsNone(rep.delay_seconds)

    def test_awaits(self):
        rep = lw.continue_().await_signal("payment-settled", 1.5)
        self.assertEqual(rep.awaits_signal, ("payment-settled", 2))
        self.assertEqual(lw.continue_().await_signal("a", 1e-9).awaits_signal, ("a", 1))
        self.assertEqual(lw.continue_().await_signal("a" + "b" * 63, 2592000).awaits_signal[1], 2592000)
        for name, timeout, want in [
            ("approval", 0, "is not more than 0 and at most 2592000"),
            ("approval", -1, "is not more than 0"),
            ("approval", 2592000.5, "is not more than 0"),
            ("Approval", 10, "does not match"),
            ("", 10, "does not match"),
            ("approval.v2", 10, "does not match"),
            ("1approval", 10, "does not match"),
            ("a" + "b" * 64, 10, "does not match"),
            ("approval\n", 10, "does not match"),
        ]:
            with self.subTest(name=name, timeout=timeout), self.assertRaisesRegex(lw.InvalidReport, want):
                lw.continue_().await_signal(name, timeout)
        # A report waits for a signal or for a time, not both, whatever the order.
        for build in (lambda: lw.continue_().wait().await_signal("a", 1), lambda: lw.continue_().after(0).await_signal("a", 1),
                      lambda: lw.continue_().await_signal("a", 1).after(0), lambda: lw.continue_().await_signal("a", 1).wait()):
            with self.assertRaisesRegex(lw.InvalidReport, "not both"):
                build()

    def test_continue_only(self):
        for rep in (lw.succeed(), lw.fail("x", "t"), lw.result_lost()):
            for method, args in (("wait", ()), ("after", (1,)), ("await_signal", ("a", 1))):
                with self.subTest(status=rep.status, method=method), self.assertRaisesRegex(lw.InvalidReport, "only for a continue report"):
                    getattr(rep, method)(*args)

    def test_problems(self):
        rep = lw.fail("quota_exhausted", "No quota.", "50 of 50.")
        self.assertEqual(rep.problem, lw.Problem("quota_exhausted", "No quota.", "50 of 50."))
        self.assertEqual(lw.fail("quota", "t", None).to_dict(), {"status": "failed", "problem": {"code": "quota", "title": "t"}})
        for code in ("Quota", "_quota", "quota-x", "q" * 65, "", "quota\n"):
            with self.subTest(code=code), self.assertRaisesRegex(lw.InvalidReport, "does not match"):
                lw.fail(code, "t")
        self.assertEqual(lw.fail("q" * 64, "t").problem.code, "q" * 64)
        with self.assertRaisesRegex(lw.InvalidReport, "title must have 1 to 200"):
            lw.fail("quota", "")
        with self.assertRaises(lw.InvalidReport):
            lw.fail("quota", None)

    def test_progress(self):
        rep = lw.succeed().with_progress(total_steps=3, percent=50, message="half")
        self.assertEqual(rep.progress, lw.Progress(3, 50.0, "half"))
        self.assertEqual(rep.to_dict()["progress"], {"totalSteps": 3, "percent": 50, "message": "half"})
        self.assertEqual(lw.succeed().with_progress(total_steps=0, message="").to_dict(), {"status": "succeeded", "progress": {}})
        self.assertEqual(lw.succeed().with_progress(percent=33.5).to_dict()["progress"], {"percent": 33.5})
        for kwargs, want in [({"total_steps": -1}, "totalSteps -1"), ({"percent": 100.01}, "percent 100.01"),
                             ({"percent": -0.5}, "percent"), ({"percent": math.nan}, "percent"),
                             ({"percent": True}, "must be a number"), ({"total_steps": 1.0}, "must be an integer"),
                             ({"message": 3}, "must be a string")]:
            with self.subTest(kwargs=kwargs), self.assertRaisesRegex(lw.InvalidReport, want):
                lw.succeed().with_progress(**kwargs)
        # with_progress replaces, and any status may carry progress.
        rep = lw.fail("x", "t").with_progress(percent=10).with_progress(message="m")
        self.assertEqual(rep.to_dict(), {"status": "failed", "problem": {"code": "x", "title": "t"}, "progress": {"message": "m"}})

    def test_reports_are_values(self):
        base = lw.continue_({"page": 1})
        with_progress = base.with_progress(total_steps=4, percent=10)
        waiting = with_progress.wait()
        delayed = with_progress.after(90)
        self.assertIsNone(base.progress)
        self.assertFalse(base.waits_step_delay or with_progress.waits_step_delay)
        self.assertTrue(waiting.waits_step_delay)
        self.assertIsNone(waiting.delay_seconds)
        self.assertEqual(delayed.delay_seconds, 90)
        self.assertFalse(delayed.waits_step_delay)
        self.assertEqual(base, lw.continue_({"page": 1}))
        self.assertNotEqual(base, with_progress)


class ClampTest(unittest.TestCase):
    # longrun's runes.Cut tests (internal/core/runes), and the Go SDK's.
    def test_cut(self):
        for text, limit, want in [
            ("hello", 5, "hello"),
            ("hello world", 6, "hello…"),
            ("ééééé", 5, "ééééé"),
            ("éééééé", 3, "éé…"),
            ("😀😀😀", 2, "😀…"),
            ("abc", 1, "…"),
            ("abc", 0, ""),
            ("a\ud800bcd", 3, "a\ufffd…"),  # a lone surrogate counts as one and becomes U+FFFD
            ("e\u0301" * 150, 200, "e\u0301" * 99 + "e…"),  # code points, not what a reader sees
        ]:
            with self.subTest(text=text[:10], limit=limit):
                self.assertEqual(lw.clamp(text, limit), want)

    def test_within_limit(self):
        s = "aé😀" * 50
        for limit in range(1, len(s) + 2):
            got = lw.clamp(s, limit)
            self.assertLessEqual(len(got), limit)
            if got != s:
                self.assertEqual(len(got), limit)
                self.assertTrue(got.endswith("…"))

    def test_fail_and_progress_cut(self):
        detail = "the provisioner refused: " + "template too large; " * 200
        rep = lw.fail("template_refused", "The provisioner refused the template.", detail)
        self.assertEqual(len(rep.problem.detail), 2000)
        self.assertEqual(rep.problem.detail[-1], "…")
        self.assertEqual(rep.problem.detail[:1999], detail[:1999])
        rep = lw.fail("x", "T" * 201, "D" * 2001).with_progress(message="M" * 201)
        self.assertEqual(rep.problem.title, "T" * 199 + "…")
        self.assertEqual(rep.problem.detail, "D" * 1999 + "…")
        self.assertEqual(rep.progress.message, "M" * 199 + "…")
        self.assertEqual(lw.fail("x", "😀" * 200).problem.title, "😀" * 200)  # 200 code points, 800 bytes: within
        self.assertEqual(lw.result_lost("é" * 2001).problem.detail, "é" * 1999 + "…")


class ValidateReportTest(unittest.TestCase):
    def test_samples(self):
        for name in ("continue", "succeeded", "failed", "outcome-unknown"):
            with self.subTest(name=name):
                rep = _support.sample("step-report-" + name)
                self.assertEqual(lw.validate_report(rep), rep)

    def test_accepted_as_the_recorder_reads_it(self):
        for report, want in [
            ('{"status":"continue","state":null}', {"status": "continue"}),
            ('{"status":"continue","delaySeconds":30.0}', {"status": "continue", "delaySeconds": 30}),
            ('{"status":"continue","delaySeconds":3e1}', {"status": "continue", "delaySeconds": 30}),
            ('{"status":"continue","delaySeconds":-0}', {"status": "continue", "delaySeconds": 0}),
            ('{"status":"continue","wait":false}', {"status": "continue"}),
            ('{"status":"continue","await":{"signal":"a","timeoutSeconds":1},"wait":false}',
             {"status": "continue", "await": {"signal": "a", "timeoutSeconds": 1}}),
            ('{"status":"succeeded","progress":{"percent":-0}}', {"status": "succeeded", "progress": {"percent": 0}}),
            ('{"status":"succeeded","progress":{"percent":1e-400}}', {"status": "succeeded", "progress": {"percent": 0}}),
            ('{"status":"succeeded","progress":{"totalSteps":1e30}}', {"status": "succeeded", "progress": {"totalSteps": 2 ** 63 - 1}}),
            ('{"status":"succeeded","progress":{"message":""}}', {"status": "succeeded", "progress": {}}),
            ('{"status":"failed","problem":{"code":"x","title":"%s"}}' % ("T" * 300),
             {"status": "failed", "problem": {"code": "x", "title": "T" * 199 + "…"}}),
            (' {"status":"succeeded"} ', {"status": "succeeded"}),
            ('{"status":"continue","state":"%s"}' % ("x" * 32766), {"status": "continue", "state": "x" * 32766}),
            ({"status": "outcome_unknown"}, {"status": "outcome_unknown"}),
        ]:
            with self.subTest(report=str(report)[:60]):
                self.assertEqual(lw.validate_report(report), want)

    def test_refused_as_the_recorder_refuses_it(self):
        for report in [
            '{"status":"continue","delaySeconds":30.5}', '{"status":"continue","delaySeconds":86401}',
            '{"status":"continue","delaySeconds":"30"}', '{"status":"continue","delaySeconds":null}',
            '{"status":"continue","delaySeconds":true}', '{"status":"continue","wait":null}', '{"status":"continue","wait":1}',
            '{"status":"continue","await":{"signal":"a","timeoutSeconds":60},"wait":true}',
            '{"status":"continue","await":{"signal":"a","timeoutSeconds":60},"delaySeconds":0}',
            '{"status":"continue","await":{"signal":"a"}}', '{"status":"continue","await":{"signal":"A","timeoutSeconds":1}}',
            '{"status":"continue","await":{"signal":"a","timeoutSeconds":2592001}}',
            '{"status":"continue","await":{"signal":"a","timeoutSeconds":1,"x":1}}',
            '{"status":"succeeded","result":[1]}', '{"status":"succeeded","result":null}', '{"status":"succeeded","state":{}}',
            '{"status":"succeeded","state":null}', '{"status":"failed"}', '{"status":"failed","problem":null}',
            '{"status":"failed","problem":{"code":"x","title":""}}', '{"status":"failed","problem":{"code":"X","title":"t"}}',
            '{"status":"failed","problem":{"code":"x","title":"t","detail":null}}',
            '{"status":"failed","problem":{"code":"X","title":"t","detail":"%s"}}' % ("d" * 3000),
            '{"status":"succeeded","progress":{"percent":100.00000000000000001}}',
            '{"status":"succeeded","progress":{"percent":-0.0000001}}', '{"status":"succeeded","progress":{"totalSteps":0}}',
            '{"status":"succeeded","progress":{"totalSteps":2.5}}', '{"status":"succeeded","progress":{"completedSteps":2}}',
            '{"status":"succeeded","progress":null}', '{"status":"done"}', '{"Status":"continue"}',
            '{"status":"continue","State":1}', '[]', 'null', '"x"', 'not json', '{"status":"continue"} x', '',
            '\ufeff{"status":"continue"}', '{"status":"continue","state":"%s"}' % ("x" * 32767),
            '{"status":"continue","state":"%s"}' % ("\\u00e9" * 5462),  # measured as sent: 6 bytes each
            '{"status":"continue","state":NaN}', '{"status":1}', '{"status":null}', '{"status":"continue","x":null}',
            {"status": "continue", "state": float("nan")}, ["status"],
        ]:
            with self.subTest(report=str(report)[:60]), self.assertRaises(lw.InvalidReport):
                lw.validate_report(report)

    def test_what_the_package_builds_is_accepted(self):
        for rep in (lw.continue_({"a": "<&>"}).after(5).with_progress(total_steps=2, percent=12.5, message="m"),
                    lw.continue_().await_signal("a", 10), lw.succeed({"x": [1, 2]}), lw.fail("x", "t", "d"), lw.result_lost()):
            with self.subTest(rep=rep):
                self.assertEqual(lw.validate_report(rep.to_json()), rep.to_dict())
                self.assertEqual(lw.validate_report(rep.to_dict()), rep.to_dict())


if __name__ == "__main__":
    unittest.main()
