// Running a step function: run (for tests, without Lambda) and longrunHandler (the Lambda
// function's handler for AWS's managed Node.js runtime). The Go package's handler.go is the
// model.

import { newStepLogger, type LogWriter } from "./log.js";
import {
  CodeInvalidInput, CodeInvalidRequest, CodeStepTimeout, Protocol, RequestError, checkRequest, decodeRequest,
  stepOf, type DecodedRequest, type Step, type StepRequest,
} from "./protocol.js";
import { Fail, Problem, Report, ReportError, outcomeUnknown, type WireReport } from "./report.js";

/** The part of the Node.js runtime's context object this package reads. */
export interface LambdaContext {
  readonly awsRequestId?: string;
  readonly functionName?: string;
  getRemainingTimeInMillis?(): number;
}

/** What a step function gets beside its Step. */
export interface StepContext {
  /**
   * Aborts at the step's stepTimeoutSeconds (its reason a TimeoutError DOMException), or
   * sooner when the invocation's own time runs out. Pass it to whatever the step waits on.
   */
  readonly signal: AbortSignal;
  /** The Node.js runtime's context object; undefined under run() unless a test gives one. */
  readonly lambdaContext: LambdaContext | undefined;
}

/**
 * One operation type's work: it runs one step of it and returns the step's Report. A thrown
 * error is the invocation's failure, which longrun records as outcome_unknown (the step ran
 * and may have acted), except a Problem, which is a failed report; an error after the step's
 * stepTimeoutSeconds is an outcome_unknown report with the code step_timeout.
 */
export type StepFunction<In> = (step: Step<In>, ctx: StepContext) => Promise<Report> | Report;

export interface Options<In> {
  /**
   * Reads the operation's input (already validated against the type's schema by longrun)
   * into In; what it throws makes a failed report with the code invalid_input, and the step
   * function does not run. Without it, the input is the request's as it is.
   */
  parseInput?: ((raw: unknown) => In) | undefined;
}

export interface RunOptions<In> extends Options<In> {
  /** The invocation's own end: the step's signal aborts with it. */
  signal?: AbortSignal | undefined;
  /** Handed to the step function as ctx.lambdaContext. */
  lambdaContext?: LambdaContext | undefined;
}

export interface HandlerOptions<In> extends Options<In> {
  /**
   * Where the one JSON line per step goes: standard output by default (where Lambda sends
   * it to the function's log group), a function of the line, or false for none.
   */
  log?: LogWriter | false | undefined;
}

/** The Lambda handler longrunHandler returns: what AWS's managed Node.js runtime calls. */
export type LongrunHandler = (event: unknown, context?: LambdaContext) => Promise<WireReport>;

// findProblem is the Problem err is, or holds in its cause chain (or an AggregateError's
// errors), as Go's errors.As finds a *Problem in a wrapped error.
function findProblem(err: unknown, depth = 0): Problem | undefined {
  if (err instanceof Problem) return err;
  if (depth > 100 || typeof err !== "object" || err === null) return undefined;
  if (err instanceof AggregateError) {
    for (const e of err.errors) {
      const p = findProblem(e, depth + 1);
      if (p) return p;
    }
  }
  return "cause" in err ? findProblem((err as { cause: unknown }).cause, depth + 1) : undefined;
}

const timeoutTitle = "Step timed out";

/**
 * Runs fn for request as the Lambda handler does, without Lambda: for a team's unit tests.
 * It reads request.input with parseInput (a throw is a failed report with the code
 * invalid_input: fn does not run; so is a request without input), calls fn, turns a thrown
 * Problem into a failed report and checks the report against the protocol: a report that
 * breaks it is thrown (a ReportError), as is any other error from fn, except one after the
 * step's stepTimeoutSeconds (its signal aborts then), which is an outcome_unknown report with
 * the code step_timeout. run does not check the request's protocol or step number (the
 * handler does), so a test sets only what fn reads, and input.
 */
export async function run<In = unknown>(fn: StepFunction<In>, request: StepRequest, options: RunOptions<In> = {}): Promise<Report> {
  return runDecoded(fn, decodeRequest(request), options);
}

async function runDecoded<In>(fn: StepFunction<In>, req: DecodedRequest, options: RunOptions<In>): Promise<Report> {
  if (req.input === undefined) {
    return Fail(CodeInvalidInput, "The operation's input is not what the worker reads.", "unexpected end of JSON input");
  }
  let input: In;
  try {
    input = options.parseInput ? options.parseInput(req.input) : (req.input as In);
  } catch (e) {
    return Fail(CodeInvalidInput, "The operation's input is not what the worker reads.", e instanceof Error ? e.message : String(e));
  }
  // The step's signal aborts at its stepTimeout: the function's own timeout may be longer (a
  // worker serves types of different stepTimeouts, and Lambda runs a step sent to it
  // asynchronously for the function's whole timeout).
  const invocation = options.signal;
  const timed = req.stepTimeoutSeconds > 0;
  const own = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  if (timed) {
    const ms = Math.min(req.stepTimeoutSeconds * 1000, 2 ** 31 - 1);
    timer = setTimeout(() => own.abort(new DOMException(`The step's timeout of ${req.stepTimeoutSeconds}s has passed.`, "TimeoutError")), ms);
  }
  const signal = invocation ? AbortSignal.any([own.signal, invocation]) : own.signal;
  let rep: unknown;
  try {
    rep = await fn(stepOf(req, input), { signal, lambdaContext: options.lambdaContext });
  } catch (err) {
    const p = findProblem(err);
    // The step's own time ran out, not the invocation's (that one is the invocation's
    // failure, which Lambda reports as its timeout).
    if (timed && own.signal.aborted && !invocation?.aborted && p === undefined) {
      // Failed once its time was up: it may have acted before.
      return outcomeUnknown(CodeStepTimeout, timeoutTitle,
        `Step ${req.step} did not finish within its step timeout of ${req.stepTimeoutSeconds}s; it may have acted, so the outcome is unknown.`);
    }
    if (p === undefined) throw err;
    rep = Fail(p.code, p.title, p.detail);
  } finally {
    clearTimeout(timer);
  }
  if (!Report.isReport(rep)) {
    throw new ReportError(`step ${req.step} of ${req.operationId}: worker: the step function returned ${rep === undefined ? "nothing" : "no Report"}: build one with Continue, Succeed, Fail or ResultLost`);
  }
  try {
    rep.validate();
  } catch (e) {
    throw new ReportError(`step ${req.step} of ${req.operationId}: ${e instanceof Error ? e.message : String(e)}`);
  }
  return rep;
}

/**
 * fn as the Lambda function's handler, for AWS's managed Node.js runtime:
 *
 *     export const handler = longrunHandler(step, { parseInput });
 *
 * It reads the step request, runs fn (see run) and returns the report as it is sent. A
 * payload that is not a step request of this Protocol is a failed report with the code
 * invalid_request: fn does not run. An error that fails the step is thrown, so the
 * invocation fails and longrun records outcome_unknown (worker_error).
 *
 * It writes one JSON line per step to standard output: message "step", with the operation
 * id, the correlation id, the step number, its status (or "error") and duration, in the field
 * names longrun's own functions and Powertools for AWS Lambda use. It never logs the input,
 * the carried state or the result.
 */
export function longrunHandler<In = unknown>(fn: StepFunction<In>, options: HandlerOptions<In> = {}): LongrunHandler {
  const log = options.log === false ? undefined : newStepLogger(options.log);
  return async (event: unknown, context?: LambdaContext): Promise<WireReport> => {
    let req: DecodedRequest;
    try {
      req = decodeRequest(event);
      checkRequest(req);
    } catch (e) {
      if (!(e instanceof RequestError)) throw e;
      return Fail(CodeInvalidRequest, "The invocation is not a step request.", `the payload is not a ${Protocol} step request: ${e.message}`).toJSON();
    }
    // The invocation's own end: what the runtime says is left of the function's timeout.
    const invocation = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const left = context?.getRemainingTimeInMillis?.();
    if (typeof left === "number" && Number.isFinite(left)) {
      timer = setTimeout(() => invocation.abort(new DOMException("The invocation's time has run out.", "TimeoutError")), Math.max(0, Math.min(left, 2 ** 31 - 1)));
    }
    const start = performance.now();
    let rep: Report;
    try {
      rep = await runDecoded(fn, req, { parseInput: options.parseInput, signal: invocation.signal, lambdaContext: context });
    } catch (err) {
      log?.step(context, req, undefined, performance.now() - start);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    log?.step(context, req, rep, performance.now() - start);
    return rep.toJSON();
  };
}
