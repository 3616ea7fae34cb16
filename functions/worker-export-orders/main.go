// Command worker-export-orders runs export.orders's work, one step per invocation.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/service/worker"
)

func main() {
	fn := config.MustFunction()
	r := &worker.Runner{Store: fn.Store, Work: worker.ExportOrders{}, Now: time.Now}
	lambda.Start(r.Handle)
}
