// Command reconciler runs on a schedule and repairs stuck operations.
package main

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/time/rate"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
)

func main() {
	fn := config.MustFunction("longrun-reconciler", "LONGRUN_STATE_MACHINES", "LONGRUN_DEAD_LETTER_QUEUE_URL", "LONGRUN_SEAL_SECRET")
	executor := fn.Executor()
	pace := fn.Config.Reconcile
	r := &reconcile.Reconciler{
		Store:       fn.Store,
		Executions:  executor,
		Dispatcher:  fn.Dispatcher(executor),
		Registry:    fn.Registry(),
		Leases:      fn.Config.Leases,
		Now:         time.Now,
		Log:         fn.Log,
		MaxPerRun:   100,
		Budget:      pace.Budget,
		Concurrency: pace.Concurrency,
		// Made once, so a warm instance's next run starts from where the last left the
		// buckets. A burst of one spreads the calls evenly: a run makes exactly rate ×
		// budget of them (reconcile.Drain, the figures of docs/capacity.md).
		Starts:  rate.NewLimiter(rate.Limit(pace.DispatchRate), 1),
		Looks:   rate.NewLimiter(rate.Limit(pace.DescribeRate), 1),
		Metrics: fn.Metrics,
		// What an execution's output says is taken only as the recorder sealed it.
		Seals: fn.Sealer(),
	}
	fn.Start(func(ctx context.Context, _ events.EventBridgeEvent) (reconcile.Summary, error) { return r.Run(ctx) })
}
