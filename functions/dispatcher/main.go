// Command dispatcher consumes the table's stream (accepted facts) and starts one Step
// Functions execution per operation.
package main

import (
	"github.com/longrun-dev/longrun/internal/aws/config"
)

func main() {
	fn := config.MustFunction("longrun-dispatcher", "LONGRUN_STATE_MACHINES", "LONGRUN_DEAD_LETTER_QUEUE_URL")
	fn.Start(fn.Dispatcher(fn.Executor()).HandleStream)
}
