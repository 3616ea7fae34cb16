// The step report: what a step function returns (docs/worker-protocol.md,
// api/worker/step-report.schema.json). The Go package's report.go is the model: the same
// builders, the same checks, the same cutting of text, the same JSON.

import {
  CodeResultLost, MaxAwaitSeconds, MaxDelaySeconds, MaxDetailChars, MaxMessageChars, MaxResultBytes,
  MaxStateBytes, MaxTitleChars, type Status,
} from "./protocol.js";

/**
 * How far the work has come, shown on the operation. Every member is optional; as in the Go
 * package, a totalSteps of 0 and an empty message are "not reported" and left out.
 */
export interface Progress {
  /** How many steps the work is expected to take: an integer, at least 1. */
  totalSteps?: number;
  /** How much of the work is done, 0 to 100. */
  percent?: number;
  /** What is going on, in at most MaxMessageChars characters; withProgress cuts a longer one. */
  message?: string;
}

/** A report's problem as it is sent. */
export interface WireProblem {
  code: string;
  title: string;
  detail?: string;
}

/** A report's wait for a signal as it is sent. */
export interface WireAwait {
  signal: string;
  timeoutSeconds: number;
}

/** A report as it is sent: the step's return value, members in the protocol's order. */
export interface WireReport {
  status: Status;
  state?: unknown;
  result?: Record<string, unknown>;
  problem?: WireProblem;
  progress?: Progress;
  delaySeconds?: number;
  wait?: boolean;
  await?: WireAwait;
}

/**
 * Says why a step failed, in the protocol's terms: code matches ^[a-z][a-z0-9_]{0,63}$ and
 * names the kind of failure for programs, title (1 to MaxTitleChars characters) says it to
 * people, detail (at most MaxDetailChars) says what happened this time; longer text is cut.
 *
 * A Problem is also an Error: a step function that throws one (or an error whose `cause`
 * chain holds one) makes a failed report, as Fail does, instead of failing the invocation.
 */
export class Problem extends Error {
  readonly code: string;
  readonly title: string;
  readonly detail: string;

  constructor(code: string, title: string, detail = "") {
    super(detail === "" ? `${code}: ${title}` : `${code}: ${title}: ${detail}`);
    this.name = "Problem";
    this.code = code;
    this.title = title;
    this.detail = detail;
  }
}

/** A report that breaks the protocol: the worker's bug, which fails the invocation. */
export class ReportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReportError";
  }
}

function isLoneSurrogate(c: string): boolean {
  if (c.length !== 1) return false;
  const u = c.charCodeAt(0);
  return u >= 0xd800 && u <= 0xdfff;
}

/**
 * The number of characters of s as the protocol counts them: Unicode code points (an
 * astral character, two UTF-16 units, is one; a lone surrogate, which JSON carries as an
 * escape that longrun reads as U+FFFD, is one).
 */
export function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Cuts s to at most limit characters (code points), the last of them "…" when it cut: its
 * first limit-1 characters and "…". A lone surrogate counts as one character and, in a cut
 * result, becomes U+FFFD, as longrun reads it; a text that is not cut is returned as it is.
 * A limit below 1 gives "". It is the Go package's clamp (longrun's runes.Cut), with JS's
 * UTF-16 in place of Go's UTF-8.
 */
export function clamp(s: string, limit: number): string {
  if (limit < 1) return "";
  let n = 0;
  for (const _ of s) {
    if (++n > limit) break;
  }
  if (n <= limit) return s;
  let out = "";
  let i = 0;
  for (const c of s) {
    if (i === limit - 1) break;
    out += isLoneSurrogate(c) ? "\ufffd" : c;
    i++;
  }
  return out + "…";
}

/** The bytes of s as UTF-8 (JSON.stringify's output holds no lone surrogate). */
function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, "utf8");
}

const codePattern = /^[a-z][a-z0-9_]{0,63}$/;
const signalNamePattern = /^[a-z][a-z0-9_-]{0,63}$/;

/** The members each status allows. */
const allowed: Record<Status, readonly string[]> = {
  continue: ["status", "state", "progress", "delaySeconds", "wait", "await"],
  succeeded: ["status", "result", "progress"],
  failed: ["status", "problem", "progress"],
  outcome_unknown: ["status", "problem", "progress"],
};

interface Fields {
  readonly status: Status;
  readonly state?: string | undefined; // JSON
  readonly result?: string | undefined; // JSON
  readonly problem?: WireProblem | undefined;
  readonly progress?: Progress | undefined;
  readonly delay?: number | undefined;
  readonly wait: boolean;
  readonly await?: WireAwait | undefined;
  readonly errors: readonly string[]; // from building it
}

// encode is the JSON of v, or undefined for none (undefined, null, or what encodes as null),
// or the error that encoding it gave.
function encode(what: string, v: unknown): { json?: string; error?: string } {
  if (v === undefined || v === null) return {};
  let json: string | undefined;
  try {
    json = JSON.stringify(v);
  } catch (e) {
    return { error: `worker: encode the ${what}: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (json === undefined) return { error: `worker: encode the ${what}: a ${typeof v} is not JSON` };
  return json === "null" ? {} : { json };
}

const brand = Symbol.for("@longrun/worker.Report");

function quote(s: string): string {
  return JSON.stringify(clamp(s, 80));
}

/**
 * What a step returns to longrun. Build one with Continue, Succeed, Fail or ResultLost; its
 * methods return modified copies. It is checked against the protocol when it is encoded
 * (toJSON, which JSON.stringify calls, and the handler): a report that breaks the
 * protocol's limits is an error there, not a report longrun would have to refuse.
 */
export class Report {
  readonly #f: Fields;

  /** @internal Use Continue, Succeed, Fail or ResultLost. */
  constructor(fields: Fields) {
    this.#f = fields;
    Object.defineProperty(this, brand, { value: true });
    Object.freeze(this);
  }

  /** Whether v is a Report (of any copy of this package). */
  static isReport(v: unknown): v is Report {
    return typeof v === "object" && v !== null && (v as Record<symbol, unknown>)[brand] === true;
  }

  #with(changes: Partial<Fields>): Report {
    return new Report({ ...this.#f, ...changes });
  }

  #continuing(method: string): string | undefined {
    if (this.#f.status === "continue") return undefined;
    return `worker: ${method} is only for a continue report, not a ${JSON.stringify(this.#f.status)} one`;
  }

  /**
   * A continue report that asks longrun to wait the type's configured stepDelay before the
   * next step: how a worker polls without sleeping in Lambda. after() wins over it.
   */
  wait(): Report {
    const err = this.#continuing("wait");
    return err ? this.#with({ errors: [...this.#f.errors, err] }) : this.#with({ wait: true });
  }

  /**
   * A continue report that asks longrun to wait `seconds` (rounded up to a whole second, 0
   * to MaxDelaySeconds) before the next step. It wins over wait(); after(0) asks for the
   * next step at once even if wait() was called.
   */
  after(seconds: number): Report {
    const err = this.#continuing("after");
    if (err) return this.#with({ errors: [...this.#f.errors, err] });
    if (typeof seconds !== "number" || !(seconds >= 0 && seconds <= MaxDelaySeconds)) {
      return this.#with({ errors: [...this.#f.errors, `worker: a delay of ${String(seconds)}s is not between 0 and ${MaxDelaySeconds}s`] });
    }
    return this.#with({ delay: Math.ceil(seconds) });
  }

  /**
   * A continue report that asks longrun to run the next step when the signal called name
   * arrives, or when timeoutSeconds (rounded up to a whole second, more than 0 and at most
   * MaxAwaitSeconds) have passed without it. Nothing runs while the work waits. name must
   * match ^[a-z][a-z0-9_-]{0,63}$ and be a signal the type declares. A report waits for a
   * signal or for a time, not both: awaitSignal with wait() or after() is an error when the
   * report is encoded.
   */
  awaitSignal(name: string, timeoutSeconds: number): Report {
    const err = this.#continuing("awaitSignal");
    if (err) return this.#with({ errors: [...this.#f.errors, err] });
    if (typeof timeoutSeconds !== "number" || !(timeoutSeconds > 0 && timeoutSeconds <= MaxAwaitSeconds)) {
      return this.#with({
        errors: [...this.#f.errors, `worker: the timeout ${String(timeoutSeconds)}s of the wait for the signal ${quote(String(name))} is not more than 0 and at most ${MaxAwaitSeconds}s`],
      });
    }
    return this.#with({ await: { signal: name, timeoutSeconds: Math.ceil(timeoutSeconds) } });
  }

  /** The report with p as its progress, its message cut to MaxMessageChars as Fail cuts a detail. */
  withProgress(p: Progress): Report {
    const progress: Progress = {};
    if (p.totalSteps !== undefined && p.totalSteps !== 0) progress.totalSteps = p.totalSteps;
    if (p.percent !== undefined && p.percent !== null) progress.percent = p.percent;
    const message = typeof p.message === "string" ? clamp(p.message, MaxMessageChars) : p.message;
    if (message !== undefined && message !== "") progress.message = message;
    return this.#with({ progress });
  }

  /** The report's status. */
  get status(): Status {
    return this.#f.status;
  }

  /** The state a continue report carries (a fresh copy), or undefined when it carries none. */
  get state(): unknown {
    return this.#f.state === undefined ? undefined : JSON.parse(this.#f.state);
  }

  /** A succeeded report's result ({} when it was given none); undefined for the other statuses. */
  get result(): Record<string, unknown> | undefined {
    if (this.#f.status === "succeeded" && this.#f.result === undefined) return {};
    return this.#f.result === undefined ? undefined : JSON.parse(this.#f.result);
  }

  /** The report's problem (a copy), or undefined. */
  get problem(): WireProblem | undefined {
    return this.#f.problem === undefined ? undefined : { ...this.#f.problem };
  }

  /** The report's progress (a copy), or undefined. */
  get progress(): Progress | undefined {
    return this.#f.progress === undefined ? undefined : { ...this.#f.progress };
  }

  /** The delay a continue report asks for with after(), in seconds, or undefined. */
  get delaySeconds(): number | undefined {
    return this.#f.delay;
  }

  /** Whether a continue report asks for the type's stepDelay (wait()). after() wins over it. */
  get waitsStepDelay(): boolean {
    return this.#f.wait;
  }

  /** The signal a continue report waits for with awaitSignal() and the wait's timeout, or undefined. */
  get awaitsSignal(): WireAwait | undefined {
    return this.#f.await === undefined ? undefined : { ...this.#f.await };
  }

  /** Checks the report against the protocol's rules and limits; throws a ReportError when it breaks them. */
  validate(): void {
    const f = this.#f;
    if (f.errors.length > 0) throw new ReportError(f.errors.join("\n"));
    const names = allowed[f.status];
    if (names === undefined) {
      throw new ReportError(`worker: invalid report: status ${JSON.stringify(f.status)} is not one of continue, succeeded, failed, outcome_unknown`);
    }
    const errs: string[] = [];
    const present: [string, boolean][] = [
      ["state", f.state !== undefined], ["result", f.result !== undefined], ["problem", f.problem !== undefined],
      ["delaySeconds", f.delay !== undefined], ["wait", f.wait], ["await", f.await !== undefined],
    ];
    for (const [name, is] of present) {
      if (is && !names.includes(name)) errs.push(`${name} is not a member of a ${f.status} report`);
    }
    if (f.state !== undefined && utf8Bytes(f.state) > MaxStateBytes) {
      errs.push(`the state takes ${utf8Bytes(f.state)} bytes, more than ${MaxStateBytes}`);
    }
    if (f.result !== undefined) {
      if (f.result[0] !== "{") errs.push(`the result must be a JSON object, not ${f.result.slice(0, 40)}`);
      else if (utf8Bytes(f.result) > MaxResultBytes) errs.push(`the result takes ${utf8Bytes(f.result)} bytes, more than ${MaxResultBytes}`);
    }
    if (f.delay !== undefined && !(f.delay >= 0 && f.delay <= MaxDelaySeconds)) {
      errs.push(`delaySeconds ${f.delay} is not between 0 and ${MaxDelaySeconds}`);
    }
    const a = f.await;
    if (a !== undefined) {
      if (typeof a.signal !== "string" || !signalNamePattern.test(a.signal)) {
        errs.push(`the signal name ${quote(String(a.signal))} does not match ${signalNamePattern.source}`);
      }
      if (!(a.timeoutSeconds >= 1 && a.timeoutSeconds <= MaxAwaitSeconds)) {
        errs.push(`await timeoutSeconds ${a.timeoutSeconds} is not between 1 and ${MaxAwaitSeconds}`);
      }
      if (f.wait || f.delay !== undefined) {
        errs.push("a report waits for a signal (awaitSignal) or for a time (wait, after), not both");
      }
    }
    if (f.status === "failed" && f.problem === undefined) errs.push("a failed report needs a problem");
    const p = f.problem;
    if (p !== undefined) {
      if (typeof p.code !== "string" || !codePattern.test(p.code)) {
        errs.push(`problem code ${JSON.stringify(p.code)} does not match ${codePattern.source}`);
      }
      if (typeof p.title !== "string") {
        errs.push("the problem's title must be a string");
      } else {
        const n = charCount(p.title);
        if (n === 0 || n > MaxTitleChars) errs.push(`the problem's title must have 1 to ${MaxTitleChars} characters, not ${n}`);
      }
      if (p.detail !== undefined) {
        if (typeof p.detail !== "string") errs.push("the problem's detail must be a string");
        else if (charCount(p.detail) > MaxDetailChars) {
          errs.push(`the problem's detail must have at most ${MaxDetailChars} characters, not ${charCount(p.detail)}`);
        }
      }
    }
    const g = f.progress;
    if (g !== undefined) {
      if (g.totalSteps !== undefined && !(typeof g.totalSteps === "number" && Number.isSafeInteger(g.totalSteps) && g.totalSteps >= 1)) {
        errs.push(`progress totalSteps ${String(g.totalSteps)} is not an integer of at least 1`);
      }
      if (g.percent !== undefined && !(typeof g.percent === "number" && g.percent >= 0 && g.percent <= 100)) {
        errs.push(`progress percent ${String(g.percent)} is not between 0 and 100`);
      }
      if (g.message !== undefined) {
        if (typeof g.message !== "string") errs.push("the progress message must be a string");
        else if (charCount(g.message) > MaxMessageChars) {
          errs.push(`the progress message must have at most ${MaxMessageChars} characters, not ${charCount(g.message)}`);
        }
      }
    }
    if (errs.length > 0) throw new ReportError(`worker: invalid ${f.status} report: ${errs.join("\n")}`);
  }

  /**
   * The report as the step's return value, after checking it against the protocol (it
   * throws a ReportError when the report breaks it): what JSON.stringify writes.
   */
  toJSON(): WireReport {
    this.validate();
    const f = this.#f;
    const out: WireReport = { status: f.status };
    if (f.state !== undefined) out.state = JSON.parse(f.state);
    if (f.result !== undefined) out.result = JSON.parse(f.result);
    if (f.problem !== undefined) {
      out.problem = { code: f.problem.code, title: f.problem.title };
      if (f.problem.detail !== undefined && f.problem.detail !== "") out.problem.detail = f.problem.detail;
    }
    if (f.progress !== undefined) {
      const p: Progress = {};
      if (f.progress.totalSteps !== undefined) p.totalSteps = f.progress.totalSteps;
      if (f.progress.percent !== undefined) p.percent = f.progress.percent;
      if (f.progress.message !== undefined) p.message = f.progress.message;
      out.progress = p;
    }
    if (f.delay !== undefined) out.delaySeconds = f.delay;
    if (f.wait) out.wait = true;
    if (f.await !== undefined) out.await = { signal: f.await.signal, timeoutSeconds: f.await.timeoutSeconds };
    return out;
  }
}

/**
 * Reports that the work is not done: longrun invokes the next step with state (any JSON
 * value of at most MaxStateBytes as compact JSON) as the next step's state(). No state,
 * undefined or null carries none. Without wait(), after() or awaitSignal() the next step is
 * invoked at once.
 */
export function Continue(state?: unknown): Report {
  const { json, error } = encode("state", state);
  return new Report({ status: "continue", state: json, wait: false, errors: error ? [error] : [] });
}

/**
 * Reports that the work is done, with result (a JSON object of at most MaxResultBytes as
 * compact JSON) as the operation's result. No result, undefined or null, is the empty object.
 */
export function Succeed(result?: object | null): Report {
  const { json, error } = encode("result", result);
  return new Report({ status: "succeeded", result: json, wait: false, errors: error ? [error] : [] });
}

function newProblem(code: string, title: string, detail: string): WireProblem {
  return {
    code,
    title: typeof title === "string" ? clamp(title, MaxTitleChars) : title,
    detail: typeof detail === "string" ? clamp(detail, MaxDetailChars) : detail,
  };
}

/**
 * Reports that the work did not and will not happen, for the reason the problem says (see
 * Problem; detail may be empty). A title longer than MaxTitleChars characters, or a detail
 * longer than MaxDetailChars, is cut to its limit on a character boundary and ends with
 * "…", so text from elsewhere never makes a report that the protocol refuses.
 *
 * Fail only when nothing of the work happened, or what happened is undone: after an effect
 * whose result is lost, report ResultLost.
 */
export function Fail(code: string, title: string, detail = ""): Report {
  return new Report({ status: "failed", problem: newProblem(code, title, detail), wait: false, errors: [] });
}

/**
 * Reports that the work may have happened and its result is lost (status outcome_unknown),
 * with the problem code result_lost and detail, if not empty, cut as Fail cuts it. longrun
 * records outcome_unknown and never retries the work blindly.
 */
export function ResultLost(detail = ""): Report {
  return new Report({ status: "outcome_unknown", problem: newProblem(CodeResultLost, "The result of the step is lost.", detail), wait: false, errors: [] });
}

/** @internal The report a step that failed after its stepTimeout comes to. */
export function outcomeUnknown(code: string, title: string, detail: string): Report {
  return new Report({ status: "outcome_unknown", problem: { code, title, detail }, wait: false, errors: [] });
}
