// Command cost is `make cost`: it runs a fixed mix of operations on the local stack and
// prices what one operation costs on AWS, by component (internal/local/cost,
// docs/cost.md). The default mix (-mix default) is demo.task, half of one step and half of
// five, 30% of the admission requests replays of an earlier one, every operation polled to
// its end as the CLI polls. Two more are long work: -mix steps30, five steps of 30 s each;
// -mix wait, one step after a wait (-wait, 6 hours on AWS; the local stack waits as long as
// it is told, and a wait's cost does not depend on its length). The last line is the total
// and its parts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/longrun-dev/longrun/client"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/local/cost"
	"github.com/longrun-dev/longrun/internal/local/devstack"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], nil, os.Stderr)) }

// config is a run's mix and where its stack's logs go.
type config struct {
	operations  int
	concurrency int
	logPath     string
	mix         string
	wait        time.Duration
}

// The mixes.
const (
	mixDefault = "default"
	mixSteps30 = "steps30"
	mixWait    = "wait"
)

// run is the command; a nil stdout is the process's standard output as it is once kumo's
// is diverted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.operations, "n", 60, "operations in the mix (half of 1 step, half of 5)")
	fs.IntVar(&cfg.concurrency, "concurrency", 4, "operations in flight at once")
	fs.StringVar(&cfg.logPath, "log", filepath.Join(".cache", "logs", "cost-stack.log"), "where the local stack's logs go")
	fs.StringVar(&cfg.mix, "mix", mixDefault, "the mix: default (half of 1 step, half of 5), steps30 (5 steps of 30 s) or wait (1 step after a wait)")
	fs.DurationVar(&cfg.wait, "wait", 5*time.Second, "the wait of -mix wait (a wait costs the same whatever its length)")
	asJSON := fs.Bool("json", false, "print the figures as JSON instead of the table")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.operations < 2 || cfg.concurrency < 1 || !slices.Contains([]string{mixDefault, mixSteps30, mixWait}, cfg.mix) ||
		cfg.wait < time.Second || cfg.wait > 6*time.Hour {
		fmt.Fprintln(stderr, "cost: -n must be at least 2, -concurrency at least 1, -mix default, steps30 or wait, and -wait from 1s to 6h")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	model, err := cost.DefaultModel()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	logFile, err := openLog(cfg.logPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer logFile.Close()
	// kumo logs every EventBridge delivery to standard output: into the log, not the report.
	if err := devstack.DivertEmulatorStdout(logFile); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if stdout == nil {
		stdout = os.Stdout // the standard output kept aside
	}
	started := time.Now()
	m, err := measure(ctx, cfg, logFile, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cost:", err, "(the stack's logs are in", cfg.logPath+")")
		return 1
	}
	report, err := model.Compute(m.mix)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	reconciler, err := model.Compute(m.reconciler)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The reconciler runs on a schedule whatever the traffic: a fixed cost, not an
	// operation's.
	perRun := reconciler.PerMillion.Total / 1e6
	report.Notes = append(report.Notes, fmt.Sprintf("not in the figures: the reconciler's schedule, a fixed cost: one run with nothing due costs $%.7f "+
		"(%.0f invocation, %.1f RRU), every minute $%.2f per 30-day month whatever the traffic", perRun,
		reconciler.PerOperation.Invocations, reconciler.PerOperation.RRU, perRun*runsPerMonth))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"mix": report, "reconcilerRun": reconciler, "summary": report.Summary()}); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "mix: %d operations of %s, %d of %d admission requests replays, %d at a time; measured in %s\n",
		report.Operations, cfg.describe(), report.Replays, report.Admissions, cfg.concurrency, time.Since(started).Round(time.Second))
	fmt.Fprintf(stdout, "prices: %s list prices as of %s (%s)\n\n", report.Region, report.PricesAsOf, cost.PricesFile)
	if err := report.Write(stdout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// runsPerMonth is the reconciler's schedule in the construct (every minute) over 30 days.
const runsPerMonth = 60 * 24 * 30

func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.Create(path)
}

// measured is what a run recorded: the mix, and one run of the reconciler on its own.
type measured struct {
	mix, reconciler cost.Trace
}

// measure starts the local stack with the tap at its edge and the log counter on its output,
// runs the mix, waits for the stream consumers to finish, then runs the reconciler once.
func measure(ctx context.Context, cfg config, logs io.Writer, stderr io.Writer) (measured, error) {
	tap := cost.NewTap(nil)
	counter := cost.NewLogs(logs)
	// Free ports: the run does not wait for, or disturb, `make run` or another checkout's.
	opts := devstack.Options{APIAddr: "127.0.0.1:0", EdgeAddr: "127.0.0.1:0", Output: counter, Meter: tap.Wrap,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if cfg.mix != mixDefault {
		_, here, _, _ := runtime.Caller(0)
		opts.TypesFile = filepath.Join(filepath.Dir(here), "cost.types.yaml")
	}
	stack, err := devstack.Start(ctx, opts)
	if err != nil {
		return measured{}, fmt.Errorf("start the local stack: %w", err)
	}
	defer stack.Close()
	// The reconciler's schedule is priced on its own: in the mix it would count as often as
	// the mix lasts, not as often as it runs on AWS.
	stack.Pause("reconciler")
	if err := quiet(ctx, tap); err != nil {
		return measured{}, err
	}
	tap.Reset()
	counter.Reset()
	counter.Count(true)

	requests := &countingTransport{next: http.DefaultTransport}
	api, err := client.New(stack.APIURL, &client.ClientOptions{HTTPClient: &http.Client{Transport: requests},
		Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		return measured{}, err
	}
	admissions, replays, err := runMix(ctx, api, cfg)
	if err != nil {
		return measured{}, err
	}
	if err := quiet(ctx, tap); err != nil {
		return measured{}, err
	}
	var m measured
	m.mix = snapshot(tap, counter, cfg.operations)
	m.mix.APIRequests, m.mix.Admissions, m.mix.Replays = int(requests.n.Load()), admissions, replays
	// The local bus delivers every event to a queue of its own for tests (an EventBridge rule
	// of the local stack's): local plumbing. On AWS a bus's rules and targets are the team's.
	plumbing := stack.EventsQueueURL[strings.LastIndexByte(stack.EventsQueueURL, '/')+1:]
	m.mix.SQS = slices.DeleteFunc(m.mix.SQS, func(c cost.SQSCall) bool { return c.Queue == plumbing })

	tap.Reset()
	counter.Reset()
	payload := fmt.Sprintf(`{"version":"0","id":"cost","detail-type":"Scheduled Event","source":"aws.events","time":%q,"region":"us-east-1","detail":{}}`,
		time.Now().UTC().Format(time.RFC3339))
	out, err := stack.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(sizing.Reconciler), Payload: []byte(payload)},
		func(o *lambda.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		return measured{}, fmt.Errorf("run the reconciler: %w", err)
	}
	if out.FunctionError != nil {
		return measured{}, fmt.Errorf("the reconciler failed: %s", out.Payload)
	}
	if err := quiet(ctx, tap); err != nil {
		return measured{}, err
	}
	m.reconciler = snapshot(tap, counter, 1)
	return m, nil
}

func snapshot(tap *cost.Tap, logs *cost.Logs, operations int) cost.Trace {
	invs, events, sqs, ddb := tap.Snapshot()
	bytes, lines := logs.Counts()
	return cost.Trace{Operations: operations, Invocations: invs, DynamoDB: ddb, Events: events, SQS: sqs, LogBytes: bytes, LogLines: lines}
}

// quiet waits until the edge has seen nothing for a while: the stream consumers have
// delivered what the last writes caused, and the functions' lines have reached the log.
func quiet(ctx context.Context, tap *cost.Tap) error {
	const idle = 2 * time.Second
	for tap.Idle() < idle {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the stack to settle: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// countingTransport counts the HTTP requests the client sends: what API Gateway bills.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// describe says what cfg's mix is, for the report's first line.
func (cfg config) describe() string {
	switch cfg.mix {
	case mixSteps30:
		return "cost.task, 5 steps of 30 s each"
	case mixWait:
		return fmt.Sprintf("cost.task, a first step that asks to wait %s, then the step", cfg.wait)
	}
	return fmt.Sprintf("demo.task (%d of 1 step, %d of 5)", (cfg.operations+1)/2, cfg.operations/2)
}

// planned is one operation of the mix.
type planned struct {
	index  int
	typ    string
	input  map[string]any
	replay bool // its admission is sent twice
}

// plan is cfg's mix of n operations, with replays spread evenly so that 30% of the
// admission requests are replays (r of n + r: r = 3n/7, rounded). The default mix has
// every other operation of 5 steps.
func plan(cfg config) []planned {
	n := cfg.operations
	r := int(math.Round(0.3 * float64(n) / 0.7))
	ops := make([]planned, n)
	for i := range ops {
		target := fmt.Sprintf("cost-%04d", i)
		ops[i] = planned{index: i, typ: "demo.task", input: map[string]any{"target": target, "steps": 1}, replay: (i+1)*r/n > i*r/n}
		switch {
		case cfg.mix == mixSteps30:
			ops[i].typ, ops[i].input = "cost.task", map[string]any{"target": target, "steps": 5, "sleepMs": 30000}
		case cfg.mix == mixWait:
			ops[i].typ, ops[i].input = "cost.task", map[string]any{"target": target, "steps": 2, "waitSeconds": int(cfg.wait / time.Second)}
		case i%2 == 1:
			ops[i].input["steps"] = 5
		}
	}
	return ops
}

// runMix admits and follows every operation of the plan, cfg.concurrency at a time, and
// returns the admission requests sent and how many of them were replays.
func runMix(ctx context.Context, api *client.Client, cfg config) (admissions, replays int, err error) {
	ops := plan(cfg)
	work := make(chan planned)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range cfg.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range work {
				sent, err := follow(ctx, api, op)
				mu.Lock()
				admissions += sent
				if op.replay {
					replays++
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("operation %d: %w", op.index, err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, op := range ops {
		select {
		case work <- op:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return admissions, replays, errors.Join(errs...)
}

// follow admits op (twice for a replay: the same key and body, answered with the same
// operation) and polls it to its end with the poller's defaults, as the CLI does.
func follow(ctx context.Context, api *client.Client, op planned) (admissions int, err error) {
	req := client.CreateRequest{Type: op.typ, Key: fmt.Sprintf("cost-%04d", op.index), Input: op.input}
	first, err := api.Create(ctx, req, nil)
	if err != nil {
		return 0, err
	}
	admissions = 1
	if op.replay {
		again, err := api.Create(ctx, req, nil)
		if err != nil {
			return 2, err
		}
		admissions = 2
		if again.OperationID != first.OperationID || !again.Replayed {
			return 2, fmt.Errorf("the replay answered %s (replayed %v), not %s", again.OperationID, again.Replayed, first.OperationID)
		}
	}
	p, err := api.NewPoller(first)
	if err != nil {
		return admissions, err
	}
	done, err := p.PollUntilDone(ctx, nil)
	if err != nil {
		return admissions, err
	}
	if done.State != client.StateSucceeded {
		return admissions, fmt.Errorf("%s ended %s", done.OperationID, done.State)
	}
	return admissions, nil
}
