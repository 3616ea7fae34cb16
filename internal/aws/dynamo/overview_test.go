package dynamo_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// reads counts the queries a store makes and the items they examined (ScannedCount: before
// any filter), to prove what a list reads.
type reads struct {
	dynamo.Client
	mu      sync.Mutex
	queries int
	scanned int
}

func (r *reads) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := r.Client.Query(ctx, in, opts...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries++
	if out != nil {
		r.scanned += int(out.ScannedCount)
	}
	return out, err
}

func (r *reads) reset() (queries, scanned int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	queries, scanned, r.queries, r.scanned = r.queries, r.scanned, 0, 0
	return queries, scanned
}

// mintAt is an operation id minted at t.
func mintAt(t time.Time) string {
	return (&ids.Generator{Now: func() time.Time { return t }, Entropy: rand.Reader}).Operation()
}

// admitAt admits operation id of tenant's alice on target, created at created.
func admitAt(t *testing.T, store *dynamo.Store, id, tenant, target string, created time.Time) {
	t.Helper()
	in := intent(id, "k-"+id, target)
	in.Scope.Tenant, in.First.Admission.Tenant = tenant, tenant
	in.Now, in.First.At, in.Record.ExpiresAt = created, created, created.Add(24*time.Hour)
	in.QuotaLimit = 0
	if _, err := store.Admit(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func listIDs(t *testing.T, store *dynamo.Store, q httpapi.ListQuery) []string {
	t.Helper()
	var got []string
	for page := 0; ; page++ {
		items, next, err := store.List(context.Background(), q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		for _, it := range items {
			got = append(got, it.OperationID)
		}
		if next == "" {
			return got
		}
		if page > 50 {
			t.Fatal("the pages do not end")
		}
		q.Cursor = next
	}
}

// The list's target prefix and creation-time window filter what they say, with and without
// the others, page after page; the window is a range of the index's key, so what lies
// outside it is never read; and the window is judged on createdAt, not on the id's time,
// which an id minted a moment before its createdAt would get wrong at the window's edge.
func TestListFiltersByTargetAndCreationTime(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t)
	r := &reads{Client: store.Client}
	store.Client = r
	at := func(h, m int) time.Time { return time.Date(2026, 11, 30, h, m, 0, 0, time.UTC) }
	type op struct {
		id, target string
		created    time.Time
	}
	ops := []op{
		{mintAt(at(9, 0)), "demo:alpha-1", at(9, 0)},
		{mintAt(at(10, 0).Add(-30 * time.Second)), "demo:alpha-2", at(10, 0)}, // minted 30 s before its createdAt
		{mintAt(at(10, 0).Add(-time.Millisecond)), "demo:early", at(10, 0).Add(-time.Millisecond)},
		{mintAt(at(11, 0)), "demo:beta-1", at(11, 0)},
		{mintAt(at(12, 0)), "other:alpha", at(12, 0)},
	}
	for _, o := range ops {
		admitAt(t, store, o.id, "acme", o.target, o.created)
	}
	// Another caller's operation in the window is never listed.
	admitAt(t, store, mintAt(at(10, 30)), "globex", "demo:alpha-3", at(10, 30))
	// Many operations long before the window, which a narrow window must not read.
	for i := range 40 {
		admitAt(t, store, mintAt(at(1, i)), "acme", fmt.Sprintf("demo:old-%d", i), at(1, i))
	}
	want := func(idx ...int) []string {
		var out []string
		for _, i := range slices.Backward(idx) { // newest id first
			out = append(out, ops[i].id)
		}
		return out
	}
	base := httpapi.ListQuery{Tenant: "acme", Principal: "alice", Limit: 2}
	for _, c := range []struct {
		name string
		q    func(q *httpapi.ListQuery)
		want []string
	}{
		{"target prefix", func(q *httpapi.ListQuery) { q.TargetPrefix = "demo:alpha" }, want(0, 1)},
		{"target namespace", func(q *httpapi.ListQuery) { q.TargetPrefix = "other:" }, want(4)},
		{"created after, inclusive", func(q *httpapi.ListQuery) { q.CreatedAfter = at(10, 0) }, want(1, 3, 4)},
		{"created before, exclusive", func(q *httpapi.ListQuery) { q.CreatedAfter, q.CreatedBefore = at(2, 0), at(11, 0) }, want(0, 1, 2)},
		{"a window", func(q *httpapi.ListQuery) { q.CreatedAfter, q.CreatedBefore = at(10, 0), at(12, 0) }, want(1, 3)},
		{"a window to the millisecond", func(q *httpapi.ListQuery) {
			q.CreatedAfter, q.CreatedBefore = at(10, 0).Add(-time.Millisecond), at(10, 0)
		}, want(2)},
		{"a window and a target", func(q *httpapi.ListQuery) { q.CreatedAfter, q.TargetPrefix = at(9, 0), "demo:" }, want(0, 1, 2, 3)},
		{"a window, a target and a state", func(q *httpapi.ListQuery) {
			q.CreatedAfter, q.TargetPrefix, q.State = at(9, 0), "demo:", operation.Running
		}, nil},
		{"an empty window", func(q *httpapi.ListQuery) { q.CreatedAfter, q.CreatedBefore = at(13, 0), at(14, 0) }, nil},
	} {
		q := base
		c.q(&q)
		if got := listIDs(t, store, q); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}

	// A one-hour window reads about the operations in it (and its minute either side), not
	// the 40 from before it.
	r.reset()
	q := base
	q.Limit, q.CreatedAfter, q.CreatedBefore = 10, at(10, 0), at(11, 0)
	if got := listIDs(t, store, q); !slices.Equal(got, want(1)) {
		t.Fatalf("window: %v", got)
	}
	if queries, scanned := r.reset(); queries != 1 || scanned > 3 {
		t.Fatalf("a one-hour window took %d queries examining %d items; its range holds 2", queries, scanned)
	}

	// A cursor is bound to its filters: another target, another window, or a position
	// outside its window is invalid_input, before anything is read.
	q = base
	q.Limit, q.TargetPrefix = 1, "demo:"
	_, next, err := store.List(context.Background(), q)
	if err != nil || next == "" {
		t.Fatalf("page 1: %q %v", next, err)
	}
	r.reset()
	for name, other := range map[string]func(q *httpapi.ListQuery){
		"another target":  func(q *httpapi.ListQuery) { q.TargetPrefix = "demo:a" },
		"no target":       func(q *httpapi.ListQuery) { q.TargetPrefix = "" },
		"a window added":  func(q *httpapi.ListQuery) { q.CreatedAfter = at(9, 0) },
		"another caller":  func(q *httpapi.ListQuery) { q.Principal = "carol" },
		"a state changed": func(q *httpapi.ListQuery) { q.State = operation.Accepted },
	} {
		q2 := q
		q2.Cursor = next
		other(&q2)
		if _, _, err := store.List(context.Background(), q2); problem.CodeOf(err) != problem.InvalidInput {
			t.Errorf("%s: %v, want invalid_input", name, err)
		}
	}
	windowed := base
	windowed.CreatedAfter, windowed.CreatedBefore = at(10, 0), at(12, 0)
	for _, after := range []string{mintAt(at(1, 0)), mintAt(at(13, 0))} {
		windowed.Cursor = dynamo.CraftCursor("acme", "alice", dynamo.ListFilters(windowed), after)
		if _, _, err := store.List(context.Background(), windowed); problem.CodeOf(err) != problem.InvalidInput {
			t.Errorf("a cursor at %s, outside the window: %v, want invalid_input", after, err)
		}
	}
	if queries, _ := r.reset(); queries != 0 {
		t.Fatalf("refused cursors read %d times", queries)
	}
	// Cursors without the new filters are as they were ("<state>|<type>"), so a cursor a
	// client holds across a deployment stays good.
	if f := dynamo.ListFilters(httpapi.ListQuery{State: operation.Running, Type: "demo.task"}); f != "running|demo.task" {
		t.Fatalf("filters %q", f)
	}
}

// unknownAt admits an operation of tenant and makes its outcome unknown at at.
func unknownAt(t *testing.T, store *dynamo.Store, tenant, target string, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	id := mintAt(at)
	admitAt(t, store, id, tenant, target, at)
	op, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindStarted, At: at, Source: operation.SourceExecutor},
		operation.Fact{Kind: operation.KindOutcomeUnknown, At: at, Source: operation.SourceExecutor,
			Problem: operation.NewProblem("worker_error", "Outcome unknown", "lost")}); err != nil {
		t.Fatal(err)
	}
	return id
}

// The attention queue as the API serves it: every tenant's unknown outcomes, oldest first,
// page by page behind opaque cursors; a cursor it did not write is invalid_input, and
// nothing is read for it.
func TestAttentionPagesBehindOpaqueCursors(t *testing.T) {
	t.Parallel()
	client, calls := dynamotest.NewClient(t)
	store := dynamo.New(client, dynamotest.NewTable(t, client))
	ctx := context.Background()
	var want []string
	for i, tenant := range []string{"acme", "globex", "initech"} {
		want = append(want, unknownAt(t, store, tenant, fmt.Sprintf("demo:u%d", i), now.Add(time.Duration(i)*time.Minute)))
	}
	var got []string
	var tenants []string
	q := httpapi.AttentionQuery{Limit: 2}
	for {
		items, next, err := store.Attention(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			got, tenants = append(got, it.Operation.OperationID), append(tenants, it.Tenant)
			if it.Operation.State != operation.OutcomeUnknown {
				t.Fatalf("%+v", it)
			}
		}
		if next == "" {
			break
		}
		if _, err := base64.RawURLEncoding.DecodeString(next); err != nil {
			t.Fatalf("cursor %q is not base64url: %v", next, err)
		}
		q.Cursor = next
	}
	if !slices.Equal(got, want) || !slices.Equal(tenants, []string{"acme", "globex", "initech"}) {
		t.Fatalf("got %v %v, want %v oldest first", got, tenants, want)
	}
	calls.Reset()
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{
		"not base64 !",
		enc("no-hash"),
		enc("2026-11-30T10:00:00.000Z#op_nope"),
		enc("yesterday#" + want[0]),
		enc("2026-11-30T10:00:00Z#" + want[0]), // not the index's own format
		enc("#" + want[0]),
		string(make([]byte, dynamo.MaxCursorLen+1)),
	} {
		if _, _, err := store.Attention(ctx, httpapi.AttentionQuery{Limit: 2, Cursor: bad}); problem.CodeOf(err) != problem.InvalidInput {
			t.Errorf("cursor %q: %v, want invalid_input", bad, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("refused cursors made %d DynamoDB calls", n)
	}
}

// The stats count the operations in flight by state and those waiting for an operator,
// every tenant's, and name the oldest in flight; an ended operation counts nowhere. With
// a bound smaller than what is in flight they say they are partial.
func TestStatsCountWhatIsInFlight(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t)
	ctx := context.Background()
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	apply := func(id string, facts ...operation.Fact) {
		t.Helper()
		op, err := store.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, op, facts...); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(k operation.Kind) operation.Fact {
		return operation.Fact{Kind: k, At: at(30), Source: operation.SourceExecutor}
	}
	// The oldest in flight is globex's, created first; an older operation that ended does
	// not count.
	ended := mintAt(at(-10))
	admitAt(t, store, ended, "acme", "demo:ended", at(-10))
	apply(ended, exec(operation.KindStarted), exec(operation.KindSucceeded))
	oldest := mintAt(at(0))
	admitAt(t, store, oldest, "globex", "demo:oldest", at(0))
	apply(oldest, exec(operation.KindStarted))
	for i := range 3 {
		admitAt(t, store, mintAt(at(1+i)), "acme", fmt.Sprintf("demo:accepted-%d", i), at(1+i))
	}
	// One more in the oldest's shard of the due index, so that a shard holds two.
	shared := mintAt(at(4))
	for dynamo.DueShardOf(shared) != dynamo.DueShardOf(oldest) {
		shared = mintAt(at(4))
	}
	admitAt(t, store, shared, "acme", "demo:accepted-shared", at(4))
	dispatched := mintAt(at(5))
	admitAt(t, store, dispatched, "acme", "demo:dispatched", at(5))
	apply(dispatched, operation.Fact{Kind: operation.KindDispatched, At: at(5), Source: operation.SourceDispatcher,
		Execution: "arn:aws:states:us-east-1:123456789012:execution:longrun-dev:" + dispatched})
	cancelling := mintAt(at(6))
	admitAt(t, store, cancelling, "initech", "demo:cancelling", at(6))
	apply(cancelling, exec(operation.KindStarted), operation.Fact{Kind: operation.KindCancelRequested, At: at(7), Source: operation.SourceClient, Actor: "alice"})
	unknownAt(t, store, "acme", "demo:unknown-1", at(8))
	unknownAt(t, store, "globex", "demo:unknown-2", at(9))

	st, err := store.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := map[operation.State]int{operation.Accepted: 4, operation.Dispatched: 1, operation.Running: 1, operation.Cancelling: 1}
	if !sameCounts(st.InFlight, wantCounts) || st.OutcomeUnknown != 2 || st.Partial {
		t.Fatalf("stats %+v, want %v in flight, 2 unknown, not partial", st, wantCounts)
	}
	if o := st.OldestInFlight; o == nil || o.Tenant != "globex" || o.Operation.OperationID != oldest || o.Operation.State != operation.Running {
		t.Fatalf("oldest in flight %+v, want globex's %s", o, oldest)
	}
	if st.AsOf.IsZero() {
		t.Fatal("no asOf")
	}

	// One operation a shard: the oldest's shard holds two of the seven in flight.
	small, err := store.StatsWithin(ctx, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range small.InFlight {
		total += n
	}
	if !small.Partial || total >= 7 || total < 1 || small.OutcomeUnknown != 2 {
		t.Fatalf("within a bound of one a shard: %+v (%d in flight), want partial with fewer than 7", small, total)
	}

	// Nothing in flight: no oldest.
	empty, _, _ := newStore(t)
	if st, err := empty.Stats(ctx); err != nil || st.OldestInFlight != nil || st.Partial || st.OutcomeUnknown != 0 || len(st.InFlight) != 0 {
		t.Fatalf("an empty table: %+v %v", st, err)
	}
}

func sameCounts(got, want map[operation.State]int) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	for k, v := range got {
		if want[k] != v {
			return false
		}
	}
	return true
}
