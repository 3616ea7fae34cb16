// @longrun/worker: the worker of a longrun operation type in TypeScript, for AWS's managed
// Node.js runtime. It speaks the step protocol longrun.step.v1 (docs/worker-protocol.md) as
// the Go package github.com/longrun-dev/longrun/worker does.

export {
  CodeInvalidInput, CodeInvalidRequest, CodeResultLost, CodeStepTimeout, MaxAwaitSeconds, MaxDelaySeconds,
  MaxDetailChars, MaxMessageChars, MaxResultBytes, MaxStateBytes, MaxTitleChars, Protocol, RequestError,
  StatusContinue, StatusFailed, StatusOutcomeUnknown, StatusSucceeded, ViaAPI, ViaCallback, parseStepRequest,
  type Awaited, type Signal, type Status, type Step, type StepRequest, type WireSignal,
} from "./protocol.js";
export {
  Continue, Fail, Problem, Report, ReportError, ResultLost, Succeed, clamp,
  type Progress, type WireAwait, type WireProblem, type WireReport,
} from "./report.js";
export {
  longrunHandler, run, type HandlerOptions, type LambdaContext, type LongrunHandler, type Options, type RunOptions,
  type StepContext, type StepFunction,
} from "./handler.js";
export { validateReport, validateReportJSON, type ReportCheck } from "./validate.js";
export type { LogWriter } from "./log.js";
