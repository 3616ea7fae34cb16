// A worker for an "orders.export" operation type, in three steps: step 1 submits an export
// job (once per operation, however often the step is delivered), the later steps poll it,
// longrun waiting between them, each carrying the job's id as state and saying how far the
// export has come.

import { Continue, Fail, Succeed, longrunHandler, type Step, type StepContext } from "@longrun/worker";

import { Rejected, inMemoryExports, type ExportService } from "./exports.js";

export interface ExportInput {
  bucket: string;
}

/** The state carried from step to step. */
interface ExportState {
  jobId: string;
}

/** Reads the operation's input; what it throws makes a failed report (invalid_input). */
export function parseInput(raw: unknown): ExportInput {
  const bucket = (raw as { bucket?: unknown } | null)?.bucket;
  if (typeof bucket !== "string") throw new TypeError("input.bucket must be a string");
  return { bucket };
}

export function exportOrders(exports: ExportService) {
  return async (step: Step<ExportInput>, { signal }: StepContext) => {
    const state = step.state<ExportState>();
    if (state === undefined) {
      // The first step: submit the job, keyed by the operation id (an effect that several
      // steps share), so a redelivered step 1 submits nothing twice.
      let jobId: string;
      try {
        jobId = await exports.submit(step.input.bucket, step.operationId, signal);
      } catch (e) {
        if (e instanceof Rejected) {
          // The service refused: nothing was submitted, and never will be.
          return Fail("export_rejected", "The export service rejected the job.", e.message);
        }
        throw e; // it may have been submitted: outcome unknown
      }
      return Continue({ jobId } satisfies ExportState)
        .after(30)
        .withProgress({ totalSteps: 3, percent: 0, message: "Export submitted." });
    }
    const job = await exports.status(state.jobId, signal); // a read: safe to repeat
    switch (job.state) {
      case "running":
        return Continue(state) // carried again, or the next step has none
          .wait() // again after the type's stepDelay
          .withProgress({ totalSteps: 3, percent: job.percent, message: "Exporting." });
      case "failed":
        return Fail("export_failed", "The export job failed.", job.error);
      case "done":
        return Succeed({ jobId: state.jobId, rows: job.rows })
          .withProgress({ totalSteps: 3, percent: 100, message: "Exported." });
    }
  };
}

// The Lambda function's handler (runtime nodejs20.x or later, handler export.handler).
export const handler = longrunHandler(exportOrders(inMemoryExports()), { parseInput });
