// Command recorder is longrun's side of every step: the workflow's Run state calls it, and
// it runs the operation's steps (it checks intent, the deadline and maxSteps before each,
// invokes the type's worker, and records how each step ended as facts), going on in the
// operation's next execution after a wait.
package main

import (
	"os"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/aws/lambdainvoke"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

func main() {
	fn := config.MustFunction("longrun-recorder", "LONGRUN_STATE_MACHINES")
	// LONGRUN_RECORDER_RUN_BUDGET bounds a Run where a Lambda task may not last as long as
	// the function (the local stack's emulator cuts a task at 30 s); unset on AWS.
	budget, _ := time.ParseDuration(os.Getenv("LONGRUN_RECORDER_RUN_BUDGET"))
	r := &recorder.Recorder{Store: fn.Store, Registry: fn.Registry(), Leases: fn.Config.Leases, Now: time.Now, Log: fn.Log,
		Metrics: fn.Metrics, Invoker: lambdainvoke.New(fn.AWS), Executions: stepfunctions.Continuations{Executor: fn.Executor()},
		RunBudget: budget, Tracer: fn.Tracer(), RunIDs: ids.New().Request}
	fn.Start(r.Serve)
}
