// Package e2e runs longrun end to end through HTTP against the local stack: the same
// function binaries as on AWS, on kumo's Lambda Runtime API and Step Functions, with
// DynamoDB Local and the stream poller. One stack serves the package, on free ports, so two
// checkouts can run the suite at once.
//
// A test that only drives operations of its own, with patience measured in seconds, calls
// t.Parallel: go test runs those together once every other test has ended, which takes the
// suite's minutes of waiting on workflows down to the longest of them. A test stays serial
// when it changes the stack under everyone (pauses the dispatcher or the notifier, kills a
// function, turns the stream off), counts what the whole stack did (metrics, published
// events, lists across tenants), times something tightly (a cancel answered within 3 s),
// or floods the stack (the thousand admissions) so that the others' operations would queue
// behind it.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/conflictproxy"
	"github.com/longrun-dev/longrun/internal/local/ddblocal"
	"github.com/longrun-dev/longrun/internal/local/devstack"
)

var stack *target

// logPath is the local stack's log file: every function's lines, prefixed with its name.
var logPath string

// conflicts is the conflict-faithful proxy the local stack's DynamoDB sits behind (nil when
// LONGRUN_E2E_CONFLICTS=0 or the target is external).
var conflicts *conflictproxy.Proxy

// testLeases are short, so the reconciler acts within a test's patience.
var testLeases = operation.Leases{Dispatch: 2 * time.Second, Check: 3 * time.Second, Cancel: 3 * time.Second, Deadline: 2 * time.Minute}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if os.Getenv("LONGRUN_E2E_API_URL") != "" {
		t, err := externalTarget(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 2
		}
		stack = t
		return withEvents(m)
	}
	root, err := ddblocal.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := managedRuntimesReady(root); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 2
	}
	// By default the stack's DynamoDB refuses overlapping transactions as DynamoDB on AWS
	// does (each holds its items 10–20 ms); LONGRUN_E2E_CONFLICTS=0 runs on plain DynamoDB
	// Local, as `make e2e-plain` does.
	hold := 10 * time.Millisecond
	if v := os.Getenv("LONGRUN_E2E_CONFLICTS"); v != "" {
		if hold, err = time.ParseDuration(v); err != nil && v != "0" {
			fmt.Fprintln(os.Stderr, "e2e: LONGRUN_E2E_CONFLICTS:", err)
			return 2
		}
	}
	// Each run keeps its own log and spans, so runs can go at once: `make e2e` runs its load
	// test on a stack of its own (LONGRUN_E2E_LOG=e2e-load), and `make e2e-plain` is apart.
	name := os.Getenv("LONGRUN_E2E_LOG")
	switch {
	case name != "":
	case hold == 0:
		name = "e2e-plain"
	default:
		name = "e2e"
	}
	logPath = filepath.Join(root, ".cache", "logs", name+"-stack.log")
	_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer logFile.Close()
	if err := devstack.DivertEmulatorStdout(logFile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// Quotas above what the suite keeps active at once (its load test holds 700 of alice's).
	// The built-in types and the test's own (testdata/e2e.types.yaml, with a worker written
	// against the public worker package), as a team serves longrun's beside its own.
	opts := devstack.Options{APIAddr: "127.0.0.1:0", EdgeAddr: "127.0.0.1:0", Output: logFile, Leases: &testLeases, ReconcileEvery: 500 * time.Millisecond,
		Quota: 5000, PrincipalQuota: 5000, TraceFile: suiteTraceFile(strings.TrimSuffix(logPath, "-stack.log") + "-spans.jsonl"),
		// The stack's own warnings (an integration that failed, a stream batch retried) go
		// to the log file beside the functions' lines, as "stack | {…}".
		Log:       slog.New(slog.NewJSONHandler(prefixed{logFile, "stack | ", &sync.Mutex{}}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		TypesFile: filepath.Join(root, "internal", "core", "optype", "builtin.types.yaml") + "," + filepath.Join(root, "internal", "e2e", "testdata", "e2e.types.yaml")}
	if hold > 0 {
		ddb, err := ddblocal.Start(ctx, ddblocal.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 2
		}
		defer ddb.Stop()
		conflicts, err = conflictproxy.Start(conflictproxy.Options{Upstream: ddb.Endpoint, HoldMin: hold, HoldMax: 2 * hold, Seed: uint64(time.Now().UnixNano())})
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 2
		}
		defer conflicts.Close()
		opts.DynamoDBEndpoint = conflicts.Endpoint
		fmt.Fprintf(os.Stderr, "e2e: DynamoDB behind the conflict proxy (transactions hold %s–%s)\n", hold, 2*hold)
	}
	local, err := devstack.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start the local stack:", err)
		return 2
	}
	defer local.Close()
	stack = localTarget(local)
	code := withEvents(m)
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: the stack's function logs are in", logPath)
	}
	return code
}

// withEvents runs the tests while collecting the events queue, where there is one.
func withEvents(m *testing.M) int {
	defer stopBrowser() // the console tests' Chromium (console_test.go)
	if stack.EventsQueueURL != "" {
		collectCtx, stopCollecting := context.WithCancel(context.Background())
		defer stopCollecting()
		go bus.collect(collectCtx)
	}
	return m.Run()
}

// client is an API client for one caller.
type client struct {
	t     testing.TB
	token string
}

func alice(t testing.TB) client { return client{t, "alice-dev-token"} }

type response struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

var keySeq atomic.Int64

// newKey returns an idempotency key unique to this test run.
func newKey() string { return fmt.Sprintf("e2e-%d-%d", time.Now().UnixNano(), keySeq.Add(1)) }

func (c client) do(method, path, key, body string) response {
	c.t.Helper()
	req, err := http.NewRequest(method, stack.APIURL+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return c.send(req)
}

// send sends req as the client and checks that nothing provider-specific leaks.
func (c client) send(req *http.Request) response {
	c.t.Helper()
	if err := stack.authorize(req, c.token); err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, body: data}
	_ = json.Unmarshal(data, &r.json)
	for _, leak := range []string{"arn:aws", "000000000000", "123456789012", "execution:", stack.Table, "dlq"} {
		if bytes.Contains(data, []byte(leak)) || strings.Contains(fmt.Sprint(resp.Header), leak) {
			c.t.Errorf("%s %s leaks %q: %s", req.Method, req.URL.Path, leak, data)
		}
	}
	return r
}

// admit creates an operation and returns its id.
func (c client) admit(body string) string {
	c.t.Helper()
	r := c.do(http.MethodPost, "/v1/operations", newKey(), body)
	if r.status != http.StatusAccepted {
		c.t.Fatalf("admit: %d %s", r.status, r.body)
	}
	return r.json["operationId"].(string)
}

// poll GETs the operation until it is terminal or outcome_unknown, sleeping as Retry-After
// says between polls, as a well-behaved client does.
func (c client) poll(id string, within time.Duration) response {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
		if r.status != http.StatusOK {
			c.t.Fatalf("poll %s: %d %s", id, r.status, r.body)
		}
		if r.json["terminal"] == true || r.json["state"] == "outcome_unknown" {
			return r
		}
		wait, err := strconv.Atoi(r.header.Get("Retry-After"))
		if err != nil || wait < 1 {
			c.t.Fatalf("a non-terminal representation without Retry-After: %v", r.header)
		}
		left := time.Until(deadline)
		if left <= 0 {
			c.t.Fatalf("%s still %s after %v: %s", id, r.json["state"], within, r.body)
		}
		// As asked, but no later than the test's own deadline: a wait's Retry-After may
		// run past it, and the test looks once more then.
		time.Sleep(min(time.Duration(wait)*time.Second, left))
	}
}

// executions counts the executions named id across the stack's state machines.
func executions(t testing.TB, id string) int {
	t.Helper()
	// One DescribeExecution per state machine, not a listing: ListExecutions answers with
	// every execution of the suite, a body that an overloaded run once cut short ("unexpected
	// EOF"), and only the execution named after the operation counts here.
	n := 0
	for _, machine := range stack.StateMachines {
		arn := strings.Replace(machine, ":stateMachine:", ":execution:", 1) + ":" + id
		_, err := stack.StepFunctions.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		var missing *sfntypes.ExecutionDoesNotExist
		switch {
		case errors.As(err, &missing):
		case err != nil:
			t.Fatal(err)
		default:
			n++
		}
	}
	return n
}

func store() *dynamo.Store { return dynamo.New(stack.DynamoDB, stack.Table) }

// prefixed writes each write (slog writes a line at a time) after prefix, under its lock.
type prefixed struct {
	w      io.Writer
	prefix string
	mu     *sync.Mutex
}

func (p prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
