// Reports are built, checked and written as the Go package builds, checks and writes them
// (worker/example_test.go and worker/worker_test.go hold the same cases in Go).

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  CodeResultLost, Continue, Fail, MaxAwaitSeconds, MaxDelaySeconds, Problem, Report, ReportError, ResultLost,
  StatusFailed, StatusOutcomeUnknown, Succeed,
} from "../src/index.js";

// What JSON.stringify writes is, byte for byte, what the Go package's json.Marshal writes.
test("reports are written as the Go package writes them", () => {
  const cases: [Report, string][] = [
    [Continue({ page: 3 }).after(90).withProgress({ totalSteps: 10, percent: 30, message: "3 of 10 pages" }),
      `{"status":"continue","state":{"page":3},"progress":{"totalSteps":10,"percent":30,"message":"3 of 10 pages"},"delaySeconds":90}`],
    [Continue({ id: "job-invoices-1" }).after(30), `{"status":"continue","state":{"id":"job-invoices-1"},"delaySeconds":30}`],
    [Continue({ id: "job-invoices-1" }).wait(), `{"status":"continue","state":{"id":"job-invoices-1"},"wait":true}`],
    [Continue(), `{"status":"continue"}`],
    [Continue(null), `{"status":"continue"}`],
    [Continue("after-1"), `{"status":"continue","state":"after-1"}`],
    [Continue(0), `{"status":"continue","state":0}`],
    [Continue({ service: "billing" }).awaitSignal("approval", 72 * 3600),
      `{"status":"continue","state":{"service":"billing"},"await":{"signal":"approval","timeoutSeconds":259200}}`],
    [Continue({ n: 1 }).awaitSignal("approval", 90 * 60 + 0.001), `{"status":"continue","state":{"n":1},"await":{"signal":"approval","timeoutSeconds":5401}}`],
    [Continue().wait().after(0), `{"status":"continue","delaySeconds":0,"wait":true}`],
    [Continue().after(1.2), `{"status":"continue","delaySeconds":2}`],
    [Succeed({ jobId: "job-invoices-1" }), `{"status":"succeeded","result":{"jobId":"job-invoices-1"}}`],
    [Succeed(), `{"status":"succeeded"}`],
    [Succeed(null), `{"status":"succeeded"}`],
    [Succeed({}).withProgress({ percent: 100 }), `{"status":"succeeded","result":{},"progress":{"percent":100}}`],
    [Succeed().withProgress({}), `{"status":"succeeded","progress":{}}`],
    [Succeed().withProgress({ totalSteps: 0, percent: 0, message: "" }), `{"status":"succeeded","progress":{"percent":0}}`],
    [Succeed().withProgress({ percent: -0 }), `{"status":"succeeded","progress":{"percent":0}}`],
    [Fail("not_approved", "No one approved the change in time.", ""), `{"status":"failed","problem":{"code":"not_approved","title":"No one approved the change in time."}}`],
    [Fail("rejected", "The change was rejected.", "not on a Friday"), `{"status":"failed","problem":{"code":"rejected","title":"The change was rejected.","detail":"not on a Friday"}}`],
    [Fail("quota_exhausted", "No quota.").withProgress({ totalSteps: 3 }), `{"status":"failed","problem":{"code":"quota_exhausted","title":"No quota."},"progress":{"totalSteps":3}}`],
    [ResultLost(), `{"status":"outcome_unknown","problem":{"code":"result_lost","title":"The result of the step is lost."}}`],
    [ResultLost("gone"), `{"status":"outcome_unknown","problem":{"code":"result_lost","title":"The result of the step is lost.","detail":"gone"}}`],
  ];
  for (const [rep, want] of cases) assert.equal(JSON.stringify(rep), want);
});

// A report that breaks the protocol is the worker's bug: an error when it is encoded, never
// a report longrun would refuse (Go's TestAWronglyBuiltReportIsAnError).
test("a wrongly built report is an error", () => {
  const cyclic: Record<string, unknown> = {};
  cyclic["self"] = cyclic;
  const cases: [Report, RegExp][] = [
    [Succeed([1] as unknown as object), /must be a JSON object/],
    [Succeed("done" as unknown as object), /must be a JSON object/],
    [Succeed(new Date(0)), /must be a JSON object/],
    [Succeed((() => 1) as unknown as object), /encode the result/],
    [Continue(cyclic), /encode the state/],
    [Continue(10n), /encode the state/],
    [Continue(Symbol("s")), /encode the state/],
    [Continue({ blob: "x".repeat(32 << 10) }), /the state takes 32779 bytes, more than 32768/],
    [Continue("é".repeat(16384)), /the state takes 32770 bytes/], // bytes of UTF-8, not UTF-16 units
    [Succeed({ blob: "x".repeat(64 << 10) }), /the result takes 65547 bytes, more than 65536/],
    [Succeed().wait(), /wait is only for a continue report/],
    [Fail("x", "t").after(1), /after is only for a continue report/],
    [Continue().after(-1), /not between 0 and 86400/],
    [Continue().after(MaxDelaySeconds + 0.001), /not between 0 and 86400/],
    [Continue().after(Number.NaN), /not between 0 and 86400/],
    [Fail("Quota", "t"), /does not match/],
    [Fail("quota", ""), /title must have 1 to 200/],
    [Succeed().withProgress({ totalSteps: -1 }), /totalSteps -1/],
    [Succeed().withProgress({ totalSteps: 1.5 }), /totalSteps 1.5/],
    [Succeed().withProgress({ percent: 100.01 }), /percent 100.01/],
    [Succeed().withProgress({ percent: Number.NaN }), /percent NaN/],
    [Succeed().awaitSignal("approval", 3600), /awaitSignal is only for a continue report/],
    [ResultLost().awaitSignal("approval", 3600), /awaitSignal is only for a continue report/],
    [Continue().awaitSignal("approval", 0), /is not more than 0 and at most 2592000s/],
    [Continue().awaitSignal("approval", -1), /is not more than 0 and at most 2592000s/],
    [Continue().awaitSignal("approval", MaxAwaitSeconds + 1e-6), /is not more than 0 and at most 2592000s/],
    [Continue().awaitSignal("Approval", 3600), /signal name "Approval" does not match/],
    [Continue().awaitSignal("", 3600), /signal name "" does not match/],
    [Continue().awaitSignal("approval.v2", 3600), /does not match/],
    [Continue().awaitSignal("a" + "b".repeat(64), 3600), /does not match/],
    [Continue().wait().awaitSignal("approval", 3600), /waits for a signal \(awaitSignal\) or for a time \(wait, after\), not both/],
    [Continue().awaitSignal("approval", 3600).after(0), /not both/],
  ];
  for (const [rep, want] of cases) {
    assert.throws(() => rep.validate(), (e: unknown) => e instanceof ReportError && want.test(e.message), String(want));
    assert.throws(() => JSON.stringify(rep), ReportError, String(want));
  }
});

// Reports are values: a modified copy leaves the original alone, and what the accessors
// return cannot change the report (Go's TestReportsAreValues).
test("reports are values", () => {
  const progress = { totalSteps: 4, percent: 10 };
  const base = Continue({ page: 1 });
  const withProgress = base.withProgress(progress);
  const waiting = withProgress.wait();
  const delayed = withProgress.after(90);
  progress.percent = 99; // the caller's object is not the report's

  assert.equal(base.progress, undefined);
  assert.equal(base.waitsStepDelay, false);
  assert.equal(withProgress.waitsStepDelay, false);
  assert.deepEqual(withProgress.progress, { totalSteps: 4, percent: 10 });
  withProgress.progress!.totalSteps = 9;
  (withProgress.state as { page: number }).page = 7;
  assert.deepEqual(withProgress.progress, { totalSteps: 4, percent: 10 });
  assert.deepEqual(withProgress.state, { page: 1 });
  assert.equal(waiting.delaySeconds, undefined);
  assert.equal(waiting.waitsStepDelay, true);
  assert.equal(delayed.delaySeconds, 90);
  assert.equal(delayed.waitsStepDelay, false);
  assert.equal(base.result, undefined);
  assert.equal(base.problem, undefined);
  assert.ok(Object.isFrozen(base));

  const failed = Fail("quota_exhausted", "No quota.");
  failed.problem!.code = "changed";
  assert.equal(failed.problem!.code, "quota_exhausted");
  assert.equal(failed.status, StatusFailed);
  assert.equal(failed.state, undefined);
  assert.deepEqual(Succeed().result, {});
  const lost = ResultLost("gone");
  assert.equal(lost.status, StatusOutcomeUnknown);
  assert.equal(lost.problem!.code, CodeResultLost);
  assert.equal(lost.problem!.detail, "gone");

  // The state is taken when the report is built, as Go encodes it then.
  const state = { n: 1 };
  const rep = Continue(state);
  state.n = 2;
  assert.deepEqual(rep.state, { n: 1 });
});

test("a report waiting for a signal says what it waits for", () => {
  const rep = Continue({ n: 1 }).awaitSignal("approval", 90 * 60 + 0.001);
  assert.deepEqual(rep.awaitsSignal, { signal: "approval", timeoutSeconds: 5401 });
  assert.equal(rep.delaySeconds, undefined);
  assert.equal(rep.waitsStepDelay, false);
  assert.equal(Continue().wait().awaitsSignal, undefined);
  assert.equal(MaxAwaitSeconds, 2592000);
});

test("a Problem is an Error", () => {
  assert.equal(new Problem("quota_exhausted", "No quota.").message, "quota_exhausted: No quota.");
  assert.equal(new Problem("quota_exhausted", "No quota.", "50 of 50.").message, "quota_exhausted: No quota.: 50 of 50.");
  assert.ok(new Problem("a", "t") instanceof Error);
  assert.ok(Report.isReport(Succeed()));
  assert.ok(!Report.isReport({ status: "succeeded" }));
});
