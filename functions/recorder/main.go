// Command recorder is the workflow's last task: it appends the operation's terminal fact.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

func main() {
	fn := config.MustFunction()
	r := &recorder.Recorder{Store: fn.Store, Now: time.Now, Log: fn.Log}
	lambda.Start(r.Handle)
}
