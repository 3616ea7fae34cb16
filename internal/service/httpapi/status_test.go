package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

func TestStatusFollowsFacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-status", demo("status")).json["operationId"].(string)
	get := func() res { return e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, caller: "alice"}) }

	g := get()
	if g.json["observedAt"] != nil || g.json["terminal"] != false || g.header.Get("Retry-After") != "1" ||
		g.header.Get("Cache-Control") != "no-store" || g.header.Get("ETag") != `"1"` {
		t.Fatalf("accepted: %s %v", g.body, g.header)
	}
	if strings.Contains(string(g.body), `"result"`) || strings.Contains(string(g.body), `"problem"`) {
		t.Fatalf("result/problem before an outcome: %s", g.body)
	}

	e.finish(id)
	g = get()
	if g.json["state"] != "succeeded" || g.json["terminal"] != true || g.json["version"] != 4.0 || g.header.Get("ETag") != `"4"` ||
		g.header.Get("Retry-After") != "" || g.json["observedAt"] == nil {
		t.Fatalf("succeeded: %s %v", g.body, g.header)
	}
	if result, _ := g.json["result"].(map[string]any); result["rowCount"] != 3.0 {
		t.Fatalf("result: %s", g.body)
	}
	// The execution reference recorded by the dispatcher is internal (the harness checks
	// every body for "arn:aws"; this asserts the fact really holds one).
	op, _ := e.store.Load(context.Background(), id)
	if !strings.HasPrefix(op.Execution, "arn:aws:states") {
		t.Fatalf("the test must store a provider identifier to prove it is hidden: %q", op.Execution)
	}
}

func TestFailedAndUnknownCarryAProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		kind  operation.Kind
		state string
		retry string
	}{{operation.KindFailed, "failed", ""}, {operation.KindOutcomeUnknown, "outcome_unknown", "30"}} {
		id := e.admit("k-"+tc.state, demo(tc.state)).json["operationId"].(string)
		op, _ := e.store.Load(ctx, id)
		if _, err := e.store.Append(ctx, op,
			operation.Fact{Kind: operation.KindDispatched, At: t0, Source: operation.SourceDispatcher},
			operation.Fact{Kind: tc.kind, At: t0, Source: operation.SourceExecutor, Problem: operation.NewProblem("demo_failure", "Demo failure", "asked to")},
		); err != nil {
			t.Fatal(err)
		}
		g := e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, caller: "alice"})
		p, _ := g.json["problem"].(map[string]any)
		if g.json["state"] != tc.state || p["code"] != "demo_failure" || p["type"] != "https://longrun.dev/problems/demo_failure" ||
			g.header.Get("Retry-After") != tc.retry {
			t.Fatalf("%s: %s %v", tc.state, g.body, g.header)
		}
	}
}

func TestUnknownAndMalformedIDsAre404(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/v1/operations/op_01ARYZ6S410000000000000000", "/v1/operations/nope", "/v1/operations/op_%00"} {
		wantProblem(t, e.do(req{method: http.MethodGet, path: path, caller: "alice"}), 404, "not_found")
	}
	wantProblem(t, e.do(req{method: http.MethodGet, path: "/v1/unknown", caller: "alice", offSpec: true}), 404, "not_found")
}

// A path the API has, called with a method it does not have, is 405 with Allow listing the
// path's methods (the harness checks it against the spec: Allow must be exactly the methods
// the document declares for the path); an unknown path stays 404, whatever the method.
// Neither costs a DynamoDB call.
func TestUnknownMethodIs405(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-405", demo("405")).json["operationId"].(string)
	before := e.snapshot()
	e.calls.Reset()
	for _, tc := range []struct {
		method, path, allow string
	}{
		{http.MethodDelete, "/v1/operations", "GET, POST"},
		{http.MethodPut, "/v1/operations/", "GET, POST"},
		{http.MethodPatch, "/v1/operations", "GET, POST"},
		{http.MethodHead, "/v1/operations", "GET, POST"},
		{http.MethodOptions, "/v1/operations", "GET, POST"},
		{http.MethodDelete, "/v1/operations/" + id, "GET"},
		{http.MethodPost, "/v1/operations/" + id, "GET"},
		{http.MethodPut, "/v1/operations/op_01ARYZ6S410000000000000000", "GET"},
		{http.MethodGet, "/v1/operations/" + id + "/cancel", "POST"},
		{http.MethodDelete, "/v1/operations/" + id + "/cancel", "POST"},
		{http.MethodGet, "/v1/operations/" + id + "/resolve", "POST"},
		{http.MethodPatch, "/v1/operations/nope/resolve", "POST"},
	} {
		r := e.do(req{method: tc.method, path: tc.path, caller: "alice", keys: []string{"k-405"}, body: demo("405")})
		wantProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		if r.header.Get("Allow") != tc.allow || r.json["title"] != "Method not allowed" {
			t.Errorf("%s %s: Allow %q, want %q: %s", tc.method, tc.path, r.header.Get("Allow"), tc.allow, r.body)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodDelete, "/v1/unknown"},
		{http.MethodGet, "/v1/operations/" + id + "/unknown"},
		{http.MethodDelete, "/v1/operations/" + id + "/cancel/more"},
		{http.MethodGet, "/v1/operations//cancel"},
		{http.MethodDelete, "/v2/operations"},
	} {
		r := e.do(req{method: tc.method, path: tc.path, caller: "alice", offSpec: true})
		wantProblem(t, r, http.StatusNotFound, "not_found")
		if r.header.Get("Allow") != "" {
			t.Errorf("%s %s: a 404 with Allow %q", tc.method, tc.path, r.header.Get("Allow"))
		}
	}
	// The caller is resolved first, as on every route: anonymous is 401, not 405.
	wantProblem(t, e.do(req{method: http.MethodDelete, path: "/v1/operations"}), 401, "unauthenticated")
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls for unknown methods, want 0", n)
	}
	e.unchanged(before)
}

// faultyClient fails chosen TransactWriteItems calls the way DynamoDB does under
// contention or throttling, then lets the rest through to DynamoDB Local.
type faultyClient struct {
	dynamo.Client
	fail  func(n int64) error
	calls atomic.Int64
}

func (c *faultyClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if err := c.fail(c.calls.Add(1)); err != nil {
		return nil, err
	}
	return c.Client.TransactWriteItems(ctx, in, opts...)
}

func conflict(n int) error {
	reasons := make([]types.CancellationReason, n)
	for i := range reasons {
		reasons[i].Code = aws.String("None")
	}
	reasons[0].Code = aws.String("TransactionConflict")
	return &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
}

// DynamoDB Local runs transactions one at a time, so the conflict AWS reports between
// racing transactions is injected: admission retries it and still admits exactly once.
func TestTransactionConflictIsRetried(t *testing.T) {
	t.Parallel()
	var fc *faultyClient
	e := newEnv(t, withClient(func(c dynamo.Client) dynamo.Client {
		fc = &faultyClient{Client: c, fail: func(n int64) error {
			if n <= 2 {
				return conflict(5)
			}
			return nil
		}}
		return fc
	}))
	r := e.admit("k-conflict", demo("conflict"))
	if r.status != 202 || fc.calls.Load() != 3 || e.operations() != 1 {
		t.Fatalf("%d %s after %d attempts", r.status, r.body, fc.calls.Load())
	}
}

// Throttling that outlasts the retries is 503 with Retry-After and writes nothing; the
// client's retry with the same key then admits the operation once.
func TestThrottlingIs503AndSafeToRetry(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	e := newEnv(t, withClient(func(c dynamo.Client) dynamo.Client {
		return &faultyClient{Client: c, fail: func(int64) error {
			if down.Load() {
				return &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
			}
			return nil
		}}
	}))
	before := e.snapshot()
	r := e.admit("k-throttle", demo("throttle"))
	wantProblem(t, r, http.StatusServiceUnavailable, "unavailable")
	if r.header.Get("Retry-After") == "" || strings.Contains(string(r.body), "slow down") {
		t.Fatalf("503: %s %v", r.body, r.header)
	}
	e.unchanged(before)
	down.Store(false)
	if r := e.admit("k-throttle", demo("throttle")); r.status != 202 || e.operations() != 1 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
}

// An unexpected failure is 500 with no internal detail.
func TestInternalErrorsHideTheirCause(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withClient(func(c dynamo.Client) dynamo.Client {
		return &faultyClient{Client: c, fail: func(int64) error {
			return errors.New("ResourceNotFoundException: table longrun-secret-table in account 123456789012")
		}}
	}))
	r := e.admit("k-500", demo("boom"))
	wantProblem(t, r, http.StatusInternalServerError, "internal")
	for _, leak := range []string{"ResourceNotFound", "secret", "123456789012"} {
		if strings.Contains(string(r.body), leak) {
			t.Fatalf("500 leaks %q: %s", leak, r.body)
		}
	}
}

// The representation's Retry-After follows the work: a second while an operation is young,
// a tenth of its age after 10 s (at most 30 s), the rest of a wait while the work waits,
// and 30 s while an operator is needed. So a long operation or a long wait costs its client
// a bounded number of reads, not one a second.
func TestPollAfterFollowsTheWork(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	running := operation.Operation{State: operation.Running, CreatedAt: t0}
	waiting := running
	waiting.WaitingUntil = t0.Add(6 * time.Hour)
	unknown := running
	unknown.State = operation.OutcomeUnknown
	cancelling := waiting
	cancelling.State, cancelling.CancelRequested = operation.Cancelling, true
	for _, tc := range []struct {
		name string
		op   operation.Operation
		at   time.Duration
		want time.Duration
	}{
		{"young", running, 3 * time.Second, time.Second},
		{"a minute old", running, time.Minute, 6 * time.Second},
		{"an hour old", running, time.Hour, 30 * time.Second},
		{"waiting", waiting, time.Hour, 5 * time.Hour},
		{"the wait over", waiting, 7 * time.Hour, 30 * time.Second},
		{"outcome unknown", unknown, time.Second, 30 * time.Second},
		{"a cancel during the wait", cancelling, time.Hour, 30 * time.Second},
	} {
		if got := httpapi.PollAfter(tc.op, t0.Add(tc.at)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
