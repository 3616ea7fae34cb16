// The handler and run, as the Go package's Handler and Run (worker/worker_test.go and
// worker/log_test.go hold the same cases in Go): the request as a Step, the input, the
// errors, the step's timeout and the log line.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  CodeInvalidInput, CodeInvalidRequest, CodeStepTimeout, Continue, Fail, Problem, ReportError, Succeed, longrunHandler,
  run, type Report, type Step, type StepContext, type StepRequest,
} from "../src/index.js";

const repo = new URL("../../../../", import.meta.url);
function sample(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(`events/samples/worker/${name}.json`, repo), "utf8"));
}

const noLog = { log: false as const };

test("a step function sees the request as a Step", async () => {
  let got: Step<{ target: string; steps: number }> | undefined;
  const h = longrunHandler<{ target: string; steps: number }>(async (s) => {
    got = s;
    return Succeed();
  }, noLog);
  assert.deepEqual(await h(sample("step-request-later")), { status: "succeeded" });
  const s = got!;
  assert.equal(s.operationId, "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3");
  assert.equal(s.type, "demo.task");
  assert.equal(s.version, 1);
  assert.equal(s.number, 3);
  assert.equal(s.maxSteps, 20);
  assert.equal(s.deadline.toISOString(), "2026-12-01T12:00:00.000Z");
  assert.equal(s.stepTimeoutSeconds, 60);
  assert.equal(s.stepTimeoutMs, 60_000);
  assert.equal(s.input.target, "demo:alpha");
  assert.equal(s.input.steps, 3);
  assert.deepEqual(s.state<{ done: number }>(), { done: 2 });
  assert.equal(s.idempotencyKey(), "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3-step-3");
  assert.equal(s.attempt, 1);
  assert.equal(s.correlationId, "4bf92f3577b34da6a3ce929d0e0e4736");
  assert.deepEqual(s.signals, []);
  assert.equal(s.awaited, undefined);
  assert.equal(s.signal("approval"), undefined);
  assert.equal(s.callbackUrl("payment-settled"), undefined);

  // A step an operator had run again: a later attempt, with the same identity.
  await h({ ...sample("step-request-later"), attempt: 2, correlationId: undefined });
  assert.equal(got!.attempt, 2);
  assert.equal(got!.idempotencyKey(), "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3-step-3");
  assert.equal(got!.correlationId, "", "none: the empty string, as in Go");
});

test("the state: none on the first step, none when null, a fresh copy each time", async () => {
  const states: unknown[] = [];
  const fn = async (s: Step) => {
    states.push(s.state());
    const st = s.state<{ n: number }>();
    if (st) st.n = 99; // the step's own copy
    states.push(s.state());
    return Succeed();
  };
  await run(fn, { input: {}, step: 1 });
  await run(fn, { input: {}, step: 2, state: null });
  await run(fn, { input: {}, step: 2, state: { n: 7 } });
  await run(fn, { input: {}, step: 2, state: 0 });
  assert.deepEqual(states, [undefined, undefined, undefined, undefined, { n: 7 }, { n: 7 }, 0, 0]);
});

test("idempotency keys differ per step and operation", async () => {
  const keys = new Set<string>();
  for (const op of ["op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", "op_01JDY3Q4W5E6R7T8Y9V0A1B2C4"]) {
    for (let n = 1; n <= 12; n++) {
      await run(async (s) => {
        assert.ok(!keys.has(s.idempotencyKey()) && s.idempotencyKey().startsWith(op));
        keys.add(s.idempotencyKey());
        return Succeed();
      }, { operationId: op, step: n, input: {} });
    }
  }
  assert.equal(keys.size, 24);
});

// Input that is not what the step function reads is a failed report: it never ran.
test("input that parseInput refuses fails without running", async () => {
  const parseInput = (raw: unknown) => {
    const r = raw as { from?: unknown };
    if (typeof r !== "object" || r === null || Array.isArray(r) || typeof r.from !== "string") throw new TypeError("from must be a string");
    return r as { from: string };
  };
  for (const input of [{ from: 7 }, [], undefined, "x"]) {
    let ran = false;
    const rep = await run(async () => {
      ran = true;
      return Succeed();
    }, { step: 1, ...(input === undefined ? {} : { input }) }, { parseInput });
    assert.equal(ran, false);
    assert.equal(rep.status, "failed");
    assert.equal(rep.problem!.code, CodeInvalidInput);
    assert.ok(rep.problem!.detail, `input ${JSON.stringify(input)}: a detail`);
  }
  const rep = await run(async (s) => Succeed({ from: s.input.from }), { step: 1, input: { from: "a" } }, { parseInput });
  assert.deepEqual(rep.result, { from: "a" });
});

// A Problem thrown, wrapped (as a cause) or not, is a failed report; any other error is the
// invocation's error, thrown as it is.
test("errors from the step function", async () => {
  const boom = new Error("connection reset");
  const cases: [unknown, object | undefined][] = [
    [new Problem("quota_exhausted", "No quota."), { code: "quota_exhausted", title: "No quota." }],
    [new Error("export", { cause: new Problem("too_big", "Too big.", "9 GB") }), { code: "too_big", title: "Too big.", detail: "9 GB" }],
    [new AggregateError([new Error("a"), new Problem("too_big", "Too big.")]), { code: "too_big", title: "Too big." }],
    [new Problem("x", "t".repeat(300)), { code: "x", title: "t".repeat(199) + "…" }],
    [boom, undefined],
    ["a string", undefined],
  ];
  for (const [err, problem] of cases) {
    const h = longrunHandler(async () => {
      throw err;
    }, noLog);
    if (problem === undefined) {
      await assert.rejects(h(sample("step-request-first")), (e: unknown) => e === err);
      continue;
    }
    assert.deepEqual(await h(sample("step-request-first")), { status: "failed", problem });
  }
  // A Problem that breaks the protocol is no failed report either.
  await assert.rejects(run(async () => {
    throw new Problem("bad code", "t");
  }, { input: {} }), (e: unknown) => e instanceof ReportError && /does not match/.test(e.message));
});

test("a wrongly built report, or none, fails the invocation", async () => {
  for (const [rep, want] of [[Succeed([1] as unknown as object), /must be a JSON object/], [undefined, /returned nothing/], [{ status: "succeeded" }, /returned no Report/]] as const) {
    const h = longrunHandler(async () => rep as unknown as Report, noLog);
    await assert.rejects(h(sample("step-request-first")), (e: unknown) => e instanceof ReportError && want.test(e.message));
  }
});

test("the handler answers what run reports, and refuses what is no step request", async () => {
  const h = longrunHandler<{ steps: number }>(async (s) => {
    const done = s.state<{ done: number }>()?.done ?? 0;
    if (s.number < s.input.steps) return Continue({ done: s.number }).after(60);
    return Succeed({ steps: s.input.steps, carried: done });
  }, noLog);
  assert.equal(JSON.stringify(await h(sample("step-request-first"))), `{"status":"continue","state":{"done":1},"delaySeconds":60}`);
  assert.deepEqual(await h(sample("step-request-later")), { status: "succeeded", result: { steps: 3, carried: 2 } });
  const first = sample("step-request-first");
  for (const payload of [
    "not json", { protocol: "longrun.step.v1" }, [], null, 7,
    { ...first, protocol: "longrun.step.v2" }, { ...first, operationId: "" }, { ...first, step: 0 }, { ...first, step: "1" },
    { ...first, step: 1.5 }, { ...first, deadline: "tomorrow" }, { ...first, signals: [null] }, { ...first, Step: 1, step: undefined },
  ]) {
    let ran = false;
    const g = longrunHandler(async () => {
      ran = true;
      return Succeed();
    }, noLog);
    const out = await g(payload);
    assert.equal(ran, false, JSON.stringify(payload));
    assert.equal(out.status, "failed");
    assert.equal(out.problem!.code, CodeInvalidRequest);
    assert.match(out.problem!.detail!, /^the payload is not a longrun.step.v1 step request: /);
  }
});

test("a step after a wait sees its signals, what the wait came to and the callback URLs", async () => {
  let got: Step | undefined;
  const h = longrunHandler(async (s) => {
    got = s;
    return Succeed();
  }, noLog);
  await h({
    protocol: "longrun.step.v1", operationId: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", type: "deploy.service", version: 1,
    input: {}, step: 2, maxSteps: 5, deadline: "2026-12-08T12:00:00.000Z", stepTimeoutSeconds: 60,
    signals: [
      { name: "approval", data: { approved: false }, receivedAt: "2026-12-02T14:01:00.000Z", sender: "arn:aws:iam::123456789012:user/bob", via: "api" },
      { name: "comment", data: { text: "ship it" }, receivedAt: "2026-12-02T14:03:00.000Z", sender: "arn:aws:iam::123456789012:user/alice", via: "api" },
      { name: "approval", data: { approved: true }, receivedAt: "2026-12-02T14:05:16.000Z", sender: "arn:aws:iam::123456789012:user/alice", via: "api" },
      { name: "paid", data: { cents: 100 }, receivedAt: "2026-12-02T14:06:00.000Z", via: "callback" },
    ],
    awaited: { signal: "approval", timedOut: false },
    callbacks: { "payment-settled": "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d" },
  });
  const s = got!;
  assert.deepEqual(s.signals.map((x) => x.name), ["approval", "comment", "approval", "paid"]);
  assert.deepEqual(s.awaited, { signal: "approval", timedOut: false });
  const approval = s.signal<{ approved: boolean }>("approval")!; // of two, the last stands
  assert.equal(approval.data.approved, true);
  assert.equal(approval.receivedAt.toISOString(), "2026-12-02T14:05:16.000Z");
  assert.equal(approval.sender, "arn:aws:iam::123456789012:user/alice");
  assert.equal(approval.via, "api");
  assert.equal(s.signal("paid")!.sender, "");
  assert.equal(s.signal("payment-settled"), undefined);
  assert.equal(s.callbackUrl("payment-settled"), "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d");
  assert.equal(s.callbackUrl("approval"), undefined);
  approval.data.approved = false; // the caller's copy
  assert.equal(s.signal<{ approved: boolean }>("approval")!.data.approved, true);
});

// The step's signal aborts at its stepTimeout even when the invocation may run longer, and a
// failure after it is outcome_unknown with the code step_timeout: the step may have acted. A
// step that finished late keeps its report; an error within its time is the invocation's.
test("the step timeout aborts the step's signal", async () => {
  const req: StepRequest = { input: {}, step: 2, stepTimeoutSeconds: 1, operationId: "op_1" };
  const waitForAbort = (ctx: StepContext) => new Promise<never>((_, reject) => {
    ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
  });
  const start = Date.now();
  const rep = await run(async (_s, ctx) => waitForAbort(ctx), req);
  assert.ok(Date.now() - start >= 990 && Date.now() - start < 3000, `${Date.now() - start} ms`);
  assert.equal(rep.status, "outcome_unknown");
  assert.deepEqual(rep.problem, {
    code: CodeStepTimeout, title: "Step timed out",
    detail: "Step 2 did not finish within its step timeout of 1s; it may have acted, so the outcome is unknown.",
  });

  let reason: unknown;
  const late = await run(async (_s, ctx) => {
    await waitForAbort(ctx).catch((e: unknown) => { reason = e; });
    return Succeed({ late: true });
  }, req);
  assert.deepEqual(late.result, { late: true });
  assert.ok(reason instanceof DOMException && reason.name === "TimeoutError");

  const afterTimeoutProblem = await run(async (_s, ctx) => {
    await waitForAbort(ctx).catch(() => undefined);
    throw new Problem("gave_up", "Gave up.");
  }, req);
  assert.equal(afterTimeoutProblem.problem!.code, "gave_up");

  await assert.rejects(run(async () => {
    throw new Error("boom");
  }, req), /boom/);

  // The invocation's own end aborts the step's signal too; an error then is the invocation's.
  const invocation = new AbortController();
  setTimeout(() => invocation.abort(new Error("invocation over")), 20);
  await assert.rejects(run(async (_s, ctx) => waitForAbort(ctx), { ...req, stepTimeoutSeconds: 60 }, { signal: invocation.signal }), /invocation over/);
});

test("the handler aborts the step's signal when the invocation's time runs out", async () => {
  const h = longrunHandler(async (_s, ctx) => new Promise<Report>((_, reject) => {
    ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
  }), noLog);
  const start = Date.now();
  await assert.rejects(h(sample("step-request-first"), { awsRequestId: "r", getRemainingTimeInMillis: () => 30 }), (e: unknown) => e instanceof DOMException && e.name === "TimeoutError");
  assert.ok(Date.now() - start < 1000);
});

// One line per step in the field names longrun's functions use, without the input, the
// state or the result (Go's TestStartLogsOneLinePerStep).
test("the handler logs one JSON line per step", async () => {
  const env = { ...process.env };
  process.env["POWERTOOLS_SERVICE_NAME"] = "";
  process.env["AWS_LAMBDA_FUNCTION_NAME"] = "provision-dev-worker";
  const lines: string[] = [];
  try {
    const h = longrunHandler<{ secret: string }>(async (s) => {
      if (s.number === 2) throw new Error("boom " + s.input.secret);
      if (s.number === 3) return Fail("quota_exhausted", "No quota.");
      return Continue({ cursor: "state-marker" });
    }, { log: (line) => lines.push(line) });
    for (let n = 1; n <= 3; n++) {
      const req = {
        protocol: "longrun.step.v1", operationId: "op_1", type: "t", version: 1, input: { secret: "input-marker" }, step: n, maxSteps: 5,
        deadline: "2026-12-01T12:00:00.000Z", stepTimeoutSeconds: 60, correlationId: "corr-1",
      };
      await h(req, { awsRequestId: "req-1" }).catch(() => undefined);
    }
    await h({ protocol: "nope" }); // no step: no line
  } finally {
    process.env = env;
  }
  assert.equal(lines.length, 3);
  assert.ok(!lines.join("\n").includes("marker"));
  const want = [["INFO", "continue", undefined], ["ERROR", "error", undefined], ["INFO", "failed", "quota_exhausted"]];
  lines.forEach((raw, i) => {
    const l = JSON.parse(raw);
    assert.deepEqual(Object.keys(l).slice(0, 4), ["timestamp", "level", "message", "service"]);
    assert.match(l.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(l.level, want[i]![0]);
    assert.equal(l.message, "step");
    assert.equal(l.service, "provision-dev-worker");
    assert.equal(l.function_request_id, "req-1");
    assert.equal(l.correlation_id, "corr-1");
    assert.equal(l.operation_id, "op_1");
    assert.equal(l.step, i + 1);
    assert.equal(l.status, want[i]![1]);
    assert.equal(l.code, want[i]![2]);
    assert.equal(typeof l.duration_ms, "number");
  });
});
