// Command scale runs the scale model (make scale; docs/capacity.md): the local stack in its
// quota-faithful mode at AWS's default quotas scaled 1:100, driven for a while at a rate
// above what it sustains, with a mix of operations, duplicates, waits, cancels, lost results
// and random SIGKILLs of every function's process. Its last line is
//
//	scale: admitted N terminal N lost N misclassified N 5xx N backlog-peak N drain Ns p50 Nms p99 Nms slots-per-step N.N linearizable yes|no
//
// It exits 1 when anything was lost or misclassified, or the history is not linearizable.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/apigateway"
	"github.com/longrun-dev/longrun/internal/local/devstack"
	"github.com/longrun-dev/longrun/internal/local/quotas"
	"github.com/longrun-dev/longrun/internal/local/scale"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], nil, true)) }

// run is the command: it returns the exit status. A nil stdout is the process's standard
// output as it is once kumo's is diverted; divert sends what kumo writes to standard output
// into the log (a test keeps its own standard output instead).
func run(ctx context.Context, args []string, stdout io.Writer, divert bool) int {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	duration := fs.Duration("duration", 10*time.Minute, "how long the load lasts")
	rate := fs.Float64("rate", 0, "operations admitted per second (0: three times the sustained ceiling the quotas allow, see -steps and -sleep-ms)")
	tenants := fs.Int("tenants", 3, "callers, each its own tenant (1: one tenant)")
	scaleF := fs.Float64("scale", 0.01, "AWS's default quotas scaled by this (0.01: 1:100)")
	steps := fs.Int("steps", 2, "steps per operation")
	sleepMs := fs.Int("sleep-ms", 500, "how long each step takes")
	killEvery := fs.Duration("kill-every", 20*time.Second, "SIGKILL a random function's process this often (0: never)")
	refuseEvery := fs.Int("refuse-every", 50, "inject a 502 ResourceNotReadyException into every k-th invocation of the worker (0: never)")
	drain := fs.Duration("drain", 20*time.Minute, "how long to wait, after the load, for every operation to end")
	seed := fs.Uint64("seed", 1, "the random plans' and kills' seed")
	logTo := fs.String("log", filepath.Join(".cache", "logs", "scale-stack.log"), "where the local stack's and the driver's logs go")
	killWorkers := fs.Bool("kill-workers", true, "kill the worker's process too (a step it was running ends outcome_unknown, as the contract says: counted apart, not as misclassified)")
	verbose := fs.Bool("v", false, "the stack's logs on stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	tokens := apigateway.Tokens{}
	var callers []string
	for i := range max(*tenants, 1) {
		token := fmt.Sprintf("scale-token-%d", i)
		tokens[token] = apigateway.Caller{Tenant: fmt.Sprintf("tenant-%d", i), Principal: fmt.Sprintf("caller-%d", i)}
		callers = append(callers, token)
	}
	// kumo logs every EventBridge delivery to standard output: into a log file, not the report.
	logPath := *logTo
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer logFile.Close()
	if divert {
		if err := devstack.DivertEmulatorStdout(logFile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	if stdout == nil {
		stdout = os.Stdout // the standard output kept aside
	}
	log := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	limits := quotas.Scaled(*scaleF)
	// The repairs' leases, shorter than production's so that a 10-minute model sees them
	// work many times over; the cancel lease stays, since it must outlast a workflow's
	// rightful run after a cancel.
	leases := operation.DefaultLeases()
	leases.Dispatch, leases.Check = 10*time.Second, 15*time.Second
	_, here, _, _ := runtime.Caller(0)
	opts := devstack.Options{APIAddr: "127.0.0.1:0", EdgeAddr: "127.0.0.1:0", Tokens: tokens, Log: log, TypesFile: filepath.Join(filepath.Dir(here), "scale.types.yaml"),
		Quotas: &limits, Quota: 1 << 20, PrincipalQuota: 1 << 20, Leases: &leases, ReconcileEvery: 10 * time.Second}
	opts.Output = logFile
	if *verbose {
		opts.Output = io.MultiWriter(logFile, os.Stderr)
	}
	stack, err := devstack.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer stack.Close()
	worker := "worker-scale-task"
	if *refuseEvery > 0 {
		if err := stack.Quotas.RefuseEvery(worker, "ResourceNotReadyException", *refuseEvery); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	// The ceiling: a step holds one slot while it runs, the worker's (the recorder sends it
	// asynchronously: a parked Run), from the account's pool, which the API shares (one slot
	// left to it); StartExecution's refill bounds the executions started (one per
	// operation, one more per wait).
	stepSeconds := float64(*sleepMs)/1000 + 0.2
	workers := float64(max(1, limits.Unreserved-1))
	ceiling := min(workers/(float64(*steps)*stepSeconds), limits.StepFunctions["StartExecution"].RefillPerSecond)
	if *rate == 0 {
		*rate = 3 * ceiling
	}
	fmt.Fprintf(stdout, "scale model: quotas ×%g (recorder %d reserved, pool %d, StartExecution %d refilling %g/s), sustained ceiling ≈ %.2f operations/s, driven at %.2f/s for %s\n",
		*scaleF, limits.Reserved["recorder"], limits.Unreserved, limits.StepFunctions["StartExecution"].Size,
		limits.StepFunctions["StartExecution"].RefillPerSecond, ceiling, *rate, *duration)
	functions := stack.Functions()
	if !*killWorkers {
		functions = slices.DeleteFunc(functions, func(fn string) bool { return fn == worker })
	}
	rep, err := scale.Run(ctx, scale.Options{API: stack.APIURL, Tokens: callers, Duration: *duration, Rate: *rate,
		Duplicates: 0.3, Waits: 0.2, Cancels: 0.05, Lost: 0.02, Fails: 0.05, Steps: *steps, SleepMs: *sleepMs,
		Kill: stack.Kill, Functions: functions, KillEvery: *killEvery, Drain: *drain, Seed: *seed, Log: log,
		Slots: func() map[string]int { return stack.Quotas.Stats().InFlight }, Worker: worker, Recorder: "recorder"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintf(stdout, "kills %v; states %v; calls recorded %d; outcome_unknown after a worker was killed mid-step %d\n", rep.Kills, rep.ByState, rep.Calls, rep.KillUnknown)
	fmt.Fprintf(stdout, "quotas: %s\n", stack.Quotas.Stats())
	for _, w := range rep.Wrong {
		fmt.Fprintln(stdout, "  ", w)
	}
	fmt.Fprintln(stdout, rep.Line())
	if rep.Lost > 0 || rep.Misclassified > 0 || !rep.Linearizable {
		return 1
	}
	return 0
}
