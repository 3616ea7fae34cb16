// Package devstack is the local stack behind `make run` and the end-to-end tests: DynamoDB
// Local and kumo behind one AWS edge on 127.0.0.1:4566, the function binaries running as
// processes on kumo's Lambda Runtime API exactly as built for AWS, stream pollers emulating
// the event source mappings, and API Gateway emulated on an HTTP port.
package devstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sivchari/kumo"

	"github.com/longrun-dev/longrun/internal/aws/config"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/local/apigateway"
	"github.com/longrun-dev/longrun/internal/local/asyncinvoke"
	"github.com/longrun-dev/longrun/internal/local/ddblocal"
	"github.com/longrun-dev/longrun/internal/local/ddbwire"
	"github.com/longrun-dev/longrun/internal/local/quotas"
	"github.com/longrun-dev/longrun/internal/local/streampoller"
)

// EdgeAddr is where the AWS edge listens by default, as `make run` documents it. kumo's
// services call one another (Step Functions → Lambda and SQS, EventBridge → SQS) at
// http://localhost:4566 whatever they are told; an edge elsewhere gets those calls through
// kumoTransport.
const EdgeAddr = "127.0.0.1:4566"

const (
	region      = "us-east-1"
	tableName   = "longrun-local"
	dlqName     = "longrun-dispatcher-dlq"
	busName     = "longrun-local"
	eventsQueue = "longrun-events"
)

// Options configure the stack.
type Options struct {
	APIAddr string // API Gateway emulation; default 127.0.0.1:8080 (":0" ports pick a free one)
	// EdgeAddr is where the AWS edge listens; default EdgeAddr (127.0.0.1:4566). Tests give
	// "127.0.0.1:0", a free port, so that two checkouts can run theirs at once. One process
	// runs one stack at a time: kumo's services are the process's.
	EdgeAddr string
	Tokens   apigateway.Tokens // bearer tokens; default the contract's
	// PollInterval is how long an idle stream poller waits between reads (AWS polls a
	// shard about four times a second). Default 100 ms.
	PollInterval time.Duration
	// NoStreamConsumers leaves the dispatcher mapping off, so tests can drive dispatch
	// themselves (crash tests) or prove what happens without it.
	NoStreamConsumers bool
	Quota             int           // LONGRUN_QUOTA for the functions; 0 means the default
	PrincipalQuota    int           // LONGRUN_PRINCIPAL_QUOTA; 0 means the default
	Output            io.Writer     // function and emulator logs; default io.Discard
	Log               *slog.Logger  // the stack's own log; default discards
	Window            time.Duration // LONGRUN_IDEMPOTENCY_WINDOW; 0 means the default
	// Leases for the reconciler (LONGRUN_LEASE_*); nil means the production defaults.
	Leases *operation.Leases
	// ReconcileEvery is the reconciler's schedule (on AWS an EventBridge rule, at least a
	// minute). Default 10 s.
	ReconcileEvery time.Duration
	// DynamoDBEndpoint is an existing DynamoDB (a DynamoDB Local with -dbPath to keep data
	// across restarts, a shared one, or internal/local/conflictproxy in front of one) to use,
	// tables and streams included, instead of starting DynamoDB Local. The table is created
	// when it is missing.
	DynamoDBEndpoint string
	// TypesFile is an operation types definitions file (docs/operation-types.md), or several
	// separated by commas, to serve instead of the built-in types (whose file is
	// internal/core/optype/builtin.types.yaml, to serve them beside others); the local
	// sections say how to run each worker. The functions get it as LONGRUN_TYPES_FILE.
	TypesFile string
	// WorkerEnv is more environment for the workers of TypesFile, after their local
	// section's: e.g. the address of a fake their tests started.
	WorkerEnv map[string]string
	// Meter, when set, wraps the AWS edge, given DynamoDB's endpoint behind it: it sees every
	// call to DynamoDB, Lambda, Step Functions, EventBridge and SQS that passes the edge (the
	// cost model, internal/local/cost).
	Meter func(edge http.Handler, dynamoURL string) http.Handler
	// Quotas, when set, puts AWS's quotas in front of the edge (internal/local/quotas, the
	// quota-faithful mode; docs/quotas.md): Lambda concurrency, Step Functions' API buckets,
	// the payload limits. Stack.Quotas is the gate, for its counts and injected refusals.
	Quotas *quotas.Limits
	// TraceFile turns tracing on: every function appends its spans to this file as JSON
	// lines (LONGRUN_TRACING=file, LONGRUN_TRACE_FILE; docs/observability.md#tracing).
	// "" leaves tracing off.
	TraceFile string
}

// Stack is a running local stack.
type Stack struct {
	APIURL             string // e.g. http://127.0.0.1:8080 (the API is under /v1)
	EdgeURL            string // the AWS edge: DynamoDB, Lambda, Step Functions, SQS
	Table              string
	StreamARN          string
	StateMachines      map[string]string // workflow name → ARN
	DeadLetterQueueURL string
	EventBus           string
	// EventsQueueURL receives every event on the bus (an EventBridge rule on source
	// "longrun" targets it), for tests and curious developers.
	EventsQueueURL string

	DynamoDB      *dynamodb.Client
	EventBridge   *eventbridge.Client
	StepFunctions *sfn.Client
	SQS           *sqs.Client
	Lambda        *lambda.Client
	// SecretsManager holds the seal secret (createSealSecret).
	SecretsManager *secretsmanager.Client

	// sealSecret is the seal secret's ARN, and workers each worker's function ARN, for the
	// functions' environment.
	sealSecret string
	workers    map[string]string

	// Quotas is the gate of Options.Quotas in front of the edge; nil when off.
	Quotas *quotas.Gate

	closers []func()
	mu      sync.Mutex

	procs map[string]*process // by function name, once started

	tapMu     sync.Mutex
	published [][]byte                // event details in the order PutEvents carried them
	paused    map[string]*atomic.Bool // stream consumer (function) or "reconciler" → held
}

// Pause holds background consumers by function name ("dispatcher", "notifier",
// "reconciler"); none named means all. Stream records wait in the stream until Resume, as
// when an event source mapping is disabled; a batch already in flight completes.
func (s *Stack) Pause(names ...string) { s.setPaused(true, names) }

// Resume lets paused consumers deliver again, starting with what waited.
func (s *Stack) Resume(names ...string) { s.setPaused(false, names) }

func (s *Stack) setPaused(v bool, names []string) {
	if len(names) == 0 {
		for _, p := range s.paused {
			p.Store(v)
		}
		return
	}
	for _, n := range names {
		s.paused[n].Store(v)
	}
}

// functions lists the stack's functions with their local concurrency (invocations one
// process serves at once) and timeout: longrun's own, and one per worker of the types, run
// as the types file's local section says.
func functions(file *optype.File, builtin bool, workerEnv map[string]string) ([]function, error) {
	fs := []function{{name: "api", concurrency: 16, timeout: 30}, {name: "dispatcher", concurrency: 4, timeout: 60},
		{name: "notifier", concurrency: 2, timeout: 60}, {name: "recorder", concurrency: 16, timeout: 60},
		{name: "reconciler", concurrency: 1, timeout: 60}}
	types := file.Registry(optype.WithDemo)
	longest := time.Duration(0)
	for _, t := range types.Types() {
		longest = max(longest, t.StepTimeout)
	}
	// The recorder waits for each step it runs, as on AWS (sizing.RecorderTimeout).
	for i := range fs {
		if fs[i].name == "recorder" {
			fs[i].timeout = int32(sizing.RecorderTimeout(longest) / time.Second)
		}
	}
	for _, w := range types.Workers() {
		f := function{name: stepfunctions.FunctionName(w), concurrency: 32}
		for _, t := range types.Types() {
			if t.Worker == w {
				f.timeout = max(f.timeout, int32(t.StepTimeout/time.Second))
			}
		}
		local, ok := file.Local[w]
		switch {
		case builtin: // functions/worker-<name>, built with longrun's own functions
		case !ok:
			return nil, fmt.Errorf("devstack: %s: worker %q has no entry in the local section, so the local stack cannot run it", file.Path, w)
		case local.Go != "":
			f.goPkg = local.Go
			if !filepath.IsAbs(f.goPkg) {
				f.goPkg = filepath.Join(local.Dir, local.Go)
			}
		case local.Node != "" || local.Python != "":
			f.command, f.goPkg = managedRuntime(local)
			f.env = append(f.env, managedRuntimeEnv(local)...)
		default:
			f.command, f.goPkg = local.Command, local.Dir
		}
		for _, env := range []map[string]string{local.Env, workerEnv} {
			for _, k := range slices.Sorted(maps.Keys(env)) {
				f.env = append(f.env, k+"="+env[k])
			}
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// typesFile is the definitions the stack serves: the file of opts, or the built-in types.
func typesFile(opts Options) (*optype.File, error) {
	if opts.TypesFile == "" {
		return optype.BuiltinFile(), nil
	}
	var paths []string
	for _, p := range strings.Split(opts.TypesFile, ",") {
		if p = strings.TrimSpace(p); p != "" {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, err
			}
			paths = append(paths, abs)
		}
	}
	return optype.LoadAll(paths...)
}

// Start brings the whole stack up; Close takes it down. On error everything started so far
// is stopped: each phase registers what it starts with onClose as soon as it is running, so
// whichever phase fails, Close finds everything before it.
//
// The order is forced: the ports are checked before the long build; the edge serves
// before anything is created through it; the functions are registered before the state
// machines that name their ARNs, and those exist before the processes, whose environment
// names the state machines; the consumers and the API come last, once every function
// answers.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	opts = opts.withDefaults()
	s := newStack()
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	types, err := typesFile(opts)
	if err != nil {
		return nil, err
	}
	fns, err := functions(types, opts.TypesFile == "", opts.WorkerEnv)
	if err != nil {
		return nil, err
	}

	edgeLn, apiLn, err := s.listen(opts.EdgeAddr, opts.APIAddr)
	if err != nil {
		return nil, err
	}
	bin, err := buildFunctions(ctx, fns, opts)
	if err != nil {
		return nil, err
	}
	dynamoURL, dynamoConns := opts.DynamoDBEndpoint, 0
	if dynamoURL == "" {
		ddb, err := s.startDynamoDBLocal(ctx)
		if err != nil {
			return nil, err
		}
		// Requests wait at the edge rather than on DynamoDB Local's table lock, which times
		// out (ddblocal.MaxConns). A DynamoDB of the caller's is left alone: the conflict
		// proxy must see the callers' concurrency, and bounds its own requests.
		dynamoURL, dynamoConns = ddb.Endpoint, ddblocal.MaxConns
	}
	s.startKumoAndEdge(edgeLn, dynamoURL, dynamoConns, opts.Meter, opts.Quotas, opts.Log)
	s.connectClients()
	if err := s.createTable(ctx); err != nil {
		return nil, err
	}
	if err := s.createDeadLetterQueue(ctx); err != nil {
		return nil, err
	}
	if err := s.createEventBus(ctx); err != nil {
		return nil, err
	}
	arns, err := s.registerFunctions(ctx, fns)
	if err != nil {
		return nil, err
	}
	if err := s.createStateMachines(ctx, types.Registry(optype.WithDemo), arns); err != nil {
		return nil, err
	}
	if err := s.configureWorkers(ctx, types.Registry(optype.WithDemo), arns); err != nil {
		return nil, err
	}
	if opts.TypesFile != "" {
		opts.TypesFile = types.Path // absolute: the processes run elsewhere
	}
	if err := s.createSealSecret(ctx); err != nil {
		return nil, err
	}
	s.workers = map[string]string{}
	for _, w := range types.Registry(true).Workers() {
		s.workers[w] = arns[stepfunctions.FunctionName(w)]
	}
	if err := s.startFunctions(ctx, fns, bin, opts); err != nil {
		return nil, err
	}
	if !opts.NoStreamConsumers {
		s.startPollersAndSchedule(dynamoURL, opts)
	}
	s.serveAPI(apiLn, opts)
	return s, nil
}

// withDefaults fills in what the caller left zero. LONGRUN_LOCAL_POLL_INTERVAL sets the
// poll interval when the caller does not.
func (o Options) withDefaults() Options {
	if o.APIAddr == "" {
		o.APIAddr = "127.0.0.1:8080"
	}
	if o.EdgeAddr == "" {
		o.EdgeAddr = EdgeAddr
	}
	if o.Tokens == nil {
		o.Tokens = apigateway.DefaultTokens()
	}
	if v, err := time.ParseDuration(os.Getenv("LONGRUN_LOCAL_POLL_INTERVAL")); err == nil && o.PollInterval == 0 {
		o.PollInterval = v
	}
	if o.PollInterval == 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.Output == nil {
		o.Output = io.Discard
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.ReconcileEvery == 0 {
		o.ReconcileEvery = 10 * time.Second
	}
	return o
}

// newStack returns a stack with nothing started and every consumer running (not paused).
func newStack() *Stack {
	s := &Stack{Table: tableName, StateMachines: map[string]string{}, EventBus: busName,
		paused: map[string]*atomic.Bool{"reconciler": {}}}
	for _, m := range eventsource.Mappings() {
		s.paused[m.Function] = &atomic.Bool{}
	}
	return s
}

// listen takes the edge's and the API's ports first, so a stack already running fails
// Start in a second rather than after the build. Nothing is served on them yet.
func (s *Stack) listen(edgeAddr, apiAddr string) (edge, api net.Listener, err error) {
	edge, err = net.Listen("tcp", edgeAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("devstack: %s is taken (is another local stack, `make run`, or LocalStack running?): %w", edgeAddr, err)
	}
	s.onClose(func() { edge.Close() })
	if err := sendKumoCallsTo(edge.Addr().String()); err != nil {
		return nil, nil, err
	}
	s.onClose(func() { _ = sendKumoCallsTo(EdgeAddr) })
	api, err = net.Listen("tcp", apiAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("devstack: the API address %s is taken: %w", apiAddr, err)
	}
	s.onClose(func() { api.Close() })
	s.EdgeURL = "http://" + edge.Addr().String()
	s.APIURL = "http://" + api.Addr().String()
	return edge, api, nil
}

// buildFunctions compiles the function binaries into .cache/bin/local under the module root
// of the working directory (longrun's checkout, or a team's module that uses longrun) and
// returns that folder. longrun's own functions build from longrun's source wherever it is.
func buildFunctions(ctx context.Context, fns []function, opts Options) (string, error) {
	here, err := ddblocal.ModuleRoot()
	if err != nil {
		return "", err
	}
	root, err := SourceRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(here, ".cache", "bin", "local")
	opts.Log.Info("building functions", "dir", bin)
	if err := build(ctx, root, bin, fns, opts.Output); err != nil {
		return "", err
	}
	return bin, nil
}

// Module is longrun's module path.
const Module = "github.com/longrun-dev/longrun"

// SourceRoot is the folder of longrun's source that the working directory's module builds
// with: the checkout itself, a replace's folder, or the module cache's copy.
func SourceRoot(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", Module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "" {
		return dir, nil
	}
	return "", fmt.Errorf("devstack: where is %s's source? run from its checkout or from a module that requires it (go list -m: %v %s)",
		Module, err, strings.TrimSpace(stderr.String()))
}

// startDynamoDBLocal starts DynamoDB Local (in memory) on a free port of its own; the edge
// fronts it. It is installed first where it is missing (ddblocal.DefaultDir).
func (s *Stack) startDynamoDBLocal(ctx context.Context) (*ddblocal.Server, error) {
	dir, err := ddblocal.DefaultDir()
	if err != nil {
		return nil, err
	}
	if err := ddblocal.Ensure(ctx, dir); err != nil {
		return nil, err
	}
	ddb, err := ddblocal.Start(ctx, ddblocal.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	s.onClose(ddb.Stop)
	return ddb, nil
}

// startKumoAndEdge starts kumo and serves the edge on edgeLn, routing to DynamoDB Local at
// dynamoURL and to kumo. kumo serves on a port of its own choosing; the edge forwards to it.
// Only kumo's public API is used, so a kumo upgrade cannot break the embedding.
func (s *Stack) startKumoAndEdge(edgeLn net.Listener, dynamoURL string, dynamoConns int, meter func(http.Handler, string) http.Handler, limits *quotas.Limits, logger *slog.Logger) {
	ks := kumo.NewServer()
	s.onClose(ks.Close)
	handler := edgeRouter(dynamoURL, dynamoConns, ks.URL, s.tap)
	if meter != nil {
		handler = meter(handler, dynamoURL)
	}
	// The quotas go outermost, in front of the meter: what AWS refuses never reaches the
	// service, so it is not billed (a throttled invocation or StartExecution costs nothing),
	// and the cost model must not count it; and a refusal must not wait on the meter's work.
	if limits != nil {
		s.Quotas = quotas.New(handler, quotas.Options{Limits: *limits})
		handler = s.Quotas
	}
	// Lambda's asynchronous invocation with destinations goes outermost: an Event
	// invocation is accepted whatever the quotas, as Lambda queues it, and the invocations
	// it makes come back in through the edge, where the quotas count them.
	handler = failTasks(handler)
	async := asyncinvoke.New(asyncinvoke.Options{Next: handler, Log: logger,
		Invoke: func(ctx context.Context, fn string, payload []byte) ([]byte, string, error) {
			return asyncinvoke.ViaSDK(s.Lambda)(ctx, fn, payload)
		}})
	s.onClose(async.Close)
	handler = async
	edge := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = edge.Serve(edgeLn) }()
	// Close, not Shutdown: Runtime API long polls never go idle.
	s.onClose(func() { edge.Close() })
}

// connectClients points the stack's AWS clients at the edge.
func (s *Stack) connectClients() {
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(s.EdgeURL)}
	s.DynamoDB = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	s.StepFunctions = sfn.NewFromConfig(cfg)
	s.EventBridge = eventbridge.NewFromConfig(cfg)
	s.SQS = sqs.NewFromConfig(cfg)
	s.Lambda = lambda.NewFromConfig(cfg)
	s.SecretsManager = secretsmanager.NewFromConfig(cfg)
}

// createTable creates the table, with its stream, and records the stream's ARN for the
// pollers.
func (s *Stack) createTable(ctx context.Context) error {
	if err := dynamo.CreateTable(ctx, s.DynamoDB, tableName); err != nil {
		return err
	}
	desc, err := s.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tableName)})
	if err != nil {
		return err
	}
	s.StreamARN = aws.ToString(desc.Table.LatestStreamArn)
	return nil
}

// createDeadLetterQueue creates the queue where the dispatcher's failed batches go.
func (s *Stack) createDeadLetterQueue(ctx context.Context) error {
	q, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(dlqName)})
	if err != nil {
		return fmt.Errorf("devstack: create queue: %w", err)
	}
	s.DeadLetterQueueURL = s.edgeQueueURL(q.QueueUrl)
	return nil
}

// createEventBus creates the bus, and a queue that receives everything published on it
// (through a rule on source "longrun").
func (s *Stack) createEventBus(ctx context.Context) error {
	if _, err := s.EventBridge.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(busName)}); err != nil {
		return fmt.Errorf("devstack: create event bus: %w", err)
	}
	q, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(eventsQueue)})
	if err != nil {
		return fmt.Errorf("devstack: create events queue: %w", err)
	}
	if _, err := s.EventBridge.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("longrun-to-queue"),
		EventBusName: aws.String(busName), EventPattern: aws.String(`{"source":["longrun"]}`)}); err != nil {
		return fmt.Errorf("devstack: put rule: %w", err)
	}
	if _, err := s.EventBridge.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("longrun-to-queue"),
		EventBusName: aws.String(busName),
		Targets:      []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String("arn:aws:sqs:" + region + ":000000000000:" + eventsQueue)}},
	}); err != nil {
		return fmt.Errorf("devstack: put targets: %w", err)
	}
	s.EventsQueueURL = s.edgeQueueURL(q.QueueUrl)
	return nil
}

// edgeQueueURL rewrites a queue URL from kumo, which reports them on localhost:4566 whatever
// the endpoint, to the edge's.
func (s *Stack) edgeQueueURL(u *string) string {
	return strings.Replace(aws.ToString(u), "http://localhost:4566", s.EdgeURL, 1)
}

// registerFunctions creates every function in kumo's Lambda and returns their ARNs by name.
func (s *Stack) registerFunctions(ctx context.Context, fns []function) (map[string]string, error) {
	arns := map[string]string{}
	for _, f := range fns {
		arn, err := register(ctx, s.Lambda, f)
		if err != nil {
			return nil, err
		}
		arns[f.name] = arn
	}
	return arns, nil
}

// createStateMachines creates two state machines per worker of types, from the same
// definitions as on AWS, calling the recorder at the ARN given with the worker's.
func (s *Stack) createStateMachines(ctx context.Context, types *optype.Registry, arns map[string]string) error {
	for _, w := range types.Workers() {
		subs := map[string]string{
			stepfunctions.WorkerFunctionArn:   arns[stepfunctions.FunctionName(w)],
			stepfunctions.RecorderFunctionArn: arns["recorder"],
		}
		// The type's state machine and its resume state machine (a Pause before Run), on
		// which the recorder goes on after a wait.
		for _, m := range []struct {
			key, name string
			def       func(map[string]string) (string, error)
		}{{w, "longrun-" + w, stepfunctions.Definition}, {stepfunctions.ResumeKey(w), "longrun-" + w + "-resume", stepfunctions.ResumeDefinition}} {
			def, err := m.def(subs)
			if err != nil {
				return err
			}
			out, err := s.StepFunctions.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
				Name: aws.String(m.name), Definition: aws.String(def),
				RoleArn: aws.String("arn:aws:iam::000000000000:role/longrun-local"),
			})
			if err != nil {
				return fmt.Errorf("devstack: create state machine %s: %w", m.name, err)
			}
			s.StateMachines[m.key] = aws.ToString(out.StateMachineArn)
		}
	}
	return nil
}

// createSealSecret creates the secret the recorder's and the reconciler's seals are keyed
// from, as the construct does on AWS: a random string in Secrets Manager, read by the
// functions when they start (internal/aws/sealkey).
func (s *Stack) createSealSecret(ctx context.Context) error {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	out, err := s.SecretsManager.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String("longrun-local-seal"), SecretString: aws.String(hex.EncodeToString(secret)),
	})
	if err != nil {
		return fmt.Errorf("devstack: create the seal secret: %w", err)
	}
	s.sealSecret = aws.ToString(out.ARN)
	return nil
}

// configureWorkers gives every worker function the event invoke config the construct gives
// it on AWS: the recorder hears how each step sent to it ended (on success and on failure),
// Lambda never runs a failed step again, and keeps one queued for sizing.WorkerMaxEventAge.
func (s *Stack) configureWorkers(ctx context.Context, types *optype.Registry, arns map[string]string) error {
	recorder := lambdatypes.DestinationConfig{
		OnSuccess: &lambdatypes.OnSuccess{Destination: aws.String(arns["recorder"])},
		OnFailure: &lambdatypes.OnFailure{Destination: aws.String(arns["recorder"])},
	}
	for _, w := range types.Workers() {
		_, err := s.Lambda.PutFunctionEventInvokeConfig(ctx, &lambda.PutFunctionEventInvokeConfigInput{
			FunctionName: aws.String(stepfunctions.FunctionName(w)), DestinationConfig: &recorder,
			MaximumRetryAttempts:     aws.Int32(sizing.WorkerRetryAttempts),
			MaximumEventAgeInSeconds: aws.Int32(int32(sizing.WorkerMaxEventAge / time.Second)),
		})
		if err != nil {
			return fmt.Errorf("devstack: event invoke config of %s: %w", w, err)
		}
	}
	return nil
}

// functionEnv is the environment every function process gets, as the deployment gives the
// Lambda functions on AWS.
func (s *Stack) functionEnv(opts Options) []string {
	machines, _ := json.Marshal(s.StateMachines)
	workers, _ := json.Marshal(s.workers)
	env := []string{
		"LONGRUN_SEAL_SECRET=" + s.sealSecret,
		"LONGRUN_CALLBACK_BASE=" + s.APIURL,
		"LONGRUN_WORKERS=" + string(workers),
		"AWS_ENDPOINT_URL=" + s.EdgeURL,
		"AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		// DynamoDB Local's error responses make the SDK warn about checksums.
		"LONGRUN_DYNAMODB_SKIP_CRC32=true",
		"LONGRUN_TABLE=" + tableName,
		"LONGRUN_STATE_MACHINES=" + string(machines),
		"LONGRUN_DEAD_LETTER_QUEUE_URL=" + s.DeadLetterQueueURL,
		"LONGRUN_EVENT_BUS=" + busName,
		// The local stack is a dev stage: it serves demo.task, which a deployed stage only
		// does when it is dev (docs/security.md).
		"LONGRUN_DEMO_TYPES=true",
		// kumo's Step Functions gives up on a Lambda task after 30 s, so a Run of the
		// recorder stops starting steps well before; on AWS only its invocation bounds it.
		"LONGRUN_RECORDER_RUN_BUDGET=15s",
	}
	// A reconciler run ends before the next is due, as on AWS (its budget is three quarters
	// of the schedule's minute there): the local schedule is shorter, and a longer one still
	// gets no more than AWS's budget, well within the local reconciler's timeout.
	env = append(env, "LONGRUN_RECONCILE_BUDGET="+min(opts.ReconcileEvery*3/4, config.DefaultReconcileBudget).String())
	if l := opts.Leases; l != nil {
		env = append(env, "LONGRUN_LEASE_DISPATCH="+l.Dispatch.String(), "LONGRUN_LEASE_CHECK="+l.Check.String(),
			"LONGRUN_LEASE_CANCEL="+l.Cancel.String(), "LONGRUN_LEASE_DEADLINE="+l.Deadline.String())
	}
	if opts.PrincipalQuota > 0 {
		env = append(env, fmt.Sprintf("LONGRUN_PRINCIPAL_QUOTA=%d", opts.PrincipalQuota))
	}
	if opts.Quota > 0 {
		env = append(env, fmt.Sprintf("LONGRUN_QUOTA=%d", opts.Quota))
	}
	if opts.Window > 0 {
		env = append(env, "LONGRUN_IDEMPOTENCY_WINDOW="+opts.Window.String())
	}
	if opts.TypesFile != "" {
		env = append(env, "LONGRUN_TYPES_FILE="+opts.TypesFile)
	}
	if opts.TraceFile != "" {
		file := opts.TraceFile
		if abs, err := filepath.Abs(file); err == nil {
			file = abs // the processes' working directory is not the caller's
		}
		env = append(env, "LONGRUN_TRACING=file", "LONGRUN_TRACE_FILE="+file)
	}
	return env
}

// startFunctions starts a supervised process per function from the binaries in bin, and
// returns once every one answers on kumo's Runtime API. Their output stays hidden until
// then: the readiness probes' rejections would only confuse the reader.
func (s *Stack) startFunctions(ctx context.Context, fns []function, bin string, opts Options) error {
	env := s.functionEnv(opts)
	var procs []*process
	for _, f := range fns {
		// Each function polls kumo's Runtime API under its own name, and its AWS SDK names it
		// in the User-Agent (app/<name>), so the edge can tell whose calls it sees (Meter).
		fenv := append([]string{"AWS_LAMBDA_RUNTIME_API=" + strings.TrimPrefix(s.EdgeURL, "http://") + "/_runtime/" + f.name, "AWS_SDK_UA_APP_ID=" + f.name}, env...)
		p := &process{f: f, path: filepath.Join(bin, f.name), env: fenv, out: opts.Output}
		if err := p.start(); err != nil {
			return err
		}
		procs = append(procs, p)
		s.mu.Lock()
		if s.procs == nil {
			s.procs = map[string]*process{}
		}
		s.procs[f.name] = p
		s.mu.Unlock()
		// Processes stop before kumo (closers run in reverse), so no invocation waits on a
		// dead poller.
		s.onClose(p.stop)
	}
	for _, f := range fns {
		if err := waitRegistered(ctx, s.invoker(), f.name); err != nil {
			return err
		}
	}
	time.Sleep(100 * time.Millisecond) // let the probes' log lines drain before showing output
	for _, p := range procs {
		p.warm()
	}
	return nil
}

// startPollersAndSchedule emulates the event source mappings (a stream poller per mapping,
// failed batches to the dead letter queue) and the reconciler's EventBridge schedule.
func (s *Stack) startPollersAndSchedule(dynamoURL string, opts Options) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	inv := s.invoker()
	for _, m := range eventsource.Mappings() {
		p := &streampoller.Poller{Endpoint: dynamoURL, StreamARN: s.StreamARN, Mapping: m, Invoker: inv,
			Interval: opts.PollInterval, Backoff: 200 * time.Millisecond, Log: opts.Log, Paused: s.paused[m.Function].Load,
			OnFailure: func(ctx context.Context, body []byte) error {
				_, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.DeadLetterQueueURL), MessageBody: aws.String(string(body))})
				return err
			}}
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.schedule(ctx, inv, opts.ReconcileEvery, opts.Log) }()
	s.onClose(func() { cancel(); wg.Wait() })
}

// serveAPI serves the API Gateway emulation on apiLn, in front of the api function.
func (s *Stack) serveAPI(apiLn net.Listener, opts Options) {
	api := &http.Server{Handler: &apigateway.Gateway{Invoker: s.invoker(), Function: "api", Tokens: opts.Tokens, Log: opts.Log},
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = api.Serve(apiLn) }()
	s.onClose(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = api.Shutdown(sctx)
	})
}

// invoker invokes the stack's functions through kumo's Lambda API.
func (s *Stack) invoker() invoker { return invoker{client: s.Lambda} }

// schedule invokes the reconciler every interval, as an EventBridge schedule does on AWS.
func (s *Stack) schedule(ctx context.Context, inv invoker, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.paused["reconciler"].Load() {
			continue
		}
		payload := fmt.Sprintf(`{"version":"0","id":"local","detail-type":"Scheduled Event","source":"aws.events","time":%q,"region":%q,"detail":{}}`,
			time.Now().UTC().Format(time.RFC3339), region)
		if _, fnErr, err := inv.Invoke(ctx, "reconciler", []byte(payload)); (err != nil || fnErr != "") && ctx.Err() == nil {
			log.Warn("reconciler run failed", "function_error", fnErr, "error", fmt.Sprint(err))
		}
	}
}

// Published returns the details of every event put on the bus, in the order the PutEvents
// calls carried them. Delivery to targets is asynchronous (on AWS as in kumo) and may
// reorder; this is the order longrun published in.
func (s *Stack) Published() [][]byte {
	s.tapMu.Lock()
	defer s.tapMu.Unlock()
	return append([][]byte(nil), s.published...)
}

// tap records PutEvents entries as they pass the edge, like an audit trail would.
func (s *Stack) tap(body []byte) {
	var in struct{ Entries []struct{ Detail string } }
	if json.Unmarshal(body, &in) != nil {
		return
	}
	s.tapMu.Lock()
	defer s.tapMu.Unlock()
	for _, e := range in.Entries {
		s.published = append(s.published, []byte(e.Detail))
	}
}

// edgeRouter sends DynamoDB and DynamoDB Streams calls to DynamoDB Local and everything else
// to kumo, keeping Host and Authorization (kumo routes Lambda calls by the signature's
// credential scope). PutEvents bodies are shown to tap on the way.
func edgeRouter(dynamoURL string, dynamoConns int, kumoURL string, tap func(body []byte)) http.Handler {
	proxy := func(target string, maxConns int) *httputil.ReverseProxy {
		u, _ := url.Parse(target)
		return &httputil.ReverseProxy{
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = pr.In.Host },
			Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: maxConns, IdleConnTimeout: 90 * time.Second},
			// Runtime API long polls are cut whenever a process exits; that is not news.
			ErrorLog: log.New(io.Discard, "", 0),
		}
	}
	// At most dynamoConns requests at DynamoDB (0: no bound). kumo's Runtime API long polls
	// need a connection each: no bound there.
	ddb, kumoProxy := proxy(dynamoURL, dynamoConns), proxy(kumoURL, 0)
	// DynamoDB Local's answers are read whole before they are passed on, and one that ends
	// short is answered as DynamoDB's retryable InternalServerError (ddbwire.CopyAnswer).
	ddb.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	ddb.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { ddbwire.WriteInternalError(w) }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		if strings.HasPrefix(target, "DynamoDB_20120810.") || strings.HasPrefix(target, "DynamoDBStreams_20120810.") {
			ddb.ServeHTTP(w, r)
			return
		}
		if target == "AWSEvents.PutEvents" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			tap(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		kumoProxy.ServeHTTP(w, r)
	})
}

// failTasks makes a Lambda task of kumo's Step Functions fail when its function failed, as on
// AWS, where the task's Retry and Catch then apply: kumo reads only the HTTP status of the
// invocation, and Lambda answers a function error with 200 and X-Amz-Function-Error. A Run
// that failed (or whose recorder was killed) while the workflow waits on its task token
// would otherwise leave the execution waiting for the task's whole timeout.
func failTasks(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := quotas.InvokedFunction(r); ok && quotas.FromStepFunctions(r) {
			w = taskFailure{w}
		}
		next.ServeHTTP(w, r)
	})
}

type taskFailure struct{ http.ResponseWriter }

func (w taskFailure) WriteHeader(status int) {
	if status == http.StatusOK && w.Header().Get("X-Amz-Function-Error") != "" {
		status = http.StatusInternalServerError
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w taskFailure) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Functions names the stack's functions: longrun's own and the workers', as their
// processes poll kumo's Runtime API.
func (s *Stack) Functions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.procs))
}

// Kill ends the named function's process at once (SIGKILL), as when Lambda loses a sandbox
// mid-invocation; the stack starts a new one, as Lambda would for the next invocation.
func (s *Stack) Kill(name string) error {
	s.mu.Lock()
	p, ok := s.procs[name]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("devstack: no function %q", name)
	}
	return p.kill()
}

func (s *Stack) onClose(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closers = append(s.closers, f)
}

// Close stops everything in reverse order of start: the API and pollers, then the function
// processes, then the edge and kumo, then DynamoDB Local.
func (s *Stack) Close() {
	s.mu.Lock()
	closers := s.closers
	s.closers = nil
	s.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}
