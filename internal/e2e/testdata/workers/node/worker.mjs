// The e2e suite's Node.js worker (type test.node in ../../e2e.types.yaml), written as a team
// writes one with @longrun/worker (sdk/typescript), in plain JavaScript against the SDK as
// `make sdk-typescript-build` builds it: the local stack runs JavaScript, and a relative
// import needs no npm install here. The Python worker (../python/worker.py) does the same
// steps, so one Go test (internal/e2e/runtimes_test.go) holds both to the same results.
//
// outcome "succeed": `steps` steps, each carrying every step number so far as state, the
// last succeeding with them; "fail": a typed failure at step 2; "wait": a 2-second delay
// after step 1, then success with how long the wait took.

import { Continue, Fail, Succeed, longrunHandler } from "../../../../../sdk/typescript/dist/src/index.js";

const outcomes = ["succeed", "fail", "wait"];

/** Reads the input; what it throws is a failed report (invalid_input). */
function parseInput(raw) {
  const { name, outcome, steps } = raw ?? {};
  if (typeof name !== "string" || !outcomes.includes(outcome) || !Number.isInteger(steps)) {
    throw new TypeError("input needs a name, an outcome and a number of steps");
  }
  return { name, outcome, steps };
}

async function work(step) {
  const { name, outcome, steps } = step.input;
  const runtime = `node ${process.version}`;
  if (outcome === "wait") {
    const state = step.state();
    if (state === undefined) {
      return Continue({ startedAt: Date.now() }).after(2).withProgress({ message: "Waiting 2 s." });
    }
    return Succeed({ name, runtime, waitedMs: Date.now() - state.startedAt }).withProgress({ percent: 100, message: "Waited." });
  }
  const seen = [...(step.state()?.seen ?? []), step.number];
  if (seen.length !== step.number) {
    throw new Error(`step ${step.number} got the state of ${seen.length - 1} steps`); // outcome_unknown
  }
  const progress = { totalSteps: steps, percent: Math.floor((100 * step.number) / steps), message: `step ${step.number} of ${steps}` };
  if (outcome === "fail" && step.number === 2) {
    return Fail("asked_to_fail", "The worker failed as asked.", `The node worker failed at step ${step.number}.`).withProgress(progress);
  }
  if (step.number < steps) {
    return Continue({ seen }).withProgress(progress);
  }
  return Succeed({ name, runtime, seen, maxSteps: step.maxSteps }).withProgress(progress);
}

export const handler = longrunHandler(work, { parseInput });
