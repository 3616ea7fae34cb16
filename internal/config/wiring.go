package config

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/dynamo"
)

// Function is what every function's main starts from: its settings, the AWS configuration,
// the logger and the table. It exits the process with a logged reason when any is missing.
type Function struct {
	Config Config
	AWS    aws.Config
	Log    *slog.Logger
	Store  *dynamo.Store
}

// MustFunction loads the settings a function needs; required names as for Require.
func MustFunction(required ...string) Function {
	log := Logger()
	cfg, err := FromEnv()
	if err == nil {
		err = cfg.Require(required...)
	}
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(1)
	}
	awsCfg, err := AWS(context.Background())
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(1)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		// DynamoDB Local's error responses carry a CRC32 that does not match; the SDK then
		// warns on every conditional failure. Only the local stack sets this.
		o.DisableValidateResponseChecksum = os.Getenv("LONGRUN_DYNAMODB_SKIP_CRC32") == "true"
	})
	store := dynamo.New(client, cfg.Table)
	store.Leases = cfg.Leases
	return Function{Config: cfg, AWS: awsCfg, Log: log, Store: store}
}
