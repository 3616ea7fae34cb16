// Command longrun-local runs the whole longrun stack on this machine (`make run`): the API
// on http://127.0.0.1:8080/v1 and an AWS edge on http://127.0.0.1:4566 serving DynamoDB
// Local, Lambda, Step Functions and SQS. Ctrl-C stops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/longrun-dev/longrun/internal/local/apigateway"
	"github.com/longrun-dev/longrun/internal/local/conflictproxy"
	"github.com/longrun-dev/longrun/internal/local/ddblocal"
	"github.com/longrun-dev/longrun/internal/local/devstack"
	"github.com/longrun-dev/longrun/internal/local/quotas"
	"github.com/longrun-dev/longrun/internal/local/summary"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run is the command; it returns rather than exits, so that what it started is stopped by
// its deferred calls on every way out.
func run() error {
	api := flag.String("api", "127.0.0.1:8080", "address of the API (127.0.0.1:0: a free port, printed at start)")
	edge := flag.String("edge", devstack.EdgeAddr, "address of the AWS edge (127.0.0.1:0: a free port, printed at start)")
	workerEnv := envFlag{}
	flag.Var(workerEnv, "worker-env", "KEY=VALUE more environment for the types file's workers, after their local section's (repeatable): e.g. the address of a fake they call")
	tokensFile := flag.String("tokens", "", "JSON file of bearer tokens: {\"token\": {\"tenant\": …, \"principal\": …}} (default: the contract's dev tokens)")
	quiet := flag.Bool("quiet", false, "do not print the functions' logs")
	dynamoEndpoint := flag.String("dynamodb-endpoint", "", "use this DynamoDB (e.g. a DynamoDB Local started with -dbPath, to keep data across restarts) instead of starting DynamoDB Local; the table is created if missing")
	conflicts := flag.Duration("dynamodb-conflicts", 0, "put DynamoDB's transaction conflicts in front of DynamoDB: each transaction holds its items this long to twice this long, and overlapping work is refused as on AWS (e.g. 10ms)")
	traceFile := flag.String("trace-file", "", "turn tracing on: every function appends its spans to this file, one JSON object a line (docs/observability.md#tracing)")
	types := flag.String("types", "", "serve the operation types of this definitions file (docs/operation-types.md), or of several separated by commas, instead of the built-in ones; each file's local section says how to run its workers")
	quotaPreset := flag.String("quotas", "", "refuse as AWS's quotas would, at the edge (docs/quotas.md): \"scaled\" is the 1:100 scale model (10 concurrent executions, the reservations at 1, StartExecution 13 refilling 3/s), \"aws\" AWS's defaults in us-east-1 (1,000, the construct's reservations, 1,300 refilling 300/s); both limit payloads as AWS does")
	summaryEvery := flag.Duration("summary", 10*time.Second, "print one line of the functions' metrics (admissions, replays, conflicts, outcomes, p50 accept→terminal, in flight) this often while there is traffic; 0 turns it off")
	flag.Parse()

	tokens := apigateway.DefaultTokens()
	if *tokensFile != "" {
		var err error
		if tokens, err = apigateway.LoadTokens(*tokensFile); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := devstack.Options{APIAddr: *api, EdgeAddr: *edge, WorkerEnv: workerEnv, Tokens: tokens, Log: log, Output: os.Stderr, DynamoDBEndpoint: *dynamoEndpoint, TypesFile: *types,
		TraceFile: *traceFile}
	if *quiet {
		opts.Output = nil
	}
	if *quotaPreset != "" {
		limits, err := quotas.Preset(*quotaPreset)
		if err != nil {
			return err
		}
		opts.Quotas = &limits
	}
	// The summary reads the metrics from the functions' output, so it sits in front of it
	// even when -quiet discards the rest.
	var sum *summary.Summary
	if *summaryEvery > 0 {
		sum = summary.New(opts.Output) // nil: the logs are discarded, the metrics still read
		if ns := strings.TrimSpace(os.Getenv("LONGRUN_METRICS_NAMESPACE")); ns != "" {
			sum.Namespace = ns // the functions inherit the environment, and name their namespace so
		}
		opts.Output = sum
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err == nil {
		err = devstack.DivertEmulatorStdout(null)
	}
	if err != nil {
		return err
	}
	out := os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	if *conflicts > 0 {
		endpoint, closeAll, err := conflictFront(ctx, *dynamoEndpoint, *conflicts)
		if err != nil {
			return err
		}
		defer closeAll()
		opts.DynamoDBEndpoint = endpoint
	}
	if root, err := ddblocal.ModuleRoot(); err == nil {
		if hint := cacheHint(ctx, root); hint != "" {
			fmt.Fprintln(os.Stderr, hint)
		}
	}
	stack, err := devstack.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nlongrun local stack is up (%.1fs)\n", time.Since(started).Seconds())
	fmt.Fprintf(out, "  API        %s/v1\n", stack.APIURL)
	fmt.Fprintf(out, "  console    %s/console/   (sign in with a token below; docs/console.md)\n", stack.APIURL)
	fmt.Fprintf(out, "  AWS edge   %s   (DynamoDB Local, Lambda, Step Functions, SQS, EventBridge)\n", stack.EdgeURL)
	fmt.Fprintf(out, "  table      %s\n", stack.Table)
	if opts.DynamoDBEndpoint != "" {
		fmt.Fprintf(out, "  DynamoDB   %s", opts.DynamoDBEndpoint)
		if *conflicts > 0 {
			fmt.Fprintf(out, "   (transactions hold their items %s–%s; conflicts refused as on AWS)", *conflicts, 2**conflicts)
		}
		fmt.Fprintln(out)
	}
	var toks []string
	for t := range tokens {
		toks = append(toks, t)
	}
	sort.Strings(toks)
	for _, t := range toks {
		role := ""
		if tokens[t].Role != "" {
			role = ", " + tokens[t].Role
		}
		fmt.Fprintf(out, "  token      Authorization: Bearer %s   (tenant %s, principal %s%s)\n", t, tokens[t].Tenant, tokens[t].Principal, role)
	}

	if l := opts.Quotas; l != nil {
		start := l.StepFunctions["StartExecution"]
		fmt.Fprintf(out, "  quotas     %s: Lambda pool %d, reserved %s; StartExecution %d refilling %g/s; payloads as on AWS (refusals counted, printed at stop)\n",
			*quotaPreset, l.Unreserved, reservations(l.Reserved), start.Size, start.RefillPerSecond)
	}
	fmt.Fprintf(out, "  events     %s   (an SQS queue with every event published on the bus)\n", stack.EventsQueueURL)
	if *traceFile != "" {
		fmt.Fprintf(out, "  spans      %s   (one JSON object a line, appended)\n", *traceFile)
	}
	if sum != nil {
		fmt.Fprintf(out, "  summary    every %s with traffic, on this output (-summary 0 turns it off)\n", *summaryEvery)
		go sum.Run(ctx, *summaryEvery, out)
	}
	fmt.Fprintf(out, "Ctrl-C stops it.\n\n")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping…")
	if stack.Quotas != nil {
		fmt.Fprintf(out, "quotas: %s\n", stack.Quotas.Stats())
	}
	stack.Close()
	return nil
}

// cacheHint is what to tell the user whose module, at root, would get the stack's build
// output (devstack builds the functions into root/.cache/bin/local) without git ignoring
// it: "" when git ignores it, or when root is not in a git work tree (or git is missing),
// where there is nothing to commit by mistake. It is said on every start until the folder is
// ignored, and never after.
func cacheHint(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "check-ignore", "-q", filepath.Join(".cache", "bin", "local"))
	cmd.Dir = root
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 { // 0: ignored; 128: not a repository
		return ""
	}
	return fmt.Sprintf("longrun-local: the functions are built into %s, which git does not ignore: add .cache/ to your .gitignore",
		filepath.Join(root, ".cache", "bin", "local"))
}

// reservations lists reserved concurrency by function, in name order.
func reservations(r map[string]int) string {
	var parts []string
	for _, fn := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, fmt.Sprintf("%s %d", fn, r[fn]))
	}
	return strings.Join(parts, ", ")
}

// conflictFront starts the conflict-faithful proxy in front of endpoint, or in front of a
// DynamoDB Local it starts when endpoint is "".
func conflictFront(ctx context.Context, endpoint string, hold time.Duration) (string, func(), error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if endpoint == "" {
		ddb, err := ddblocal.Start(ctx, ddblocal.Options{})
		if err != nil {
			return "", nil, err
		}
		closers = append(closers, ddb.Stop)
		endpoint = ddb.Endpoint
	}
	p, err := conflictproxy.Start(conflictproxy.Options{Upstream: endpoint, HoldMin: hold, HoldMax: 2 * hold, Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		closeAll()
		return "", nil, err
	}
	closers = append(closers, func() { _ = p.Close() })
	return p.Endpoint, closeAll, nil
}

// envFlag collects KEY=VALUE flags.
type envFlag map[string]string

func (e envFlag) String() string { return fmt.Sprint(map[string]string(e)) }

func (e envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, not %q", v)
	}
	e[k] = val
	return nil
}
