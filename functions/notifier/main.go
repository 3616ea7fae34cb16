// Command notifier consumes the table's stream (projection changes) and publishes
// "Operation State Changed" to EventBridge.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/longrun-dev/longrun/internal/config"
	"github.com/longrun-dev/longrun/internal/eventbus"
	"github.com/longrun-dev/longrun/internal/notify"
)

func main() {
	fn := config.MustFunction("LONGRUN_EVENT_BUS")
	n := &notify.Notifier{Bus: &eventbus.Bus{Client: eventbridge.NewFromConfig(fn.AWS), Name: fn.Config.EventBus}, Log: fn.Log}
	lambda.Start(n.HandleStream)
}
