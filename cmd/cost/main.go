// Command cost is `make cost`: it runs a fixed mix of operations on the local stack and
// prices what one operation costs on AWS, by component (internal/local/cost,
// docs/cost.md). The default mix (-mix default) is demo.task, half of one step and half of
// five, 30% of the admission requests replays of an earlier one, every operation polled to
// its end as the CLI polls. Two more are long work: -mix steps30, five steps of 30 s each;
// -mix wait, one step after a wait (-wait, 6 hours on AWS; the local stack waits as long as
// it is told, and a wait's cost does not depend on its length). -mix signal waits once for a
// signal: a first step waits for an approval (up to a day), which the client sends through
// the API -wait after the operation says it awaits it, and the next step hears it. The
// last line is the total and its parts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/longrun-dev/longrun/client"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/core/operation"
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
	// waits, when set, are several lengths of -mix wait's or signal's wait: the mix is run
	// once for each on the same stack (wait is each in turn). round is which run this is.
	waits []time.Duration
	round int
}

// waits is -wait: one length, or several (-mix wait and signal), each measured in a run
// of its own on the same stack.
type waits []time.Duration

func (w *waits) String() string {
	var s []string
	for _, d := range *w {
		s = append(s, d.String())
	}
	return strings.Join(s, ",")
}

func (w *waits) Set(v string) error {
	*w = nil
	for _, part := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		*w = append(*w, d)
	}
	return nil
}

// The mixes.
const (
	mixDefault = "default"
	mixSteps30 = "steps30"
	mixWait    = "wait"
	mixSignal  = "signal"
)

// The signal of -mix signal: cost.signal's approval (cost.types.yaml), and the wait's
// timeout, a day, which it never reaches.
const (
	signalName    = "approval"
	signalTimeout = 24 * time.Hour
)

// run is the command; a nil stdout is the process's standard output as it is once kumo's
// is diverted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	lengths := waits{5 * time.Second}
	fs.IntVar(&cfg.operations, "n", 60, "operations in the mix (half of 1 step, half of 5)")
	fs.IntVar(&cfg.concurrency, "concurrency", 4, "operations in flight at once")
	fs.StringVar(&cfg.logPath, "log", filepath.Join(".cache", "logs", "cost-stack.log"), "where the local stack's logs go")
	fs.StringVar(&cfg.mix, "mix", mixDefault, "the mix: default (half of 1 step, half of 5), steps30 (5 steps of 30 s), wait (1 step after a wait) "+
		"or signal (1 step after a wait for a signal)")
	fs.Var(&lengths, "wait", "the wait of -mix wait, or how long after the operation awaits it -mix signal sends the signal "+
		"(a wait costs the same whatever its length); several, comma-separated (1s,10s), measure the mix once for each, "+
		"one after the other on the same stack, and print their counts side by side first")
	asJSON := fs.Bool("json", false, "print the figures as JSON instead of the table")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	badWait := len(lengths) == 0 || len(lengths) > 1 && cfg.mix != mixWait && cfg.mix != mixSignal
	for _, w := range lengths {
		badWait = badWait || w < time.Second || w > 6*time.Hour
	}
	if cfg.operations < 2 || cfg.concurrency < 1 || !slices.Contains([]string{mixDefault, mixSteps30, mixWait, mixSignal}, cfg.mix) || badWait {
		fmt.Fprintln(stderr, "cost: -n must be at least 2, -concurrency at least 1, -mix default, steps30, wait or signal, "+
			"and -wait from 1s to 6h (several only with -mix wait or signal)")
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
	cfg.wait = lengths[0]
	if len(lengths) > 1 {
		cfg.waits = lengths
	}
	runs, err := price(ctx, model, cfg, logFile, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "cost:", err, "(the stack's logs are in", cfg.logPath+")")
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		for _, r := range runs {
			if err := enc.Encode(map[string]any{"mix": r.report, "facts": r.facts, "wait": r.cfg.wait.String(), "reconcilerRun": r.reconciler,
				"summary": r.report.Summary()}); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
		}
		return 0
	}
	if len(runs) > 1 {
		if err := compare(stdout, runs); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	for i, r := range runs {
		if i > 0 || len(runs) > 1 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "mix: %d operations of %s, %d of %d admission requests replays, %d at a time; measured in %s\n",
			r.report.Operations, r.cfg.describe(), r.report.Replays, r.report.Admissions, r.cfg.concurrency, r.took.Round(time.Second))
		fmt.Fprintf(stdout, "prices: %s list prices as of %s (%s)\n", r.report.Region, r.report.PricesAsOf, cost.PricesFile)
		fmt.Fprintf(stdout, "facts: %s\n\n", r.facts)
		if err := r.report.Write(stdout); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	return 0
}

// priced is one run of the mix, priced.
type priced struct {
	cfg                config
	took               time.Duration
	report, reconciler cost.Report
	facts              factCounts
}

// price measures cfg's mix (once for each of cfg.waits, when set) on a stack of its own
// and prices each run.
func price(ctx context.Context, model cost.Model, cfg config, logs io.Writer, stderr io.Writer) ([]priced, error) {
	m, err := measure(ctx, cfg, logs, stderr)
	if err != nil {
		return nil, err
	}
	reconciler, err := model.Compute(m.reconciler)
	if err != nil {
		return nil, err
	}
	// The reconciler runs on a schedule whatever the traffic: a fixed cost, not an
	// operation's.
	perRun := reconciler.PerMillion.Total / 1e6
	note := fmt.Sprintf("not in the figures: the reconciler's schedule, a fixed cost: one run with nothing due costs $%.7f "+
		"(%.0f invocation, %.1f RRU), every minute $%.2f per 30-day month whatever the traffic", perRun,
		reconciler.PerOperation.Invocations, reconciler.PerOperation.RRU, perRun*runsPerMonth)
	var runs []priced
	for _, r := range m.runs {
		report, err := model.Compute(r.mix)
		if err != nil {
			return nil, err
		}
		report.Notes = append(report.Notes, note)
		c := cfg
		c.wait = r.wait
		runs = append(runs, priced{cfg: c, took: r.took, report: report, reconciler: reconciler, facts: r.facts})
	}
	return runs, nil
}

// compare prints what one operation asked of AWS in each run, side by side: the same mix
// with waits of different lengths.
func compare(w io.Writer, runs []priced) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	row := func(name string, f func(r priced) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t", f(r))
		}
		fmt.Fprintln(tw)
	}
	units := func(f func(u cost.Units) float64) func(r priced) string {
		return func(r priced) string { return fmt.Sprintf("%.2f", f(r.report.PerOperation)) }
	}
	row("per operation, with -wait", func(r priced) string { return r.cfg.wait.String() })
	row("Step Functions executions started", units(func(u cost.Units) float64 { return u.Executions }))
	row("Step Functions transitions", units(func(u cost.Units) float64 { return u.Transitions }))
	row("facts", func(r priced) string { return fmt.Sprintf("%.2f", r.facts.PerOperation) })
	var kinds []string
	for _, r := range runs {
		for k := range r.facts.ByKind {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		row("  "+k, func(r priced) string { return fmt.Sprintf("%.2f", r.facts.ByKind[k]) })
	}
	row("Lambda invocations", units(func(u cost.Units) float64 { return u.Invocations }))
	var fns []string
	for _, r := range runs {
		for _, f := range r.report.Functions {
			if f.Invocations > 0 && !slices.Contains(fns, f.Name) {
				fns = append(fns, f.Name)
			}
		}
	}
	slices.Sort(fns)
	for _, fn := range fns {
		row("  "+fn, func(r priced) string {
			for _, f := range r.report.Functions {
				if f.Name == fn {
					return fmt.Sprintf("%.2f", f.Invocations)
				}
			}
			return "0.00"
		})
	}
	row("DynamoDB WRU (table and indexes)", units(func(u cost.Units) float64 { return u.WRU + u.IndexWRU }))
	row("DynamoDB RRU", units(func(u cost.Units) float64 { return u.RRU }))
	row("EventBridge events", units(func(u cost.Units) float64 { return u.Events }))
	row("API requests (the client's)", units(func(u cost.Units) float64 { return u.APIRequests }))
	row("$ per million operations", func(r priced) string { return fmt.Sprintf("%.2f", r.report.PerMillion.Total) })
	return tw.Flush()
}

// runsPerMonth is the reconciler's schedule in the construct (every minute) over 30 days.
const runsPerMonth = 60 * 24 * 30

func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.Create(path)
}

// measured is what a run recorded: the mix (once for each of its waits), and one run of the
// reconciler on its own.
type measured struct {
	runs       []mixRun
	reconciler cost.Trace
}

// mixRun is one run of the mix: what it cost, and the facts its operations recorded.
type mixRun struct {
	wait  time.Duration
	took  time.Duration
	mix   cost.Trace
	facts factCounts
}

// factCounts are the facts per operation, by kind, over the mix's operations.
type factCounts struct {
	PerOperation float64            `json:"perOperation"`
	ByKind       map[string]float64 `json:"byKind"`
}

func (f factCounts) String() string {
	// In the order of a lifecycle, then any other kind by name.
	order := []operation.Kind{operation.KindAccepted, operation.KindDispatched, operation.KindStarted, operation.KindProgress,
		operation.KindSignaled, operation.KindCancelRequested, operation.KindSucceeded, operation.KindFailed, operation.KindCanceled,
		operation.KindOutcomeUnknown}
	for _, k := range slices.Sorted(maps.Keys(f.ByKind)) {
		if !slices.Contains(order, operation.Kind(k)) {
			order = append(order, operation.Kind(k))
		}
	}
	kinds := make([]string, 0, len(f.ByKind))
	for _, k := range order {
		if n, ok := f.ByKind[string(k)]; ok {
			kinds = append(kinds, fmt.Sprintf("%s %.2f", k, n))
		}
	}
	return fmt.Sprintf("%.2f per operation (%s)", f.PerOperation, strings.Join(kinds, ", "))
}

// countFacts reads every operation's facts from the table and counts them by kind.
func countFacts(ctx context.Context, store *dynamo.Store, ids []string) (factCounts, error) {
	c := factCounts{ByKind: map[string]float64{}}
	for _, id := range ids {
		facts, err := store.Facts(ctx, id)
		if err != nil {
			return factCounts{}, fmt.Errorf("the facts of %s: %w", id, err)
		}
		for _, f := range facts {
			c.ByKind[string(f.Kind)]++
		}
		c.PerOperation += float64(len(facts))
	}
	n := float64(max(len(ids), 1))
	c.PerOperation /= n
	for k := range c.ByKind {
		c.ByKind[k] /= n
	}
	return c, nil
}

// measure starts the local stack with the tap at its edge and the log counter on its output,
// runs the mix (once for each of cfg.waits, when set, with targets and keys of its own),
// waiting for the stream consumers to finish after each run, then runs the reconciler once.
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

	// The local bus delivers every event to a queue of its own for tests (an EventBridge rule
	// of the local stack's): local plumbing. On AWS a bus's rules and targets are the team's.
	plumbing := stack.EventsQueueURL[strings.LastIndexByte(stack.EventsQueueURL, '/')+1:]
	store := dynamo.New(stack.DynamoDB, stack.Table)
	var m measured
	lengths := cfg.waits
	if len(lengths) == 0 {
		lengths = []time.Duration{cfg.wait}
	}
	for round, wait := range lengths {
		c := cfg
		c.wait, c.round = wait, round
		started := time.Now()
		tap.Reset()
		counter.Reset()
		requests := &countingTransport{next: http.DefaultTransport}
		api, err := client.New(stack.APIURL, &client.ClientOptions{HTTPClient: &http.Client{Transport: requests},
			Auth: client.BearerToken("alice-dev-token")})
		if err != nil {
			return measured{}, err
		}
		admissions, replays, ids, err := runMix(ctx, api, c)
		if err != nil {
			return measured{}, err
		}
		if err := quiet(ctx, tap); err != nil {
			return measured{}, err
		}
		r := mixRun{wait: wait, mix: snapshot(tap, counter, cfg.operations)}
		r.mix.APIRequests, r.mix.Admissions, r.mix.Replays = int(requests.n.Load()), admissions, replays
		r.mix.SQS = slices.DeleteFunc(r.mix.SQS, func(c cost.SQSCall) bool { return c.Queue == plumbing })
		// Read after the snapshot: these reads are the report's, not the mix's.
		if r.facts, err = countFacts(ctx, store, ids); err != nil {
			return measured{}, err
		}
		r.took = time.Since(started)
		m.runs = append(m.runs, r)
	}

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
	return cost.Trace{Operations: operations, Invocations: invs, DynamoDB: ddb, Events: events, SQS: sqs, LogBytes: bytes, LogLines: lines,
		Executions: tap.Executions()}
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
	case mixSignal:
		return fmt.Sprintf("cost.signal, a first step that waits for the %s signal (timeout %s), sent %s after the operation awaits it, then the step",
			signalName, signalTimeout, cfg.wait)
	}
	return fmt.Sprintf("demo.task (%d of 1 step, %d of 5)", (cfg.operations+1)/2, cfg.operations/2)
}

// planned is one operation of the mix.
type planned struct {
	index  int
	name   string // its target, and its admission's idempotency key
	typ    string
	input  map[string]any
	replay bool // its admission is sent twice
	// signalAfter, when set, is how long after the operation says it awaits the signal the
	// client sends it.
	signalAfter time.Duration
}

// name is the target and the idempotency key of the i-th operation of cfg's round: cost-0007
// in the first, cost-r1-0007 in the second.
func (cfg config) name(i int) string {
	if cfg.round == 0 {
		return fmt.Sprintf("cost-%04d", i)
	}
	return fmt.Sprintf("cost-r%d-%04d", cfg.round, i)
}

// plan is cfg's mix of n operations, with replays spread evenly so that 30% of the
// admission requests are replays (r of n + r: r = 3n/7, rounded). The default mix has
// every other operation of 5 steps.
func plan(cfg config) []planned {
	n := cfg.operations
	r := int(math.Round(0.3 * float64(n) / 0.7))
	ops := make([]planned, n)
	for i := range ops {
		target := cfg.name(i)
		ops[i] = planned{index: i, name: target, typ: "demo.task", input: map[string]any{"target": target, "steps": 1}, replay: (i+1)*r/n > i*r/n}
		switch {
		case cfg.mix == mixSteps30:
			ops[i].typ, ops[i].input = "cost.task", map[string]any{"target": target, "steps": 5, "sleepMs": 30000}
		case cfg.mix == mixWait:
			ops[i].typ, ops[i].input = "cost.task", map[string]any{"target": target, "steps": 2, "waitSeconds": int(cfg.wait / time.Second)}
		case cfg.mix == mixSignal:
			ops[i].typ, ops[i].input = "cost.signal", map[string]any{"target": target, "await": signalName, "awaitSeconds": int(signalTimeout / time.Second)}
			ops[i].signalAfter = cfg.wait
		case i%2 == 1:
			ops[i].input["steps"] = 5
		}
	}
	return ops
}

// runMix admits and follows every operation of the plan, cfg.concurrency at a time, and
// returns the admission requests sent, how many of them were replays, and the operations'
// ids.
func runMix(ctx context.Context, api *client.Client, cfg config) (admissions, replays int, ids []string, err error) {
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
				sent, id, err := follow(ctx, api, op)
				mu.Lock()
				admissions += sent
				if id != "" {
					ids = append(ids, id)
				}
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
	return admissions, replays, ids, errors.Join(errs...)
}

// follow admits op (twice for a replay: the same key and body, answered with the same
// operation) and polls it to its end with the poller's defaults, as the CLI does. An
// operation that waits for a signal is polled until it says so; the client then polls no
// more, sends the signal op.signalAfter later (as `longrun signal` would), and follows the
// operation from the signal's answer to its end (as `longrun wait` would).
func follow(ctx context.Context, api *client.Client, op planned) (admissions int, id string, err error) {
	req := client.CreateRequest{Type: op.typ, Key: op.name, Input: op.input}
	first, err := api.Create(ctx, req, nil)
	if err != nil {
		return 0, "", err
	}
	admissions, id = 1, first.OperationID
	if op.replay {
		again, err := api.Create(ctx, req, nil)
		if err != nil {
			return 2, id, err
		}
		admissions = 2
		if again.OperationID != first.OperationID || !again.Replayed {
			return 2, id, fmt.Errorf("the replay answered %s (replayed %v), not %s", again.OperationID, again.Replayed, first.OperationID)
		}
	}
	p, err := api.NewPoller(first)
	if err != nil {
		return admissions, id, err
	}
	if op.signalAfter > 0 {
		if p, err = signalWhenAwaited(ctx, api, p, first, op); err != nil {
			return admissions, id, err
		}
	}
	done, err := p.PollUntilDone(ctx, nil)
	if err != nil {
		return admissions, id, err
	}
	if done.State != client.StateSucceeded {
		return admissions, id, fmt.Errorf("%s ended %s", done.OperationID, done.State)
	}
	if op.signalAfter > 0 {
		var result struct {
			Signal struct{ Approved bool } `json:"signal"`
		}
		if err := done.DecodeResult(&result); err != nil || !result.Signal.Approved {
			return admissions, id, fmt.Errorf("%s: the result %s does not echo the approval (%v)", id, done.Result, err)
		}
	}
	return admissions, id, nil
}

// signalWhenAwaited polls p, waiting each answer's Retry-After (the admission's first), until
// the operation awaits op's signal; waits op.signalAfter; sends the signal; and returns a
// poller that starts from the signal's answer.
func signalWhenAwaited(ctx context.Context, api *client.Client, p *client.Poller, first *client.Operation, op planned) (*client.Poller, error) {
	wait := first.RetryAfter
	for {
		if err := sleep(ctx, max(wait, 100*time.Millisecond)); err != nil {
			return nil, err
		}
		cur, err := p.Poll(ctx)
		if err != nil {
			return nil, err
		}
		if cur.Awaiting != nil && cur.Awaiting.Signal == signalName {
			break
		}
		if p.Done() {
			return nil, fmt.Errorf("%s ended %s before it awaited %s", cur.OperationID, cur.State, signalName)
		}
		wait = cur.RetryAfter
	}
	if err := sleep(ctx, op.signalAfter); err != nil {
		return nil, err
	}
	sig, err := api.Signal(ctx, first.OperationID, signalName, map[string]any{"approved": true, "by": "make cost"},
		&client.SignalOptions{Key: op.name + "-signal"})
	if err != nil {
		return nil, err
	}
	return api.NewPoller(sig)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
