// Package devstack is the local stack behind `make run` and the end-to-end tests: DynamoDB
// Local and kumo behind one AWS edge on 127.0.0.1:4566, the function binaries running as
// processes on kumo's Lambda Runtime API exactly as built for AWS, stream pollers emulating
// the event source mappings, and API Gateway emulated on an HTTP port.
package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
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
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sivchari/kumo"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/local/apigateway"
	"github.com/longrun-dev/longrun/internal/local/ddblocal"
	"github.com/longrun-dev/longrun/internal/local/streampoller"
)

// EdgeAddr is where the AWS edge must listen: kumo's Step Functions calls Lambda and SQS at
// http://localhost:4566 whatever it is told.
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
	APIAddr string            // API Gateway emulation; default 127.0.0.1:8080 (":0" ports pick a free one)
	Tokens  apigateway.Tokens // bearer tokens; default the contract's
	// PollInterval is how long an idle stream poller waits between reads (AWS polls a
	// shard about four times a second). Default 100 ms.
	PollInterval time.Duration
	// NoStreamConsumers leaves the dispatcher mapping off, so tests can drive dispatch
	// themselves (crash tests) or prove what happens without it.
	NoStreamConsumers bool
	Quota             int           // LONGRUN_QUOTA for the functions; 0 means the default
	Output            io.Writer     // function and emulator logs; default io.Discard
	Log               *slog.Logger  // the stack's own log; default discards
	Window            time.Duration // LONGRUN_IDEMPOTENCY_WINDOW; 0 means the default
	// Leases for the reconciler (LONGRUN_LEASE_*); nil means the production defaults.
	Leases *operation.Leases
	// ReconcileEvery is the reconciler's schedule (on AWS an EventBridge rule, at least a
	// minute). Default 10 s.
	ReconcileEvery time.Duration
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

	closers []func()
	mu      sync.Mutex

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
// process serves at once) and timeout.
func functions() []function {
	fs := []function{{"api", 16, 30}, {"dispatcher", 4, 60}, {"notifier", 2, 60}, {"recorder", 16, 60}, {"reconciler", 1, 60}}
	for _, name := range optype.Builtin().Names() {
		typ, _ := optype.Builtin().Lookup(name)
		fs = append(fs, function{stepfunctions.FunctionName(typ.Executor), 32, 60})
	}
	return fs
}

// Start brings the whole stack up; Close takes it down. On error everything started so far
// is stopped.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	if opts.APIAddr == "" {
		opts.APIAddr = "127.0.0.1:8080"
	}
	if opts.Tokens == nil {
		opts.Tokens = apigateway.DefaultTokens()
	}
	if v, err := time.ParseDuration(os.Getenv("LONGRUN_LOCAL_POLL_INTERVAL")); err == nil && opts.PollInterval == 0 {
		opts.PollInterval = v
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.ReconcileEvery == 0 {
		opts.ReconcileEvery = 10 * time.Second
	}
	s := &Stack{Table: tableName, StateMachines: map[string]string{}, EventBus: busName,
		paused: map[string]*atomic.Bool{"reconciler": {}}}
	for _, m := range eventsource.Mappings() {
		s.paused[m.Function] = &atomic.Bool{}
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()

	// Ports first: fail in a second, not after a build, when another stack is running.
	edgeLn, err := net.Listen("tcp", EdgeAddr)
	if err != nil {
		return nil, fmt.Errorf("devstack: %s is taken (is another local stack, `make run`, or LocalStack running?): %w", EdgeAddr, err)
	}
	s.onClose(func() { edgeLn.Close() })
	apiLn, err := net.Listen("tcp", opts.APIAddr)
	if err != nil {
		return nil, fmt.Errorf("devstack: the API address %s is taken: %w", opts.APIAddr, err)
	}
	s.onClose(func() { apiLn.Close() })
	s.EdgeURL = "http://" + EdgeAddr
	s.APIURL = "http://" + apiLn.Addr().String()

	root, err := ddblocal.ModuleRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, ".cache", "bin", "local")
	fns := functions()
	var names []string
	for _, f := range fns {
		names = append(names, f.name)
	}
	opts.Log.Info("building functions", "dir", bin)
	if err := build(ctx, root, bin, names, opts.Output); err != nil {
		return nil, err
	}

	ddb, err := ddblocal.Start(ctx, ddblocal.Options{})
	if err != nil {
		return nil, err
	}
	s.onClose(ddb.Stop)

	// kumo serves on a port of its own choosing; the edge forwards to it. Only its public
	// API is used, so a kumo upgrade cannot break the embedding.
	ks := kumo.NewServer()
	s.onClose(ks.Close)
	edge := &http.Server{Handler: edgeRouter(ddb.Endpoint, ks.URL, s.tap), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = edge.Serve(edgeLn) }()
	// Close, not Shutdown: Runtime API long polls never go idle.
	s.onClose(func() { edge.Close() })

	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(s.EdgeURL)}
	s.DynamoDB = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	s.StepFunctions = sfn.NewFromConfig(cfg)
	s.EventBridge = eventbridge.NewFromConfig(cfg)
	s.SQS = sqs.NewFromConfig(cfg)
	s.Lambda = lambda.NewFromConfig(cfg)

	if err := dynamo.CreateTable(ctx, s.DynamoDB, tableName); err != nil {
		return nil, err
	}
	desc, err := s.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tableName)})
	if err != nil {
		return nil, err
	}
	s.StreamARN = aws.ToString(desc.Table.LatestStreamArn)
	q, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(dlqName)})
	if err != nil {
		return nil, fmt.Errorf("devstack: create queue: %w", err)
	}
	// kumo reports queue URLs on localhost:4566 whatever the endpoint; use the edge's.
	s.DeadLetterQueueURL = strings.Replace(aws.ToString(q.QueueUrl), "http://localhost:4566", s.EdgeURL, 1)

	if s.EventsQueueURL, err = s.events(ctx); err != nil {
		return nil, err
	}

	arns := map[string]string{}
	for _, f := range fns {
		if arns[f.name], err = register(ctx, s.Lambda, f); err != nil {
			return nil, err
		}
	}
	for _, name := range optype.Builtin().Names() {
		typ, _ := optype.Builtin().Lookup(name)
		def, err := stepfunctions.Definition(map[string]string{
			stepfunctions.WorkerFunctionArn:   arns[stepfunctions.FunctionName(typ.Executor)],
			stepfunctions.RecorderFunctionArn: arns["recorder"],
		})
		if err != nil {
			return nil, err
		}
		out, err := s.StepFunctions.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
			Name: aws.String("longrun-" + typ.Executor), Definition: aws.String(def),
			RoleArn: aws.String("arn:aws:iam::000000000000:role/longrun-local"),
		})
		if err != nil {
			return nil, fmt.Errorf("devstack: create state machine for %s: %w", typ.Executor, err)
		}
		s.StateMachines[typ.Executor] = aws.ToString(out.StateMachineArn)
	}

	machines, _ := json.Marshal(s.StateMachines)
	env := []string{
		"AWS_ENDPOINT_URL=" + s.EdgeURL,
		"AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		// DynamoDB Local's error responses make the SDK warn about checksums.
		"LONGRUN_DYNAMODB_SKIP_CRC32=true",
		"LONGRUN_TABLE=" + tableName,
		"LONGRUN_STATE_MACHINES=" + string(machines),
		"LONGRUN_DEAD_LETTER_QUEUE_URL=" + s.DeadLetterQueueURL,
		"LONGRUN_EVENT_BUS=" + busName,
	}
	if l := opts.Leases; l != nil {
		env = append(env, "LONGRUN_LEASE_DISPATCH="+l.Dispatch.String(), "LONGRUN_LEASE_CHECK="+l.Check.String(),
			"LONGRUN_LEASE_CANCEL="+l.Cancel.String(), "LONGRUN_LEASE_DEADLINE="+l.Deadline.String())
	}
	if opts.Quota > 0 {
		env = append(env, fmt.Sprintf("LONGRUN_QUOTA=%d", opts.Quota))
	}
	if opts.Window > 0 {
		env = append(env, "LONGRUN_IDEMPOTENCY_WINDOW="+opts.Window.String())
	}
	inv := invoker{client: s.Lambda}
	var procs []*process
	for _, f := range fns {
		// Each function polls kumo's Runtime API under its own name.
		fenv := append([]string{"AWS_LAMBDA_RUNTIME_API=" + EdgeAddr + "/_runtime/" + f.name}, env...)
		p := &process{f: f, path: filepath.Join(bin, f.name), env: fenv, out: opts.Output}
		if err := p.start(); err != nil {
			return nil, err
		}
		procs = append(procs, p)
		// Processes stop before kumo (closers run in reverse), so no invocation waits on a
		// dead poller.
		s.onClose(p.stop)
	}
	for _, f := range fns {
		if err := waitRegistered(ctx, inv, f.name); err != nil {
			return nil, err
		}
	}
	time.Sleep(100 * time.Millisecond) // let the probes' log lines drain before showing output
	for _, p := range procs {
		p.warm()
	}

	if !opts.NoStreamConsumers {
		pctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, m := range eventsource.Mappings() {
			p := &streampoller.Poller{Endpoint: ddb.Endpoint, StreamARN: s.StreamARN, Mapping: m, Invoker: inv,
				Interval: opts.PollInterval, Backoff: 200 * time.Millisecond, Log: opts.Log, Paused: s.paused[m.Function].Load,
				OnFailure: func(ctx context.Context, body []byte) error {
					_, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.DeadLetterQueueURL), MessageBody: aws.String(string(body))})
					return err
				}}
			wg.Add(1)
			go func() { defer wg.Done(); _ = p.Run(pctx) }()
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.schedule(pctx, inv, opts.ReconcileEvery, opts.Log) }()
		s.onClose(func() { cancel(); wg.Wait() })
	}

	api := &http.Server{Handler: &apigateway.Gateway{Invoker: inv, Function: "api", Tokens: opts.Tokens, Log: opts.Log},
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = api.Serve(apiLn) }()
	s.onClose(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = api.Shutdown(sctx)
	})
	return s, nil
}

// events creates the bus, and a queue that receives everything published on it.
func (s *Stack) events(ctx context.Context) (string, error) {
	if _, err := s.EventBridge.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(busName)}); err != nil {
		return "", fmt.Errorf("devstack: create event bus: %w", err)
	}
	q, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(eventsQueue)})
	if err != nil {
		return "", fmt.Errorf("devstack: create events queue: %w", err)
	}
	if _, err := s.EventBridge.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("longrun-to-queue"),
		EventBusName: aws.String(busName), EventPattern: aws.String(`{"source":["longrun"]}`)}); err != nil {
		return "", fmt.Errorf("devstack: put rule: %w", err)
	}
	if _, err := s.EventBridge.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("longrun-to-queue"),
		EventBusName: aws.String(busName),
		Targets:      []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String("arn:aws:sqs:" + region + ":000000000000:" + eventsQueue)}},
	}); err != nil {
		return "", fmt.Errorf("devstack: put targets: %w", err)
	}
	return strings.Replace(aws.ToString(q.QueueUrl), "http://localhost:4566", s.EdgeURL, 1), nil
}

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
func edgeRouter(dynamoURL, kumoURL string, tap func(body []byte)) http.Handler {
	proxy := func(target string) *httputil.ReverseProxy {
		u, _ := url.Parse(target)
		return &httputil.ReverseProxy{
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = pr.In.Host },
			Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second},
			// Runtime API long polls are cut whenever a process exits; that is not news.
			ErrorLog: log.New(io.Discard, "", 0),
		}
	}
	ddb, kumoProxy := proxy(dynamoURL), proxy(kumoURL)
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
