// Package sizing is how big longrun's functions are on Lambda: memory, timeout and reserved
// concurrency. The CDK construct deploys these, and the cost model (cmd/cost) prices
// GB-seconds at the same memory, so the two cannot drift apart.
package sizing

import "time"

// Function is one function's settings on Lambda (arm64).
type Function struct {
	MemoryMB int
	Timeout  time.Duration
	// Reserved is the concurrency the function keeps for itself, and its ceiling; 0 means
	// none reserved (it shares the account's unreserved pool).
	Reserved int
}

// Names of longrun's own functions, as in functions/<name>.
const (
	API        = "api"
	Dispatcher = "dispatcher"
	Notifier   = "notifier"
	Recorder   = "recorder"
	Reconciler = "reconciler"
)

// APIThrottleRate and APIThrottleBurst are the API stage's throttle when the construct's
// props set none: requests a second, and the bucket a burst may take.
const (
	APIThrottleRate  = 100
	APIThrottleBurst = 200
)

// DemoWorkerMemoryMB is the memory of the demo workers that infra/stack deploys
// (functions/worker-*); a team's workers are its own to size.
const DemoWorkerMemoryMB = 512

// Functions returns the settings of longrun's own functions by name. Every one reserves
// concurrency: the dispatcher and notifier (stream consumers: one concurrent batch per
// shard), the recorder and the reconciler (a schedule; one run at a time), so that a flood
// of API calls or worker steps cannot starve the functions that move work forward; and the
// API, since the workers' steps take as many of the account's unreserved slots as they need
// (one each while a step runs), and a busy hour of long steps would otherwise throttle the
// API, which then answers 5xx (docs/capacity.md).
//
// The API's reservation is the stage's steady rate (APIThrottleRate requests a second) held
// for a second each: an admission or a read takes tens of milliseconds on AWS, so the stage
// throttle binds long before the reservation does.
func Functions() map[string]Function {
	return map[string]Function{
		API:        {MemoryMB: 512, Timeout: 10 * time.Second, Reserved: APIThrottleRate},
		Dispatcher: {MemoryMB: 256, Timeout: 60 * time.Second, Reserved: 20},
		Notifier:   {MemoryMB: 256, Timeout: 60 * time.Second, Reserved: 20},
		// The recorder is small: a slow step is sent to the worker asynchronously and
		// holds no recorder invocation, but a step after a fast one runs within the
		// recorder's, so its timeout follows the steps (RecorderTimeout).
		Recorder:   {MemoryMB: 128, Timeout: RecorderTimeout(0), Reserved: 50},
		Reconciler: {MemoryMB: 256, Timeout: 120 * time.Second, Reserved: 1},
	}
}

// ReconcileEvery is how often the construct's schedule runs the reconciler (locally:
// local.Options.ReconcileEvery and devstack.Options.ReconcileEvery, the same name). A run's
// budget (LONGRUN_RECONCILE_BUDGET) stays below it: the reconciler reserves one instance, so
// a run still going when the next is due would make that one wait.
const ReconcileEvery = time.Minute

// CollectorMemoryMB is the least memory of a function that hosts the OpenTelemetry collector
// extension (tracing on): the extension runs in the function's sandbox and shares its memory
// and CPU share, and the collector alone wants tens of megabytes. Only the recorder is
// smaller; traced, it is raised to this.
const CollectorMemoryMB = 256

// WithCollector is f as deployed with the collector extension beside it.
func (f Function) WithCollector() Function {
	f.MemoryMB = max(f.MemoryMB, CollectorMemoryMB)
	return f
}

// MaxStepTimeout is the longest stepTimeout a deployed type may have: a step after a fast
// one (recorder.SyncBelow) runs within the recorder's own invocation, which Lambda ends at
// 15 minutes, and the recorder needs a minute after the step to record how it ended.
const MaxStepTimeout = 840 * time.Second

// RecorderTimeout is the recorder's timeout when the longest stepTimeout of the deployment's
// types is longestStep: a minute more than that step, so that a step run synchronously (one
// after a fast step) always fits in an invocation with time to record how it ended, and at
// least a minute; at most Lambda's 15 minutes (longestStep beyond MaxStepTimeout cannot be
// deployed).
func RecorderTimeout(longestStep time.Duration) time.Duration {
	return min(15*time.Minute, max(time.Minute, longestStep+time.Minute))
}

// WorkerMaxEventAge is how long Lambda keeps a step sent to a worker asynchronously queued
// (retrying it while throttled) before it gives up and tells the recorder, which offers the
// step again after a wait, until the deadline. It also bounds how long after it was sent a
// step may still start, so a sent step's lease lasts this long and its stepTimeout after
// it: shorter lets a lost step be carried on sooner, longer rides out longer throttling
// without the recorder's help. The worker's event invoke config sets it, with no retries
// (WorkerRetryAttempts).
const WorkerMaxEventAge = 15 * time.Minute

// WorkerRetryAttempts is how often Lambda runs a step again after the worker failed: never.
// A failed step may have acted, and the recorder records its outcome as unknown rather than
// run it blind.
const WorkerRetryAttempts = 0
