// Command reconciler runs on a schedule and repairs stuck operations.
package main

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/longrun-dev/longrun/internal/config"
	"github.com/longrun-dev/longrun/internal/deadletter"
	"github.com/longrun-dev/longrun/internal/dispatch"
	"github.com/longrun-dev/longrun/internal/dynamo"
	"github.com/longrun-dev/longrun/internal/optype"
	"github.com/longrun-dev/longrun/internal/reconcile"
	"github.com/longrun-dev/longrun/internal/stepfunctions"
)

func main() {
	fn := config.MustFunction("LONGRUN_STATE_MACHINES", "LONGRUN_DEAD_LETTER_QUEUE_URL")
	executor := &stepfunctions.Executor{Client: sfn.NewFromConfig(fn.AWS), StateMachines: fn.Config.StateMachines}
	r := &reconcile.Reconciler{
		Store:      fn.Store,
		Executions: executor,
		Dispatcher: &dispatch.Dispatcher{Store: fn.Store, Executor: executor, Registry: optype.Builtin(),
			DeadLetters: &deadletter.Queue{Client: sqs.NewFromConfig(fn.AWS), URL: fn.Config.DeadLetterQueueURL},
			Now:         time.Now, Log: fn.Log, Accepted: dynamo.AcceptedOperation},
		Registry:  optype.Builtin(),
		Leases:    fn.Config.Leases,
		Now:       time.Now,
		Log:       fn.Log,
		MaxPerRun: 100,
	}
	lambda.Start(func(ctx context.Context, _ events.EventBridgeEvent) (reconcile.Summary, error) { return r.Run(ctx) })
}
