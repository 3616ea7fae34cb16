// A stand-in for an export service's client, in memory, so that the example runs anywhere:
// a job is done after it was polled twice. Your worker calls your own service here.

export type JobStatus =
  | { state: "running"; percent: number }
  | { state: "done"; rows: number }
  | { state: "failed"; error: string };

export interface ExportService {
  /** Submits an export job, once per idempotency key: the same key gives the same job. */
  submit(bucket: string, idempotencyKey: string, signal: AbortSignal): Promise<string>;
  /** How the job is doing: a read, safe to repeat. */
  status(jobId: string, signal: AbortSignal): Promise<JobStatus>;
}

/** The service refused the job: nothing was submitted. */
export class Rejected extends Error {}

export function inMemoryExports(): ExportService & { submitted: number } {
  const jobs = new Map<string, string>(); // idempotency key → job id
  const polls = new Map<string, number>();
  return {
    submitted: 0,
    async submit(bucket, idempotencyKey, signal) {
      signal.throwIfAborted();
      if (!/^[a-z0-9.-]{3,63}$/.test(bucket)) throw new Rejected(`there is no bucket ${JSON.stringify(bucket)}`);
      let id = jobs.get(idempotencyKey);
      if (id === undefined) {
        id = `job-${jobs.size + 1}`;
        jobs.set(idempotencyKey, id);
        this.submitted++;
      }
      return id;
    },
    async status(jobId, signal) {
      signal.throwIfAborted();
      const n = (polls.get(jobId) ?? 0) + 1;
      polls.set(jobId, n);
      return n < 2 ? { state: "running", percent: 50 } : { state: "done", rows: 92 };
    },
  };
}
