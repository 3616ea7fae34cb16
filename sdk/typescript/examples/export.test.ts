// The example worker run step by step as longrun runs it: each step's request carries the
// state of the report before, each report goes through JSON as Lambda hands it back, and
// longrun's recorder accepts every one.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Protocol, longrunHandler, validateReport, type StepRequest, type WireReport } from "@longrun/worker";

import { exportOrders, parseInput } from "./export.js";
import { inMemoryExports } from "./exports.js";

function request(step: number, input: unknown, state?: unknown): StepRequest {
  return {
    protocol: Protocol, operationId: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", type: "orders.export", version: 1, input,
    step, maxSteps: 10, deadline: "2026-12-01T12:00:00.000Z", stepTimeoutSeconds: 60,
    correlationId: "4bf92f3577b34da6a3ce929d0e0e4736", ...(state === undefined ? {} : { state }),
  };
}

test("the export runs in three steps, carrying its job as state", async () => {
  const exports = inMemoryExports();
  const lines: string[] = [];
  const handler = longrunHandler(exportOrders(exports), { parseInput, log: (l) => lines.push(l) });
  const reports: string[] = [];
  let state: unknown;
  for (let step = 1; ; step++) {
    assert.ok(step <= 10, "more steps than maxSteps");
    const out: WireReport = JSON.parse(JSON.stringify(await handler(request(step, { bucket: "orders-2026" }, state), { awsRequestId: `req-${step}` })));
    const check = validateReport(out);
    assert.ok(check.valid, JSON.stringify(check));
    reports.push(JSON.stringify(out));
    if (step === 1) {
      // Step 1 delivered again (a retried invocation): the same job, submitted once.
      assert.deepEqual(await handler(request(1, { bucket: "orders-2026" })), out);
      assert.equal(exports.submitted, 1);
    }
    if (out.status !== "continue") break;
    state = out.state;
  }
  assert.deepEqual(reports, [
    `{"status":"continue","state":{"jobId":"job-1"},"progress":{"totalSteps":3,"percent":0,"message":"Export submitted."},"delaySeconds":30}`,
    `{"status":"continue","state":{"jobId":"job-1"},"progress":{"totalSteps":3,"percent":50,"message":"Exporting."},"wait":true}`,
    `{"status":"succeeded","result":{"jobId":"job-1","rows":92},"progress":{"totalSteps":3,"percent":100,"message":"Exported."}}`,
  ]);
  assert.deepEqual(lines.map((l) => JSON.parse(l).status), ["continue", "continue", "continue", "succeeded"]);
});

test("an input the worker cannot read, or a bucket the service refuses, fails the export", async () => {
  const handler = longrunHandler(exportOrders(inMemoryExports()), { parseInput, log: false });
  const bad = await handler(request(1, { bucket: 7 }));
  assert.equal(bad.status, "failed");
  assert.equal(bad.problem?.code, "invalid_input");
  const refused = await handler(request(1, { bucket: "No Such Bucket" }));
  assert.deepEqual(refused, {
    status: "failed",
    problem: { code: "export_rejected", title: "The export service rejected the job.", detail: `there is no bucket "No Such Bucket"` },
  });
});
