// Command api is the Lambda function behind API Gateway: admission and status.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/admission"
	"github.com/longrun-dev/longrun/internal/config"
	"github.com/longrun-dev/longrun/internal/dynamo"
	"github.com/longrun-dev/longrun/internal/httpapi"
	"github.com/longrun-dev/longrun/internal/ids"
	"github.com/longrun-dev/longrun/internal/optype"
)

func main() {
	log := config.Logger()
	cfg, err := config.FromEnv()
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(1)
	}
	awsCfg, err := config.AWS(context.Background())
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(1)
	}
	store := dynamo.New(dynamodb.NewFromConfig(awsCfg), cfg.Table)
	gen := ids.New()
	handler := &httpapi.Handler{
		Admission: &admission.Service{Store: store, Registry: optype.Builtin(), Now: time.Now, NewID: gen.Operation,
			Window: cfg.Window, Quota: cfg.Quota},
		Operations:   store,
		NewRequestID: gen.Request,
		Log:          log,
	}
	lambda.Start(handler.Handle)
}
