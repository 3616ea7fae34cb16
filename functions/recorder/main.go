// Command recorder is longrun's side of every step: the workflow's Run state calls it, and
// it runs the operation's steps (it checks intent, the deadline and maxSteps before each,
// sends the step to the type's worker, hears how it ended from the worker's destination, and
// records it as facts), going on in the operation's next execution after a wait.
package main

import (
	"os"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/aws/lambdainvoke"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

func main() {
	fn := config.MustFunction("longrun-recorder", "LONGRUN_STATE_MACHINES", "LONGRUN_SEAL_SECRET", "LONGRUN_WORKERS")
	// LONGRUN_RECORDER_RUN_BUDGET bounds a Run where a Lambda task may not last as long as
	// the function (the local stack's emulator cuts a task at 30 s); unset on AWS.
	budget, _ := time.ParseDuration(os.Getenv("LONGRUN_RECORDER_RUN_BUDGET"))
	// A Run the workflow calls with a task token sends each step to the worker
	// asynchronously and hears how it ended from the worker's destination, which is this
	// function too (Deliveries): the worker alone holds a Lambda slot while a step runs.
	workers := lambdainvoke.New(fn.AWS)
	continuations := stepfunctions.Continuations{Executor: fn.Executor()}
	r := &recorder.Recorder{Store: fn.Store, Registry: fn.Registry(), Leases: fn.Config.Leases, Now: time.Now, Log: fn.Log,
		Metrics: fn.Metrics, Invoker: workers, Executions: continuations, Sender: workers, Callbacks: continuations, Claims: fn.Store,
		Deliveries: lambdainvoke.Destination, MaxEventAge: sizing.WorkerMaxEventAge,
		RunBudget: budget, Tracer: fn.Tracer(), RunIDs: ids.New().Request,
		// It takes back only what it sealed, and sends steps only to the types' workers:
		// invoking it is not enough to act for an operation (docs/security.md).
		Seals: fn.Sealer(), Workers: fn.Config.Workers, CallbackBase: fn.Config.CallbackBase}
	fn.Start(r.Serve)
}
