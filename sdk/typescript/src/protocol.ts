// The step request: what longrun sends a worker for each step (docs/worker-protocol.md,
// api/worker/step-request.schema.json), and the Step a step function reads it through. The
// Go package's protocol.go is the model: the same members, the same refusals.

/** The version of the step protocol this package speaks: the `protocol` of every step request. */
export const Protocol = "longrun.step.v1";

/** A step report's status. */
export type Status = "continue" | "succeeded" | "failed" | "outcome_unknown";

/** The work is not done; longrun invokes the next step, carrying the report's state. */
export const StatusContinue: Status = "continue";
/** The work is done; the report's result is the operation's result. */
export const StatusSucceeded: Status = "succeeded";
/** The work did not and will not happen; the report's problem says why. */
export const StatusFailed: Status = "failed";
/** The work may have happened and its result is lost; longrun never retries it blindly. */
export const StatusOutcomeUnknown: Status = "outcome_unknown";

/** The most a continue report's state may take, in bytes of UTF-8 as compact JSON (32 KiB). */
export const MaxStateBytes = 32 << 10;
/** The most a succeeded report's result may take, in bytes of UTF-8 as compact JSON (64 KiB). */
export const MaxResultBytes = 64 << 10;
/** The longest delay a continue report may ask for, in seconds (24 hours). */
export const MaxDelaySeconds = 86400;
/** The longest a continue report may wait for a signal, in seconds (30 days). */
export const MaxAwaitSeconds = 30 * 86400;
/**
 * The most characters (Unicode code points, not UTF-16 units) of a problem's title, a
 * problem's detail and a progress message. Fail, ResultLost and Report.withProgress cut
 * longer text to its limit.
 */
export const MaxTitleChars = 200;
export const MaxDetailChars = 2000;
export const MaxMessageChars = 200;

/** The request's input is not what the step function reads (`parseInput` threw). */
export const CodeInvalidInput = "invalid_input";
/** The invocation is not a step request of this Protocol. */
export const CodeInvalidRequest = "invalid_request";
/** The problem code of ResultLost. */
export const CodeResultLost = "result_lost";
/** The step function failed after its stepTimeoutSeconds had passed: outcome_unknown. */
export const CodeStepTimeout = "step_timeout";

/** A signal sent by a principal through longrun's API: its `sender` names it. */
export const ViaAPI = "api";
/** A signal sent through its callback URL, without credentials: it has no `sender`. */
export const ViaCallback = "callback";

/** A signal as the request carries it. */
export interface WireSignal {
  name: string;
  data: Record<string, unknown>;
  receivedAt: string;
  sender?: string;
  via: string;
}

/** What a wait for a signal came to, on the step right after it. */
export interface Awaited {
  /** The name of the signal the previous step waited for. */
  readonly signal: string;
  /** true: the wait's timeout passed before the signal arrived (none of that name is in signals). */
  readonly timedOut: boolean;
}

/**
 * A step request as longrun sends it: the invocation's payload. Tests build one (only what
 * their step function reads, plus `input`) to `run` a step function.
 */
export interface StepRequest {
  protocol?: string;
  operationId?: string;
  type?: string;
  version?: number;
  input?: unknown;
  step?: number;
  maxSteps?: number;
  /** Absent on a step's first run; 2 and up when an operator had it run again. */
  attempt?: number;
  state?: unknown;
  /** UTC with milliseconds, such as 2026-12-01T12:00:00.000Z. */
  deadline?: string;
  stepTimeoutSeconds?: number;
  correlationId?: string;
  signals?: WireSignal[];
  awaited?: Awaited;
  callbacks?: Record<string, string>;
  /** longrun's MAC over the rest of the request: opaque to the worker. */
  seal?: string;
}

/**
 * A signal the operation received from the world while its work ran, such as an approval or
 * a webhook's call. D is the type of its data, a JSON object valid under the signal's schema.
 */
export interface Signal<D = Record<string, unknown>> {
  /** The signal's name, as the type declares it. */
  readonly name: string;
  /** Its data (the empty object when the request carried none). */
  readonly data: D;
  /** When longrun received it. */
  readonly receivedAt: Date;
  /** The principal that sent it through longrun's API; "" for a signal sent through a callback URL. */
  readonly sender: string;
  /** How it was sent: "api" or "callback". */
  readonly via: string;
}

/** What a step function knows about the step it runs. */
export interface Step<In = unknown> {
  readonly operationId: string;
  readonly type: string;
  readonly version: number;
  /** The step's number, from 1. */
  readonly number: number;
  /** The most steps the type allows. */
  readonly maxSteps: number;
  /** The how-manieth run of this step, from 1 (2 and up when an operator had it run again). */
  readonly attempt: number;
  /** The operation's deadline: longrun starts no step after it. */
  readonly deadline: Date;
  /** How long this invocation may run, in seconds; the step's AbortSignal aborts then. */
  readonly stepTimeoutSeconds: number;
  /** The same in milliseconds. */
  readonly stepTimeoutMs: number;
  /** The operation's correlation id ("" when the request has none): log it as correlation_id. */
  readonly correlationId: string;
  /** The operation's input, validated by longrun (and by `parseInput` when given). */
  readonly input: In;
  /**
   * The signals that arrived since the previous step was given its own, in the order they
   * arrived (empty when none did). Each is given to one step only.
   */
  readonly signals: readonly Signal[];
  /** What the previous step's wait for a signal came to; undefined when it did not wait. */
  readonly awaited: Awaited | undefined;
  /**
   * The state the previous step carried (a fresh copy on every call), or undefined: on the
   * first step, after a step that carried none, or when the state carried is null.
   */
  state<S = unknown>(): S | undefined;
  /** The last signal called name the step received (the one that stands), or undefined. */
  signal<D = Record<string, unknown>>(name: string): Signal<D> | undefined;
  /** The callback URL of the type's signal called name, or undefined when it has none. */
  callbackUrl(name: string): string | undefined;
  /** The step's deduplication identity, `<operationId>-step-<number>`, for whatever it changes downstream. */
  idempotencyKey(): string;
}

/** The invocation is not a step request of this Protocol (or a member has the wrong type). */
export class RequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RequestError";
  }
}

/** A request's members, decoded and typed as the Go package's Request holds them. */
export interface DecodedRequest {
  protocol: string;
  operationId: string;
  type: string;
  version: number;
  /** undefined when the request has no input (which Go's decoder refuses as invalid_input). */
  input: unknown;
  step: number;
  maxSteps: number;
  attempt: number;
  state: unknown;
  deadline: Date;
  stepTimeoutSeconds: number;
  correlationId: string;
  signals: Signal[];
  awaited: Awaited | undefined;
  callbacks: Map<string, string>;
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v === "object" ? "object" : typeof v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function mismatch(what: string, v: unknown, want: string): RequestError {
  return new RequestError(`${what}: cannot read a JSON ${typeName(v)} as ${want}`);
}

function str(v: unknown, what: string): string {
  if (typeof v !== "string") throw mismatch(what, v, "a string");
  return v;
}

// An integer member, read as JSON Schema reads integers (3.0 is 3) and as the Go package
// reads them: of at most 18 digits.
function int(v: unknown, what: string): number {
  if (typeof v !== "number") throw mismatch(what, v, "an integer");
  if (!Number.isInteger(v) || Math.abs(v) >= 1e18) throw new RequestError(`${what} ${v} is not an integer`);
  return v;
}

function bool(v: unknown, what: string): boolean {
  if (typeof v !== "boolean") throw mismatch(what, v, "a boolean");
  return v;
}

/** Go's zero time, 0001-01-01T00:00:00Z: what a request without a deadline has. */
const zeroTime = -62135596800000;

function daysIn(month: number, year: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
}

// RFC 3339 as Go's time.Time reads it from JSON: YYYY-MM-DDTHH:MM:SS, an optional fraction
// of a second, and Z or an offset, every field in its range. (Go also takes, through its
// lenient fallback, a one-digit hour, a comma before the fraction and an offset of up to
// 24:60; so does this.) The fraction is kept to the millisecond: a Date holds no more.
const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2})$/;

function time(v: unknown, what: string): Date {
  if (typeof v !== "string") throw new RequestError(`${what}: Time.UnmarshalJSON: input is not a JSON string`);
  const m = rfc3339.exec(v);
  const bad = () => new RequestError(`${what}: ${JSON.stringify(v)} is not an RFC 3339 time`);
  if (!m) throw bad();
  const [year, month, day, hour, min, sec] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || min > 59 || sec > 59) throw bad();
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, "0"));
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, min, sec, ms);
  let t = d.getTime();
  const zone = m[8]!;
  if (zone !== "Z") {
    const offHour = Number(zone.slice(1, 3));
    const offMin = Number(zone.slice(4, 6));
    if (offHour > 24 || offMin > 60) throw bad();
    const offset = (offHour * 60 + offMin) * 60_000;
    t -= zone[0] === "-" ? -offset : offset;
  }
  return new Date(t);
}

const requestFields = [
  "protocol", "operationId", "type", "version", "input", "step", "maxSteps", "attempt", "state",
  "deadline", "stepTimeoutSeconds", "correlationId", "signals", "awaited", "callbacks",
] as const;
const signalFields = ["name", "data", "receivedAt", "sender", "via"] as const;
const awaitedFields = ["signal", "timedOut"] as const;

function decodeSignal(v: unknown, what: string): Signal {
  const s = { name: "", data: undefined as unknown, receivedAt: new Date(zeroTime), sender: "", via: "" };
  if (!isObject(v)) throw new RequestError(`${what}: a signal must be a JSON object`);
  for (const field of signalFields) {
    const value = v[field];
    if (value === undefined || value === null) continue; // null leaves the zero value
    switch (field) {
      case "name": s.name = str(value, `${what}.name`); break;
      case "data": s.data = value; break;
      case "receivedAt": s.receivedAt = time(value, `${what}.receivedAt`); break;
      case "sender": s.sender = str(value, `${what}.sender`); break;
      case "via": s.via = str(value, `${what}.via`); break;
    }
  }
  return signalOf(s);
}

function signalOf(s: { name: string; data: unknown; receivedAt: Date; sender: string; via: string }): Signal {
  // Data the request leaves out (or sends as null) reads as the empty object, as the Go
  // package's Signal.Decode reads empty data.
  const data = s.data === undefined || s.data === null ? {} : s.data;
  return Object.freeze({ name: s.name, data: data as Record<string, unknown>, receivedAt: s.receivedAt, sender: s.sender, via: s.via });
}

function decodeAwaited(v: unknown): Awaited {
  if (!isObject(v)) throw new RequestError("awaited must be a JSON object");
  const a = { signal: "", timedOut: false };
  for (const field of awaitedFields) {
    const value = v[field];
    if (value === undefined || value === null) continue;
    if (field === "signal") a.signal = str(value, "awaited.signal");
    else a.timedOut = bool(value, "awaited.timedOut");
  }
  return Object.freeze(a);
}

/**
 * Reads a payload's members as the Go package's Request does: members matched by their
 * exact names, a member of the wrong JSON type is an error, an unknown member (such as
 * longrun's seal) is ignored, null leaves a member at its zero value (the raw input stays
 * null). A payload that is not a JSON object is an error. It does not check that the
 * payload is a step request of this Protocol: checkRequest does.
 */
export function decodeRequest(payload: unknown): DecodedRequest {
  const r: DecodedRequest = {
    protocol: "", operationId: "", type: "", version: 0, input: undefined, step: 0, maxSteps: 0, attempt: 0,
    state: undefined, deadline: new Date(zeroTime), stepTimeoutSeconds: 0, correlationId: "", signals: [],
    awaited: undefined, callbacks: new Map(),
  };
  if (!isObject(payload)) throw new RequestError("a step request must be a JSON object");
  for (const field of requestFields) {
    const v = payload[field];
    if (v === undefined) continue; // absent (JSON has no undefined; a test's object may)
    if (v === null) {
      // A raw member (input, state) keeps the null; any other is left alone.
      if (field === "input") r.input = null;
      if (field === "state") r.state = undefined;
      continue;
    }
    switch (field) {
      case "protocol": r.protocol = str(v, field); break;
      case "operationId": r.operationId = str(v, field); break;
      case "type": r.type = str(v, field); break;
      case "version": r.version = int(v, field); break;
      case "input": r.input = v; break;
      case "step": r.step = int(v, field); break;
      case "maxSteps": r.maxSteps = int(v, field); break;
      case "attempt": r.attempt = int(v, field); break;
      case "state": r.state = v; break;
      case "deadline": r.deadline = time(v, field); break;
      case "stepTimeoutSeconds": r.stepTimeoutSeconds = int(v, field); break;
      case "correlationId": r.correlationId = str(v, field); break;
      case "signals":
        if (!Array.isArray(v)) throw mismatch(field, v, "an array of signals");
        r.signals = v.map((s, i) => decodeSignal(s, `signals[${i}]`));
        break;
      case "awaited": r.awaited = decodeAwaited(v); break;
      case "callbacks": {
        if (!isObject(v)) throw mismatch(field, v, "an object of URLs");
        const m = new Map<string, string>();
        for (const [name, url] of Object.entries(v)) m.set(name, url === null ? "" : str(url, `callbacks.${name}`));
        r.callbacks = m;
        break;
      }
    }
  }
  return r;
}

/** Refuses what is not a step request of this Protocol, as the Go package's handler does. */
export function checkRequest(r: DecodedRequest): void {
  if (r.protocol !== Protocol) throw new RequestError(`protocol ${JSON.stringify(r.protocol)} is not ${JSON.stringify(Protocol)}`);
  if (r.operationId === "") throw new RequestError("operationId is missing");
  if (r.step < 1) throw new RequestError(`step ${r.step} is not a step number (they start at 1)`);
}

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

class StepView<In> implements Step<In> {
  readonly operationId: string;
  readonly type: string;
  readonly version: number;
  readonly number: number;
  readonly maxSteps: number;
  readonly attempt: number;
  readonly deadline: Date;
  readonly stepTimeoutSeconds: number;
  readonly stepTimeoutMs: number;
  readonly correlationId: string;
  readonly input: In;
  readonly signals: readonly Signal[];
  readonly awaited: Awaited | undefined;
  readonly #state: unknown;
  readonly #callbacks: ReadonlyMap<string, string>;

  constructor(r: DecodedRequest, input: In) {
    this.operationId = r.operationId;
    this.type = r.type;
    this.version = r.version;
    this.number = r.step;
    this.maxSteps = r.maxSteps;
    this.attempt = Math.max(r.attempt, 1);
    this.deadline = new Date(r.deadline.getTime());
    this.stepTimeoutSeconds = r.stepTimeoutSeconds;
    this.stepTimeoutMs = r.stepTimeoutSeconds * 1000;
    this.correlationId = r.correlationId;
    this.input = input;
    this.signals = Object.freeze(r.signals.map((s) => Object.freeze({ ...s, data: clone(s.data), receivedAt: new Date(s.receivedAt.getTime()) })));
    this.awaited = r.awaited === undefined ? undefined : Object.freeze({ ...r.awaited });
    this.#state = r.state === null ? undefined : r.state;
    this.#callbacks = new Map(r.callbacks);
  }

  /** @internal The request's callback URLs (for the protocol's vectors). */
  static callbacksOf(s: Step<unknown>): ReadonlyMap<string, string> {
    return s instanceof StepView ? new Map(s.#callbacks) : new Map();
  }

  state<S = unknown>(): S | undefined {
    return this.#state === undefined ? undefined : clone(this.#state as S);
  }

  signal<D = Record<string, unknown>>(name: string): Signal<D> | undefined {
    for (let i = this.signals.length - 1; i >= 0; i--) {
      const s = this.signals[i]!;
      if (s.name === name) return { ...s, data: clone(s.data) as D, receivedAt: new Date(s.receivedAt.getTime()) };
    }
    return undefined;
  }

  callbackUrl(name: string): string | undefined {
    return this.#callbacks.get(name);
  }

  idempotencyKey(): string {
    return `${this.operationId}-step-${this.number}`;
  }
}

/** @internal The callback URLs a Step holds, by signal name. */
export function callbacksOf(s: Step<unknown>): ReadonlyMap<string, string> {
  return StepView.callbacksOf(s);
}

/** The Step a step function sees for a decoded request and its input. */
export function stepOf<In>(r: DecodedRequest, input: In): Step<In> {
  return new StepView(r, input);
}

/**
 * Reads a payload as the Lambda handler does: its members decoded and the payload checked
 * to be a step request of this Protocol (it throws a RequestError otherwise). The Step's
 * input is the request's, unparsed.
 */
export function parseStepRequest(payload: unknown): Step<unknown> {
  const r = decodeRequest(payload);
  checkRequest(r);
  return stepOf(r, r.input);
}
