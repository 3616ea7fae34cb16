package config

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/aws/sealkey"
	"github.com/longrun-dev/longrun/internal/aws/sqs"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/aws/tracing"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/service/console"
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
	// Tracing is the function's tracing (LONGRUN_TRACING): every AWS call made with AWS is
	// traced when it is on, Start traces each invocation, and Tracer is for the services.
	Tracing *tracing.Tracing
	service string // the function's service name, as its logs and spans say it
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
	name := lambdalog.ServiceName(service) // as the logs name it
	tr, err := tracing.New(context.Background(), cfg.Tracing, name)
	if err != nil {
		exit(log, err)
	}
	if tr.Enabled() {
		// The SDK's own errors (an unreachable collector, say) as the function's log lines.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "error", err.Error()) }))
	}
	tr.InstrumentAWS(&awsCfg) // before any client is made from it
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
	return Function{Config: cfg, AWS: awsCfg, Log: log, Store: store, Types: types, Metrics: metrics, Tracing: tr, service: name}
}

// Types is the operation types a deployment serves: those of LONGRUN_TYPES_FILE (one file,
// or several separated by commas), or the
// built-in types without it; demo types only with LONGRUN_DEMO_TYPES=true. Every function
// that looks types up (api, dispatcher, recorder, reconciler) takes them from here, so they
// all agree; an invalid file stops the function with the file, type and field named.
func Types(cfg Config) (*optype.Registry, error) {
	if cfg.TypesFile == "" {
		return optype.Deployed(optype.Demo(cfg.DemoTypes)), nil
	}
	file, err := optype.LoadAll(List(cfg.TypesFile)...)
	if err != nil {
		return nil, err
	}
	return file.Registry(optype.Demo(cfg.DemoTypes)), nil
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
// deployment's types (Registry), the dead-letter queue, exec, and the seal key of the
// executions that wake work waiting for a signal.
func (f Function) Dispatcher(exec dispatch.Executor) *dispatch.Dispatcher {
	d, err := dispatch.New(dispatch.Dispatcher{Store: f.Store, Executor: exec, Registry: f.Registry(), Leases: f.Config.Leases,
		DeadLetters: sqs.NewDeadLetters(f.AWS, f.Config.DeadLetterQueueURL),
		Now:         time.Now, Log: f.Log, Accepted: dynamo.OutboxOperation, Metrics: f.metrics(), Tracer: f.Tracer(),
		Seals: f.Sealer()})
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

// Tracer is the tracer the services start their spans with: a no-op one unless
// LONGRUN_TRACING is on.
func (f Function) Tracer() trace.Tracer { return f.Tracing.Tracer() }

// Start runs handler (any function lambda.Start takes) as the function's Lambda handler:
// each invocation's log lines say whether it is the process's first (cold_start), and, with
// tracing on, each invocation is a span, flushed before it returns. It does not return.
func (f Function) Start(handler any) {
	lambda.Start(lambdalog.Invocations(f.Tracing.WrapHandler(handlerOf(handler), f.service)))
}

// handlerOf is handler as the runtime calls it, answering JSON without HTML escaping: an
// answer goes to Step Functions or API Gateway, never into a page, and escaping writes each
// <, > and & as six bytes, which could take a recorder's decision past Step Functions'
// 256 KiB limit on a task's output.
//
// Each invocation gets a handler of its own: aws-lambda-go's Handler.Invoke answers a slice of
// a pooled buffer that it has already put back in its pool, so with invocations served at
// once in one process (AWS_LAMBDA_MAX_CONCURRENCY, as the local stack runs every function)
// another invocation could write its answer over one still on its way: a static file's
// answer with the tail of another's, or another caller's answer altogether
// (TestConcurrentAnswersAreTheirOwn). A handler of its own has a pool of its own.
func handlerOf(handler any) lambda.Handler {
	return ownAnswers{handler}
}

type ownAnswers struct{ handler any }

func (h ownAnswers) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return lambda.NewHandlerWithOptions(h.handler, lambda.WithSetEscapeHTML(false)).Invoke(ctx, payload)
}

func exit(log *slog.Logger, err error) {
	log.Error("configuration", "error", err.Error())
	os.Exit(1)
}

// Sealer is the function's seal key, read from LONGRUN_SEAL_SECRET (internal/aws/sealkey);
// it exits the process with the reason when the secret cannot be read.
func (f Function) Sealer() *seal.Sealer {
	s, err := sealkey.Load(context.Background(), f.AWS, f.Config.SealSecret)
	if err != nil {
		exit(f.Log, err)
	}
	return s
}

// Console is the operations console the API serves (internal/service/console), signing in
// as Config.Console says; it exits the process with the reason when it cannot be built.
func (f Function) Console() *console.Handler {
	h, err := console.New(f.Config.Console)
	if err != nil {
		exit(f.Log, err)
	}
	return h
}
