// Command notifier consumes the table's stream (projection changes) and publishes
// "Operation State Changed" to EventBridge.
package main

import (
	"time"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventbridge"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

func main() {
	fn := config.MustFunction("longrun-notifier", "LONGRUN_EVENT_BUS")
	n := &notify.Notifier{Bus: eventbridge.NewBus(fn.AWS, fn.Config.EventBus), Changes: dynamo.ProjectionChange, Log: fn.Log,
		Metrics: fn.Metrics, Now: time.Now}
	fn.Start(n.HandleStream)
}
