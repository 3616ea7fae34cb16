// The registrar's step function under its handler, as longrun runs it: each report goes
// through JSON as Lambda hands it back, and longrun's recorder accepts every one.

import assert from "node:assert/strict";
import { test } from "node:test";

import { longrunHandler, validateReport, type WireReport } from "@longrun/worker";

import { maxTries, parseInput, register } from "../src/worker.js";
import { closedURL, fakeCatalog, request, shop } from "./catalog.js";

/** Runs step n through the handler of a registrar on catalogUrl and checks its report. */
async function step(catalogUrl: string, n: number, input: unknown, state?: unknown): Promise<WireReport> {
  const handler = longrunHandler(register(catalogUrl), { parseInput, log: false });
  const out: WireReport = JSON.parse(JSON.stringify(await handler(request(n, input, state))));
  const check = validateReport(out);
  assert.ok(check.valid, JSON.stringify(check));
  return out;
}

test("a step puts the environment into the catalog, once however often it is delivered", async (t) => {
  const catalog = await fakeCatalog([200]);
  t.after(() => catalog.close());
  const first = await step(catalog.url, 1, shop);
  assert.deepEqual(first, { status: "succeeded", result: { entry: "shop/qa-1", url: "https://qa-1.shop.example.test" } });
  // Step 1 delivered again (a retried invocation): the same PUT, the same one entry.
  assert.deepEqual(await step(catalog.url, 1, shop), first);
  assert.equal(catalog.requests.length, 2);
  for (const r of catalog.requests) {
    assert.deepEqual(r, {
      method: "PUT", path: "/catalog/environments/shop/qa-1", contentType: "application/json",
      body: { url: "https://qa-1.shop.example.test", registeredBy: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3" },
    });
  }
  assert.deepEqual([...catalog.entries.keys()], ["/catalog/environments/shop/qa-1"]);
});

test("a catalog that takes nothing for now is tried again by the next steps, the tries carried as state", async (t) => {
  const catalog = await fakeCatalog([503, 429, 200]);
  t.after(() => catalog.close());
  const one = await step(catalog.url, 1, shop);
  assert.deepEqual(one, {
    status: "continue", state: { tries: 1 }, delaySeconds: 2,
    progress: { message: "The catalog answered 503; trying again." },
  });
  const two = await step(catalog.url, 2, shop, one.state);
  assert.deepEqual([two.status, two.state, two.delaySeconds], ["continue", { tries: 2 }, 4]);
  const three = await step(catalog.url, 3, shop, two.state);
  assert.equal(three.status, "succeeded");
  assert.equal(catalog.entries.size, 1);
});

test("a catalog that cannot be reached fails the operation after its tries: nothing was sent", async () => {
  const url = await closedURL();
  let state: unknown;
  for (let n = 1; n < maxTries; n++) {
    const out = await step(url, n, shop, state);
    assert.equal(out.status, "continue", `step ${n}: ${JSON.stringify(out)}`);
    assert.equal(out.delaySeconds, 2 ** n);
    assert.match(out.progress?.message ?? "", /could not be reached \(ECONNREFUSED\)/);
    state = out.state;
  }
  const last = await step(url, maxTries, shop, state);
  assert.deepEqual(last, {
    status: "failed",
    problem: {
      code: "catalog_unreachable", title: "The service catalog could not be reached.",
      detail: `${maxTries} tries; the last: the catalog could not be reached (ECONNREFUSED).`,
    },
  });
});

test("a refusal fails the operation; an answer that leaves the entry in doubt escapes", async (t) => {
  const refusing = await fakeCatalog([409]);
  t.after(() => refusing.close());
  assert.deepEqual(await step(refusing.url, 1, shop), {
    status: "failed",
    problem: { code: "catalog_refused", title: "The service catalog refused the environment.", detail: `HTTP 409: {"error":"status 409"}` },
  });
  // A 500 may come after the entry was written: the step's error fails the invocation, which
  // longrun records as outcome_unknown.
  const failing = await fakeCatalog([500]);
  t.after(() => failing.close());
  const handler = longrunHandler(register(failing.url), { parseInput, log: false });
  await assert.rejects(handler(request(1, shop)), /HTTP 500: the entry may have been written/);
});

test("an input it cannot read, or no catalog to call, fails the operation without a request", async () => {
  const bad = await step("http://127.0.0.1:9/", 1, { project: "shop" });
  assert.equal(bad.problem?.code, "invalid_input");
  const unconfigured = await step("", 1, shop);
  assert.equal(unconfigured.problem?.code, "catalog_not_configured");
});
