// The protocol's test vectors (api/worker/vectors, README.md there), which every
// implementation of the protocol runs; the Go package runs them in worker/vectors_test.go,
// longrun's recorder in internal/service/recorder. Here:
//
//   - requests/: the handler gives the step function of a valid request exactly the vector's
//     view of the step, and answers an invalid one with a failed invalid_request report
//     without running it;
//   - reports/: validateReportJSON accepts exactly what the recorder accepts, and reads it
//     as the recorder records it (the vector's recorder member);
//   - builds/: the builders make exactly the vector's report, or an error where it says so,
//     and the handler sends exactly that report.
//
// Values are compared as JSON values, numbers exactly as decimals (1e3 is 1000, 30.0 is 30)
// and a zero's sign kept, as the Go runners compare them. The vectors' schemaValid is the
// JSON Schema's business: the Go runners check it, this package has no schema validator.

import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";

import {
  Continue, Fail, ResultLost, Succeed, longrunHandler, validateReport, validateReportJSON, type Report, type Step,
} from "../src/index.js";
import { Decimal, decodeString, elements, members } from "../src/json.js";
import { callbacksOf } from "../src/protocol.js";

const repo = new URL("../../../../", import.meta.url);
const vectorDir = new URL("api/worker/vectors/", repo);

// A vector file: its members as their raw JSON text, by name.
interface Vector {
  name: string;
  m: Map<string, string>;
}

function vectors(folder: string, required: string[], optional: string[]): Vector[] {
  const dir = new URL(`${folder}/`, vectorDir);
  assert.ok(existsSync(dir), `no vectors in ${dir.pathname}`);
  const out: Vector[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
    const text = readFileSync(new URL(file, dir), "utf8");
    JSON.parse(text); // a vector is JSON
    const m = members(text, file);
    for (const k of required) assert.ok(m.has(k), `${folder}/${file}: no ${k}`);
    for (const k of m.keys()) assert.ok(required.includes(k) || optional.includes(k), `${folder}/${file}: ${k} is not a member of a ${folder} vector`);
    out.push({ name: file.replace(/\.json$/, ""), m });
  }
  return out;
}

// The document a vector holds in member, as written, or (for text that is not JSON) the
// string in member+"Text".
function documentOf(v: Vector, member: string): string {
  const raw = v.m.get(member);
  const text = v.m.get(member + "Text");
  assert.ok((raw === undefined) !== (text === undefined), `${v.name}: want one of ${member} and ${member}Text`);
  return raw ?? (JSON.parse(text!) as string);
}

function tagged(v: Vector, tag: string): boolean {
  const tags = v.m.get("tags");
  return tags !== undefined && (JSON.parse(tags) as string[]).includes(tag);
}

// A JSON value read exactly: numbers as decimals (with the sign of a zero), objects as maps.
class Num {
  constructor(readonly d: Decimal, readonly minus: boolean) {}
}
type Exact = null | boolean | string | Num | Exact[] | Map<string, Exact>;

function exact(raw: string): Exact {
  const t = raw.trimStart();
  switch (t[0]) {
    case "{": {
      const out = new Map<string, Exact>();
      for (const [k, v] of members(t, "a value")) out.set(k, exact(v));
      return out;
    }
    case "[":
      return elements(t).map(exact);
    case '"':
      return decodeString(t.trimEnd());
    case "t":
      return true;
    case "f":
      return false;
    case "n":
      return null;
    default:
      return new Num(Decimal.parse(t.trimEnd(), "a number"), t.startsWith("-"));
  }
}

function same(x: Exact, y: Exact): boolean {
  if (x instanceof Num) {
    if (!(y instanceof Num)) return false;
    const a = x.d;
    const b = y.d;
    return a.neg === b.neg && a.digits === b.digits && a.exp === b.exp && (a.digits !== "" || x.minus === y.minus);
  }
  if (x instanceof Map) {
    if (!(y instanceof Map) || x.size !== y.size) return false;
    for (const [k, v] of x) if (!y.has(k) || !same(v, y.get(k)!)) return false;
    return true;
  }
  if (Array.isArray(x)) return Array.isArray(y) && x.length === y.length && x.every((v, i) => same(v, y[i]!));
  return x === y;
}

function assertSame(got: string, want: string, what: string): void {
  assert.ok(same(exact(got), exact(want)), `${what}:\n${got.slice(0, 600)}\nwant\n${want.slice(0, 600)}`);
}

const firstStep = readFileSync(new URL("events/samples/worker/step-request-first.json", repo), "utf8");

test("request vectors", async () => {
  const all = vectors("requests", ["description", "valid", "schemaValid"], ["tags", "request", "requestText", "error", "step"]);
  assert.ok(all.length >= 30, `only ${all.length} request vectors`);
  let got: Step | undefined;
  const h = longrunHandler(async (s) => {
    got = s;
    return Succeed();
  }, { log: false });
  for (const v of all) {
    const payload = documentOf(v, "request");
    const valid = JSON.parse(v.m.get("valid")!) as boolean;
    assert.equal(v.m.has("step"), valid, `${v.name}: valid ${valid} with a step ${v.m.has("step")}`);
    assert.equal(v.m.has("error"), !valid, `${v.name}: valid ${valid} with an error ${v.m.has("error")}`);
    let event: unknown;
    try {
      event = JSON.parse(payload); // as the Node.js runtime reads the invocation's payload
    } catch {
      // Not JSON: the runtime fails the invocation before any handler runs.
      assert.ok(!valid, `${v.name}: a valid request that is not JSON`);
      continue;
    }
    got = undefined;
    const out = await h(event);
    if (!valid) {
      assert.equal(got, undefined, `${v.name}: the step function ran`);
      assert.equal(out.status, "failed", v.name);
      assert.equal(out.problem?.code, "invalid_request", v.name);
      continue;
    }
    assert.deepEqual(out, { status: "succeeded" }, v.name);
    assert.ok(got, `${v.name}: the step function did not run`);
    assertSame(JSON.stringify(stepView(got)), v.m.get("step")!, `${v.name}: the step function is given`);
  }
});

// The Step in the vectors' terms.
function stepView(s: Step): unknown {
  return {
    operationId: s.operationId, type: s.type, version: s.version, number: s.number, maxSteps: s.maxSteps,
    attempt: s.attempt, deadline: s.deadline.toISOString(), stepTimeoutSeconds: s.stepTimeoutSeconds,
    correlationId: s.correlationId, input: s.input, state: s.state() ?? null,
    signals: s.signals.map((g) => ({
      name: g.name, data: g.data, receivedAt: g.receivedAt.toISOString(), via: g.via, ...(g.sender === "" ? {} : { sender: g.sender }),
    })),
    awaited: s.awaited ?? null,
    callbacks: Object.fromEntries(callbacksOf(s)),
  };
}

test("report vectors", () => {
  const all = vectors("reports", ["description", "schemaValid", "recorder"], ["tags", "report", "reportText"]);
  assert.ok(all.length >= 150, `only ${all.length} report vectors`);
  const kinds = new Set<string>();
  for (const v of all) {
    const payload = documentOf(v, "report");
    const want = JSON.parse(v.m.get("recorder")!) as { kind: string; code?: string };
    kinds.add(`${want.kind} ${want.code ?? ""}`);
    const invalid = want.kind === "outcome_unknown" && want.code === "invalid_report";
    const check = validateReportJSON(payload);
    if (invalid) {
      assert.ok(!check.valid, `${v.name}: read as ${check.valid ? check.json : ""}`);
    } else {
      assert.ok(check.valid, `${v.name}: refused: ${check.valid ? "" : check.error}`);
      assertSame(write(recorderView(exact(check.json) as Map<string, Exact>)), v.m.get("recorder")!, `${v.name}: read as`);
      // What was read goes out as it was read, and reads back the same.
      const again = validateReportJSON(check.json);
      assert.ok(again.valid && again.json === check.json, `${v.name}: written again as ${check.json}, read back as ${JSON.stringify(again)}`);
      const sent = validateReportJSON(JSON.stringify(check.report));
      assert.ok(sent.valid, `${v.name}: the report as a JS value, sent again, is refused`);
    }
    // A JS value of the report (what a handler would return) is checked the same, but where
    // a number's exact spelling decides, which a JS number cannot hold.
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      continue; // not JSON: no JS value to return
    }
    if (!tagged(v, "exact-numbers")) assert.equal(validateReport(value).valid, !invalid, `${v.name}: validateReport of its value`);
  }
  for (const k of ["continue ", "succeeded ", "failed ", "outcome_unknown result_lost", "outcome_unknown invalid_report"]) {
    assert.ok(kinds.has(k), `no report vector recorded as ${k}`);
  }
});

// A report (exactly read) as the vectors' recorder member says it.
function recorderView(r: Map<string, Exact>): unknown {
  const g = r.get("progress") as Map<string, Exact> | undefined;
  const progress = g === undefined ? null : { totalSteps: g.get("totalSteps") ?? null, percent: g.get("percent") ?? null, message: g.get("message") ?? "" };
  const p = r.get("problem") as Map<string, Exact> | undefined;
  const problem = p === undefined ? null : { code: p.get("code"), title: p.get("title"), detail: p.get("detail") ?? "" };
  switch (r.get("status")) {
    case "continue":
      return {
        kind: "continue", state: r.get("state") ?? null, progress, delaySeconds: r.get("delaySeconds") ?? null,
        wait: r.get("wait") ?? false, await: r.get("await") ?? null,
      };
    case "succeeded":
      return { kind: "succeeded", result: r.get("result") ?? new Map(), progress };
    case "failed":
      return { kind: "failed", problem, progress };
    default:
      return { kind: "outcome_unknown", code: problem?.code ?? "result_lost", problem, progress };
  }
}

// A view as JSON text: JSON.stringify, but a Num written exactly and a Map as an object.
function write(v: unknown): string {
  if (v instanceof Num) return v.d.digits === "" ? (v.minus ? "-0" : "0") : `${v.d.neg ? "-" : ""}${v.d.digits}e${v.d.exp}`;
  if (v instanceof Map) return write(Object.fromEntries(v));
  if (Array.isArray(v)) return `[${v.map(write).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    return `{${Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => `${JSON.stringify(k)}:${write(x)}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

test("build vectors", async () => {
  const all = vectors("builds", ["description", "build", "report"], ["tags", "error"]);
  assert.ok(all.length >= 50, `only ${all.length} build vectors`);
  for (const v of all) {
    const rep = build(JSON.parse(v.m.get("build")!));
    const want = v.m.get("report")!;
    if (want.trim() === "null") {
      assert.ok(v.m.has("error"), `${v.name}: report null without an error`);
      assert.throws(() => rep.toJSON(), `${v.name}: built ${(() => { try { return JSON.stringify(rep); } catch { return ""; } })()}; want an error`);
      continue;
    }
    assert.ok(!v.m.has("error"), `${v.name}: an error with a report`);
    const out = JSON.stringify(rep);
    assertSame(out, want, `${v.name}: built`);
    // And the handler sends exactly it.
    const sent = await longrunHandler(async () => rep, { log: false })(JSON.parse(firstStep));
    assert.equal(JSON.stringify(sent), out, `${v.name}: the handler sends`);
  }
});

interface Build {
  status: string;
  state?: unknown;
  result?: object | null;
  problem?: { code: string; title: string; detail?: string };
  detail?: string;
  progress?: { totalSteps?: number; percent?: number; message?: string };
  delaySeconds?: number;
  wait?: boolean;
  await?: { signal: string; timeoutSeconds: number };
}

// The report a build vector describes, made with the builders (as worker/vectors_test.go's
// build makes it with Go's).
function build(b: Build): Report {
  let rep: Report;
  switch (b.status) {
    case "continue":
      rep = Continue(b.state);
      if (b.wait === true) rep = rep.wait();
      if (b.delaySeconds !== undefined) rep = rep.after(b.delaySeconds);
      if (b.await !== undefined) rep = rep.awaitSignal(b.await.signal, b.await.timeoutSeconds);
      break;
    case "succeeded":
      rep = Succeed(b.result);
      break;
    case "failed":
      rep = Fail(b.problem!.code, b.problem!.title, b.problem!.detail ?? "");
      break;
    case "outcome_unknown":
      rep = ResultLost(b.detail ?? "");
      break;
    default:
      throw new Error(`a build of status ${b.status}`);
  }
  if (b.progress !== undefined) {
    for (const k of Object.keys(b.progress)) assert.ok(["totalSteps", "percent", "message"].includes(k), `progress.${k}`);
    rep = rep.withProgress(b.progress);
  }
  return rep;
}
