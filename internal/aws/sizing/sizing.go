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

// DemoWorkerMemoryMB is the memory of the demo workers that infra/stack deploys
// (functions/worker-*); a team's workers are its own to size.
const DemoWorkerMemoryMB = 512

// Functions returns the settings of longrun's own functions by name. The dispatcher and
// notifier (stream consumers: one concurrent batch per shard), the recorder and the
// reconciler (a schedule; one run at a time) reserve concurrency, so that a flood of API
// calls or worker steps cannot starve the functions that move work forward.
func Functions() map[string]Function {
	return map[string]Function{
		API:        {MemoryMB: 512, Timeout: 10 * time.Second},
		Dispatcher: {MemoryMB: 256, Timeout: 60 * time.Second, Reserved: 20},
		Notifier:   {MemoryMB: 256, Timeout: 60 * time.Second, Reserved: 20},
		Recorder:   {MemoryMB: 256, Timeout: 30 * time.Second, Reserved: 20},
		Reconciler: {MemoryMB: 256, Timeout: 120 * time.Second, Reserved: 1},
	}
}
