// Command dispatcher consumes the table's stream (accepted facts) and starts one Step
// Functions execution per operation.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/longrun-dev/longrun/internal/aws/config"
)

func main() {
	fn := config.MustFunction("LONGRUN_STATE_MACHINES", "LONGRUN_DEAD_LETTER_QUEUE_URL")
	lambda.Start(fn.Dispatcher(fn.Executor()).HandleStream)
}
