// Command dispatcher consumes the table's stream (accepted facts) and starts one Step
// Functions execution per operation.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/longrun-dev/longrun/internal/config"
	"github.com/longrun-dev/longrun/internal/deadletter"
	"github.com/longrun-dev/longrun/internal/dispatch"
	"github.com/longrun-dev/longrun/internal/dynamo"
	"github.com/longrun-dev/longrun/internal/optype"
	"github.com/longrun-dev/longrun/internal/stepfunctions"
)

func main() {
	fn := config.MustFunction("LONGRUN_STATE_MACHINES", "LONGRUN_DEAD_LETTER_QUEUE_URL")
	d := &dispatch.Dispatcher{
		Store:       fn.Store,
		Executor:    &stepfunctions.Executor{Client: sfn.NewFromConfig(fn.AWS), StateMachines: fn.Config.StateMachines},
		Registry:    optype.Builtin(),
		DeadLetters: &deadletter.Queue{Client: sqs.NewFromConfig(fn.AWS), URL: fn.Config.DeadLetterQueueURL},
		Now:         time.Now,
		Log:         fn.Log,
		Accepted:    dynamo.AcceptedOperation,
	}
	lambda.Start(d.HandleStream)
}
