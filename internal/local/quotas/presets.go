package quotas

import (
	"fmt"
	"math"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
)

// AWS's documented defaults, per account and region (us-east-1, where longrun's figures in
// docs/capacity.md are read).
const (
	// AccountConcurrency is Lambda's concurrent executions per account and region: "Concurrent
	// executions: 1,000" (Lambda quotas, gettingstarted-limits.html; new accounts start lower).
	AccountConcurrency = 1000
	// StatesPayloadBytes is Step Functions' "Maximum input or output size for a task, state,
	// or execution: 262,144 bytes of data as a UTF-8 encoded string" (Step Functions quotas,
	// "Quotas related to task executions"), also StartExecution's "Length Constraints:
	// Maximum length of 262144" (API_StartExecution.html).
	StatesPayloadBytes = 262_144
	// InvokePayloadBytes is a synchronous invocation's largest payload: "For synchronous
	// invocations, the maximum payload size is 6 MB" (API_Invoke.html), 6 MiB as Lambda's
	// refusal counts it ("Request must be smaller than 6291456 bytes for the InvokeFunction
	// operation").
	InvokePayloadBytes = 6 << 20
)

// stepFunctionsBuckets are the buckets of the Step Functions actions longrun's functions call,
// in us-east-1, us-west-2 and eu-west-1 (Step Functions quotas: StartExecution in "Quotas
// related to API action throttling", 1,300 refilling 300/s for Standard workflows; the others
// in "Other quotas"). Elsewhere StartExecution is 800 refilling 150/s. The control plane
// (CreateStateMachine and the like, 100 refilling 1/s) is left alone: the local stack creates
// its state machines at start, which AWS does once a deployment.
func stepFunctionsBuckets() map[string]Bucket {
	return map[string]Bucket{
		"StartExecution":    {Size: 1300, RefillPerSecond: 300},
		"DescribeExecution": {Size: 300, RefillPerSecond: 15},
		"StopExecution":     {Size: 1000, RefillPerSecond: 200},
		// The recorder answers a parked Run's task token, and tells it before each step
		// that the Run goes on.
		"SendTaskSuccess":   {Size: 1500, RefillPerSecond: 500},
		"SendTaskHeartbeat": {Size: 1500, RefillPerSecond: 500},
	}
}

// AWSDefaults are AWS's default quotas in us-east-1 with longrun's reservations
// (internal/aws/sizing, as the construct deploys them): the functions that reserve
// concurrency get it, and the rest share what the reservations leave of the account's 1,000.
func AWSDefaults() Limits {
	reserved := map[string]int{}
	total := 0
	for name, f := range sizing.Functions() {
		if f.Reserved > 0 {
			reserved[name] = f.Reserved
			total += f.Reserved
		}
	}
	return Limits{Reserved: reserved, Unreserved: AccountConcurrency - total, StepFunctions: stepFunctionsBuckets(),
		StatesPayload: StatesPayloadBytes, InvokePayload: InvokePayloadBytes}
}

// Scaled is AWSDefaults at scale f (Scaled(1.0/100) is the 1:100 scale model): the account's
// concurrency, each reservation and each bucket's size rounded up to at least 1, the refill
// rates in proportion; the pool is what the scaled reservations leave of the scaled account,
// at least 1. The payload limits are per call and do not scale.
//
// The API is the exception: its reservation comes out of the scaled account, but the API
// keeps its unscaled 100. The scale model scales the back end (Step Functions, the workers,
// the recorder); it drives the API at the load's own rate, neither its stage throttle nor
// its concurrency scaled, since at 1:100 the stage would refuse nearly all of the load (1
// request a second) and one slot, at the local stack's latencies (ten times AWS's), would
// serve a tenth of what it serves on AWS: the API would be the only thing measured.
//
// At 1:100 the account has 10 slots, the api, dispatcher, notifier, recorder and reconciler
// reserve 1 each (100, 20, 20, 50 and 1 scaled up), leaving 5 for the workers, and
// StartExecution's bucket holds 13 refilling 3/s.
func Scaled(f float64) Limits {
	l := AWSDefaults()
	total := 0
	for name, n := range l.Reserved {
		total += scaleUp(n, f)
		if name != sizing.API {
			l.Reserved[name] = scaleUp(n, f)
		}
	}
	l.Unreserved = max(1, scaleUp(AccountConcurrency, f)-total)
	for action, b := range l.StepFunctions {
		l.StepFunctions[action] = Bucket{Size: scaleUp(b.Size, f), RefillPerSecond: round(b.RefillPerSecond * f)}
	}
	return l
}

// scaleUp is n×f rounded up, at least 1. A hair is taken off first, so that a product that
// binary floating point makes a hair over a whole number (100 × 0.07 is 7.000000000000001)
// is not rounded up past it.
func scaleUp(n int, f float64) int {
	return max(1, int(math.Ceil(float64(n)*f-1e-9)))
}

// round keeps a rate to a millionth, for the same reason.
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// Preset returns the limits a name stands for: "aws" (AWSDefaults) or "scaled" (the 1:100
// scale model, Scaled(1.0/100)).
func Preset(name string) (Limits, error) {
	switch name {
	case "aws":
		return AWSDefaults(), nil
	case "scaled":
		return Scaled(1.0 / 100), nil
	}
	return Limits{}, fmt.Errorf("quotas: no preset %q (aws or scaled)", name)
}
