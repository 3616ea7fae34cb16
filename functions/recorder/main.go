// Command recorder is longrun's side of every step: the workflow calls it before each step
// (it checks intent, the deadline and maxSteps, and builds the worker's step request) and
// after each (it records how the step ended as facts).
package main

import (
	"time"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

func main() {
	fn := config.MustFunction("longrun-recorder")
	r := &recorder.Recorder{Store: fn.Store, Registry: fn.Registry(), Leases: fn.Config.Leases, Now: time.Now, Log: fn.Log, Metrics: fn.Metrics}
	config.Start(r.Handle)
}
