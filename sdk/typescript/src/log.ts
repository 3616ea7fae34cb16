// The one line longrunHandler logs per step, as the Go package's log.go writes it: the field
// names of Powertools for AWS Lambda and of longrun's own functions (timestamp, level,
// message, service, function_request_id, correlation_id, operation_id), so that one Logs
// Insights query follows an operation through longrun and its workers. It never logs the
// input, the state or the result.

import type { LambdaContext } from "./handler.js";
import type { DecodedRequest } from "./protocol.js";
import type { Report } from "./report.js";

/** Where a log line goes (without its newline). */
export type LogWriter = (line: string) => void;

// Standard output, not console.log: the Node.js runtime prefixes what console.log writes
// with its own fields, which would make the line no JSON.
const stdout: LogWriter = (line) => {
  process.stdout.write(line + "\n");
};

export interface StepLogger {
  /** Logs how the step of req ended: its report's status, or (rep undefined) the error that failed it. */
  step(context: LambdaContext | undefined, req: DecodedRequest, rep: Report | undefined, tookMs: number): void;
}

export function newStepLogger(write: LogWriter = stdout): StepLogger {
  const service = process.env["POWERTOOLS_SERVICE_NAME"] || process.env["AWS_LAMBDA_FUNCTION_NAME"] || "";
  return {
    step(context, req, rep, tookMs) {
      const line: Record<string, unknown> = {
        timestamp: new Date().toISOString(),
        level: rep === undefined ? "ERROR" : "INFO",
        message: "step",
        service,
      };
      if (context?.awsRequestId !== undefined) line["function_request_id"] = context.awsRequestId;
      if (req.correlationId !== "") line["correlation_id"] = req.correlationId;
      line["operation_id"] = req.operationId;
      line["step"] = req.step;
      line["duration_ms"] = Math.max(0, Math.floor(tookMs));
      if (rep === undefined) {
        // The error's text may hold what the step worked on: its kind only.
        line["status"] = "error";
      } else {
        line["status"] = rep.status;
        const problem = rep.problem;
        if (problem !== undefined) line["code"] = problem.code;
      }
      write(JSON.stringify(line));
    },
  };
}
