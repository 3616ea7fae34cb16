// Command reconciler runs on a schedule and repairs stuck operations.
package main

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
)

func main() {
	fn := config.MustFunction("longrun-reconciler", "LONGRUN_STATE_MACHINES", "LONGRUN_DEAD_LETTER_QUEUE_URL")
	executor := fn.Executor()
	r := &reconcile.Reconciler{
		Store:      fn.Store,
		Executions: executor,
		Dispatcher: fn.Dispatcher(executor),
		Registry:   fn.Registry(),
		Leases:     fn.Config.Leases,
		Now:        time.Now,
		Log:        fn.Log,
		MaxPerRun:  100,
		Metrics:    fn.Metrics,
	}
	fn.Start(func(ctx context.Context, _ events.EventBridgeEvent) (reconcile.Summary, error) { return r.Run(ctx) })
}
