package config

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/aws/sqs"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
)

// Function is what every function's main starts from: its settings, the AWS configuration,
// the logger, the metrics and the table. It exits the process with a logged reason when any is missing.
type Function struct {
	Config Config
	AWS    aws.Config
	Log    *slog.Logger
	Store  *dynamo.Store
	Types  *optype.Registry
	// Metrics writes CloudWatch Embedded Metric Format lines to stdout, where CloudWatch
	// Logs extracts them (namespace LONGRUN_METRICS_NAMESPACE, dimension Service = the
	// function; docs/observability.md). The store counts its contention with it; each main
	// gives it to its service.
	Metrics *emf.Encoder
}

// MustFunction loads the settings a function needs; required names as for Require. service
// is what its log lines name it ("longrun-api", say).
func MustFunction(service string, required ...string) Function {
	log := Logger(service)
	cfg, err := FromEnv()
	if err == nil {
		err = cfg.Require(required...)
	}
	if err != nil {
		exit(log, err)
	}
	awsCfg, err := AWS(context.Background())
	if err != nil {
		exit(log, err)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		// DynamoDB Local's error responses carry a CRC32 that does not match; the SDK then
		// warns on every conditional failure. Only the local stack sets this.
		o.DisableValidateResponseChecksum = os.Getenv("LONGRUN_DYNAMODB_SKIP_CRC32") == "true"
	})
	types, err := Types(cfg)
	if err != nil {
		exit(log, err)
	}
	budget := CancelBudget(types)
	switch {
	case os.Getenv("LONGRUN_LEASE_CANCEL") == "" && cfg.Leases.Cancel <= budget:
		cfg.Leases.Cancel = budget + time.Minute // a type with long steps needs a longer lease
	case cfg.Leases.Cancel <= budget:
		// Allowed (the local stack's tests use short leases), but on AWS the reconciler
		// would then stop workflows that were about to end by themselves.
		log.Warn("configuration: LONGRUN_LEASE_CANCEL is shorter than the workflow may rightly run after a cancel",
			"lease", cfg.Leases.Cancel.String(), "budget", budget.String())
	}
	metrics, err := emf.New(os.Stdout, service)
	if err != nil {
		exit(log, err)
	}
	metrics.OnError = func(err error) { log.Warn("metric not written", "error", err.Error()) }
	store := dynamo.New(client, cfg.Table)
	store.Leases = cfg.Leases
	store.Metrics = metrics
	return Function{Config: cfg, AWS: awsCfg, Log: log, Store: store, Types: types, Metrics: metrics}
}

// Types is the operation types a deployment serves: those of LONGRUN_TYPES_FILE (one file,
// or several separated by commas), or the
// built-in types without it; demo types only with LONGRUN_DEMO_TYPES=true. Every function
// that looks types up (api, dispatcher, recorder, reconciler) takes them from here, so they
// all agree; an invalid file stops the function with the file, type and field named.
func Types(cfg Config) (*optype.Registry, error) {
	if cfg.TypesFile == "" {
		return optype.Deployed(cfg.DemoTypes), nil
	}
	file, err := optype.LoadAll(List(cfg.TypesFile)...)
	if err != nil {
		return nil, err
	}
	return file.Registry(cfg.DemoTypes), nil
}

// CancelBudget is the longest any of types' workflows may rightly go on after a cancel.
func CancelBudget(types *optype.Registry) time.Duration {
	var budget time.Duration
	for _, t := range types.Types() {
		budget = max(budget, stepfunctions.CancelBudget(t.StepTimeout))
	}
	return budget
}

// Executor is the Step Functions executor of the configured state machines.
func (f Function) Executor() *stepfunctions.Executor {
	return stepfunctions.NewExecutor(f.AWS, f.Config.StateMachines)
}

// Registry is the operation types this deployment serves (Types).
func (f Function) Registry() *optype.Registry { return f.Types }

// Dispatcher is the dispatcher the dispatcher and reconciler functions share: the table, the
// deployment's types (Registry), the dead-letter queue and exec.
func (f Function) Dispatcher(exec dispatch.Executor) *dispatch.Dispatcher {
	d, err := dispatch.New(dispatch.Dispatcher{Store: f.Store, Executor: exec, Registry: f.Registry(),
		DeadLetters: sqs.NewDeadLetters(f.AWS, f.Config.DeadLetterQueueURL),
		Now:         time.Now, Log: f.Log, Accepted: dynamo.AcceptedOperation, Metrics: f.metrics()})
	if err != nil {
		exit(f.Log, err)
	}
	return d
}

// metrics is f.Metrics as a port, nil (not a nil pointer in an interface) when unset.
func (f Function) metrics() dispatch.Metrics {
	if f.Metrics == nil {
		return nil
	}
	return f.Metrics
}

// Start runs handler (any function lambda.Start takes) as the function's Lambda handler, each
// invocation's log lines saying whether it is the process's first (cold_start); it does not
// return.
func Start(handler any) {
	lambda.Start(lambdalog.Invocations(lambda.NewHandler(handler)))
}

func exit(log *slog.Logger, err error) {
	log.Error("configuration", "error", err.Error())
	os.Exit(1)
}
