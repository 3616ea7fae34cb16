// A step report read as longrun's recorder reads it (internal/core/step's
// ParseReportCuttingText; the Go package's Report.UnmarshalJSON reads it the same way): what
// longrun accepts, and what it records as outcome_unknown with the code invalid_report.

import { Decimal, JSONReadError, checkJSON, compact, decodeString, members } from "./json.js";
import {
  MaxAwaitSeconds, MaxDelaySeconds, MaxDetailChars, MaxMessageChars, MaxResultBytes, MaxStateBytes,
  MaxTitleChars, type Status,
} from "./protocol.js";
import { charCount, clamp, type Progress, type WireProblem, type WireReport } from "./report.js";

/**
 * What longrun makes of a worker's answer: the report as it records it (text over its limit
 * cut, a state of null dropped, numbers read exactly), or why it is no report (longrun
 * records outcome_unknown, invalid_report). `json` is that report as JSON text with every
 * number as longrun holds it (the state and the result as compact JSON, their numbers as
 * written; a totalSteps as an exact integer, which `report`, a JS value, holds only to 2^53).
 */
export type ReportCheck = { valid: true; report: WireReport; json: string } | { valid: false; error: string };

const allowed: Record<Status, readonly string[]> = {
  continue: ["status", "state", "progress", "delaySeconds", "wait", "await"],
  succeeded: ["status", "result", "progress"],
  failed: ["status", "problem", "progress"],
  outcome_unknown: ["status", "problem", "progress"],
};

const codePattern = /^[a-z][a-z0-9_]{0,63}$/;
const signalNamePattern = /^[a-z][a-z0-9_-]{0,63}$/;

function fail(message: string): never {
  throw new JSONReadError(message);
}

function str(raw: string, member: string): string {
  if (raw[0] !== '"') fail(`${member} must be a string, not ${raw.slice(0, 40)}`);
  return decodeString(raw);
}

function integer(raw: string, member: string, lo: number, hi: number): number {
  const d = Decimal.parse(raw, member);
  if (!d.integral() || d.cmp(lo) < 0 || d.cmp(hi) > 0) fail(`${member} ${raw.slice(0, 40)} is not an integer from ${lo} to ${hi}`);
  return d.int();
}

function bytes(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

function sortedKeys(m: Map<string, string>): string[] {
  return [...m.keys()].sort();
}

function parseProblem(raw: string): WireProblem {
  const m = members(raw, "problem");
  const p: WireProblem = { code: "", title: "" };
  let detail = "";
  for (const k of sortedKeys(m)) {
    if (k !== "code" && k !== "title" && k !== "detail") fail(`${JSON.stringify(k)} is not a member of problem`);
    const v = str(m.get(k)!, `problem.${k}`);
    if (k === "detail") detail = v;
    else p[k] = v;
  }
  for (const k of ["code", "title"]) if (!m.has(k)) fail(`problem.${k} is missing`);
  p.title = clamp(p.title, MaxTitleChars);
  detail = clamp(detail, MaxDetailChars);
  if (!codePattern.test(p.code)) fail(`problem.code ${JSON.stringify(p.code)} must match ${codePattern.source}`);
  if (p.title === "" || charCount(p.title) > MaxTitleChars) fail(`problem.title must be 1 to ${MaxTitleChars} characters`);
  if (detail !== "") p.detail = detail;
  return p;
}

// Exact is what a JS value of the report cannot hold exactly: the state and the result as
// compact JSON, a totalSteps as an integer.
interface Exact {
  state?: string;
  result?: string;
  totalSteps?: bigint;
}

function parseProgress(raw: string, exact: Exact): Progress {
  const m = members(raw, "progress");
  const p: Progress = {};
  for (const k of sortedKeys(m)) {
    const v = m.get(k)!;
    switch (k) {
      case "totalSteps": {
        const d = Decimal.parse(v, "progress.totalSteps");
        if (!d.integral() || d.cmp(1) < 0) fail(`progress.totalSteps ${v.slice(0, 40)} is not an integer of at least 1`);
        exact.totalSteps = d.bigint();
        p.totalSteps = Number(exact.totalSteps);
        break;
      }
      case "percent": {
        const d = Decimal.parse(v, "progress.percent");
        if (d.cmp(0) < 0 || d.cmp(100) > 0) fail(`progress.percent ${v.slice(0, 40)} is not from 0 to 100`);
        p.percent = d.float();
        break;
      }
      case "message": {
        const message = clamp(str(v, "progress.message"), MaxMessageChars);
        if (message !== "") p.message = message;
        break;
      }
      default:
        fail(`${JSON.stringify(k)} is not a member of progress`);
    }
  }
  return p;
}

function parseAwait(raw: string): { signal: string; timeoutSeconds: number } {
  const m = members(raw, "await");
  const a = { signal: "", timeoutSeconds: 0 };
  for (const k of sortedKeys(m)) {
    const v = m.get(k)!;
    if (k === "signal") {
      a.signal = str(v, "await.signal");
      if (!signalNamePattern.test(a.signal)) fail(`await.signal ${JSON.stringify(clamp(a.signal, 80))} must match ${signalNamePattern.source}`);
    } else if (k === "timeoutSeconds") {
      a.timeoutSeconds = integer(v, "await.timeoutSeconds", 1, MaxAwaitSeconds);
    } else fail(`${JSON.stringify(k)} is not a member of await`);
  }
  for (const k of ["signal", "timeoutSeconds"]) if (!m.has(k)) fail(`await.${k} is missing`);
  return a;
}

function parseReport(text: string, exact: Exact): WireReport {
  checkJSON(text);
  const m = members(text, "a report");
  const rawStatus = m.get("status");
  if (rawStatus === undefined) fail("status is missing");
  const status = str(rawStatus, "status") as Status;
  const names = Object.hasOwn(allowed, status) ? allowed[status] : undefined;
  if (names === undefined) fail(`status ${JSON.stringify(status)} is not one of continue, succeeded, failed, outcome_unknown`);
  const r: WireReport = { status };
  let wait = false;
  for (const k of sortedKeys(m)) {
    if (!names.includes(k)) fail(`${JSON.stringify(k)} is not a member of a ${status} report`);
    const v = m.get(k)!;
    switch (k) {
      case "state": {
        const state = compact(v);
        if (bytes(state) > MaxStateBytes) fail(`state takes ${bytes(state)} bytes as compact JSON, more than ${MaxStateBytes}`);
        if (state !== "null") {
          r.state = JSON.parse(state);
          exact.state = state;
        }
        break;
      }
      case "delaySeconds":
        r.delaySeconds = integer(v, "delaySeconds", 0, MaxDelaySeconds);
        break;
      case "wait":
        if (v === "true") wait = true;
        else if (v !== "false") fail(`wait must be true or false, not ${v.slice(0, 40)}`);
        break;
      case "await":
        r.await = parseAwait(v);
        break;
      case "result": {
        members(v, "result");
        const result = compact(v);
        if (bytes(result) > MaxResultBytes) fail(`result takes ${bytes(result)} bytes as compact JSON, more than ${MaxResultBytes}`);
        r.result = JSON.parse(result);
        exact.result = result;
        break;
      }
      case "problem":
        r.problem = parseProblem(v);
        break;
      case "progress":
        r.progress = parseProgress(v, exact);
        break;
    }
  }
  if (wait) r.wait = true;
  if (status === "failed" && r.problem === undefined) fail("status failed needs a problem");
  if (r.await !== undefined && (wait || r.delaySeconds !== undefined)) {
    fail("await cannot go with wait or delaySeconds: a report waits for a signal or for a time");
  }
  // In the protocol's order, as a Report writes it.
  const out: WireReport = { status };
  for (const k of ["state", "result", "problem", "progress", "delaySeconds", "wait", "await"] as const) {
    if (r[k] !== undefined) (out as unknown as Record<string, unknown>)[k] = r[k];
  }
  return out;
}

// write is the report as JSON, in the protocol's order, exact where Exact says.
function write(r: WireReport, exact: Exact): string {
  const parts = [`"status":${JSON.stringify(r.status)}`];
  if (exact.state !== undefined) parts.push(`"state":${exact.state}`);
  if (exact.result !== undefined) parts.push(`"result":${exact.result}`);
  if (r.problem !== undefined) parts.push(`"problem":${JSON.stringify(r.problem)}`);
  if (r.progress !== undefined) {
    const p: string[] = [];
    if (exact.totalSteps !== undefined) p.push(`"totalSteps":${exact.totalSteps}`);
    if (r.progress.percent !== undefined) p.push(`"percent":${JSON.stringify(r.progress.percent)}`);
    if (r.progress.message !== undefined) p.push(`"message":${JSON.stringify(r.progress.message)}`);
    parts.push(`"progress":{${p.join(",")}}`);
  }
  if (r.delaySeconds !== undefined) parts.push(`"delaySeconds":${r.delaySeconds}`);
  if (r.wait) parts.push(`"wait":true`);
  if (r.await !== undefined) parts.push(`"await":${JSON.stringify(r.await)}`);
  return `{${parts.join(",")}}`;
}

/**
 * Reads the JSON text of a worker's answer exactly as longrun's recorder does (numbers
 * exactly, sizes as compact JSON, text over its limit cut): valid with the report as
 * longrun records it, or not, with why (longrun records outcome_unknown, invalid_report).
 */
export function validateReportJSON(text: string): ReportCheck {
  try {
    const exact: Exact = {};
    const report = parseReport(text, exact);
    return { valid: true, report, json: write(report, exact) };
  } catch (e) {
    return { valid: false, error: `invalid step report: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/**
 * Checks a value a step function would return as longrun's recorder does: the value as the
 * Node.js runtime sends it (JSON.stringify, so a Report is checked by its toJSON), read by
 * validateReportJSON. A number's exact spelling is lost once it is a JS number: give
 * validateReportJSON the text to check one (100.00000000000000001 is a JS 100).
 */
export function validateReport(value: unknown): ReportCheck {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    return { valid: false, error: `invalid step report: ${e instanceof Error ? e.message : String(e)}` };
  }
  return validateReportJSON(text ?? "null");
}
