package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/ddbmeter"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
	"github.com/longrun-dev/longrun/internal/service/notify"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// history generates random legal histories: every kind the transition table allows from
// each state, from every source, with and without leases, continuations, results (none,
// {}, null, spaced, HTML, large), problems (none, empty, full), progress, cancels, times in
// other zones, to the nanosecond, and beyond the years a 64-bit count of nanoseconds holds.
type history struct {
	r  *rand.Rand
	id string
	at time.Time
}

func newHistory(r *rand.Rand, id string) *history {
	epochs := []time.Time{
		time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 10, 0, 0, 0, time.FixedZone("CET", 3600)),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), // after the years of UnixNano
	}
	return &history{r: r, id: id, at: epochs[r.IntN(len(epochs))].Add(time.Duration(r.Int64N(int64(time.Hour))))}
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// next is a later instant: a few milliseconds to seconds on, to the nanosecond or not.
func (h *history) next() time.Time {
	h.at = h.at.Add(time.Duration(1+h.r.IntN(3000)) * time.Millisecond)
	if h.r.IntN(2) == 0 {
		h.at = h.at.Add(time.Duration(h.r.IntN(1_000_000)))
	}
	return h.at
}

func (h *history) json(large int) json.RawMessage {
	return pick(h.r,
		json.RawMessage(`{}`), json.RawMessage(`null`), json.RawMessage(`{ "rows" : [1, 2,3] ,"note":"a <b> & c" }`),
		json.RawMessage(`"é ✓ \u00e9"`), json.RawMessage(`{"blob":"`+strings.Repeat("x", large)+`"}`), json.RawMessage(`[]`))
}

func (h *history) admission() *operation.Admission {
	r := h.r
	corr := pick(r, "", "4bf92f3577b34da6a3ce929d0e0e4736")
	a := &operation.Admission{Type: "demo.task", TypeVersion: r.IntN(3), Target: "t-" + h.id, Tenant: "acme",
		Principal: pick(r, "alice", "arn:aws:iam::123456789012:role/caller"), Input: h.json(r.IntN(5000)),
		QuotaReserved: r.IntN(2) == 0, QuotaShard: r.IntN(16), PrincipalQuotaReserved: r.IntN(2) == 0,
		PrincipalQuotaShard: r.IntN(16), QuotaWeight: r.IntN(3), CorrelationID: corr}
	switch r.IntN(4) {
	case 0:
		a.Deadline = h.at.Add(time.Hour)
	case 1:
		a.Deadline = h.at.Add(time.Duration(r.Int64N(int64(48 * time.Hour))))
	}
	switch r.IntN(3) {
	case 0:
		a.Traceparent = "00-" + corr + "-00f067aa0ba902b7-01"
	case 1:
		a.Traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	}
	return a
}

func (h *history) execution() string {
	return pick(h.r, "", "arn:aws:states:us-east-1:123456789012:execution:longrun-demo-task:"+h.id,
		"arn:aws:states:us-east-1:123456789012:execution:longrun-demo-task-resume:"+h.id+"-2", "arn:aws:states:eu-west-1:1:execution:other:x")
}

func (h *history) lease(at time.Time) *operation.Lease {
	if h.r.IntN(3) == 0 {
		return nil
	}
	return &operation.Lease{Run: pick(h.r, "req_01JDZ3W6Q1Q9V8G5K2N7R4T6YC", ""), Execution: pick(h.r, h.id, h.id+"-2", "elsewhere", ""),
		Until: pick(h.r, at.Add(80*time.Second), at.Add(time.Duration(h.r.Int64N(int64(15*time.Minute)))), at.Add(-time.Second),
			time.Date(2400, 1, 1, 0, 0, 0, 1, time.UTC)),
		Callback: pick(h.r, "", `{"t":"token","w":"arn:w","s":2,"a":1}`)}
}

func (h *history) progress() *operation.Progress {
	if h.r.IntN(3) == 0 {
		return nil
	}
	p := &operation.Progress{CompletedSteps: h.r.IntN(300), TotalSteps: h.r.IntN(2) * 300, Message: pick(h.r, "", "copying é✓ <rows>")}
	if h.r.IntN(2) == 0 {
		f := pick(h.r, 0, 0.1+0.2, 100)
		p.Percent = &f
	}
	return p
}

func (h *history) problem() *operation.Problem {
	return pick(h.r, nil, &operation.Problem{}, operation.NewProblem("demo_failure", "Demo failure", "asked to <fail>"))
}

// fact is a random fact of kind k.
func (h *history) fact(k operation.Kind) operation.Fact {
	r := h.r
	at := h.next()
	f := operation.Fact{Kind: k, At: at, Source: pick(r, operation.SourceExecutor, operation.SourceDispatcher, operation.SourceReconciler,
		operation.SourceOperator, operation.SourceClient)}
	switch k {
	case operation.KindDispatched:
		f.Source, f.Execution = operation.SourceDispatcher, h.execution()
	case operation.KindStarted:
		f.Source, f.Lease = operation.SourceExecutor, h.lease(at)
	case operation.KindProgress:
		f.Progress, f.Lease = h.progress(), h.lease(at)
		if r.IntN(4) == 0 {
			f.Execution = h.execution() // a continuation names itself
		}
		switch r.IntN(8) {
		case 0, 1:
			until := at.Add(time.Duration(r.IntN(86400)) * time.Second) // a hand-back to wait
			f.Lease, f.WaitingUntil = nil, &until
		case 2: // a wait for a signal, which the snapshot leaves to the facts
			f.Lease, f.Awaiting = nil, &operation.Awaiting{Signal: "approval", Since: at, Until: at.Add(time.Hour), Step: 1,
				State: json.RawMessage(`{"n":1}`)}
		case 3: // a step given signals
			f.Delivery = &operation.Delivery{Step: 2, From: 0, Through: 1, Awaited: "approval"}
		}
	case operation.KindSignaled:
		f.Source, f.Actor = operation.SourceClient, "alice"
		f.Signal = &operation.Signal{Name: "approval", Data: h.json(r.IntN(200)), Key: fmt.Sprint("k", at.UnixNano()), Fingerprint: "fp"}
	case operation.KindCancelRequested:
		f.Source, f.Actor, f.Reason = operation.SourceClient, "alice", pick(r, "", "no longer needed")
	case operation.KindSucceeded:
		if r.IntN(3) > 0 {
			f.Result = h.json(r.IntN(4000))
		}
		f.Progress = h.progress()
	case operation.KindFailed, operation.KindOutcomeUnknown:
		f.Problem, f.Progress, f.Reason = h.problem(), h.progress(), pick(r, "", "operator resolved")
		if k == operation.KindOutcomeUnknown && r.IntN(2) == 0 { // the step to retry, which the snapshot leaves to the facts
			f.Retry = &operation.Retry{Step: 2, Attempt: 1, State: json.RawMessage(`{"n":2}`)}
		}
	case operation.KindRetried:
		f.Source, f.Actor, f.Reason = operation.SourceOperator, "longrun/ops", "not applied"
		f.Retry = &operation.Retry{Step: 2, Attempt: 2, State: json.RawMessage(`{"n":2}`)}
	}
	if f.Source == operation.SourceExecutor && f.Lease == nil && f.WaitingUntil == nil && r.IntN(2) == 0 {
		f.Lease = h.lease(at)
	}
	return f
}

// laterKinds are the kinds of facts that may follow the accepted one.
func laterKinds() []operation.Kind {
	return []operation.Kind{operation.KindDispatched, operation.KindStarted, operation.KindCancelRequested, operation.KindProgress,
		operation.KindSucceeded, operation.KindFailed, operation.KindCanceled, operation.KindOutcomeUnknown, operation.KindSignaled,
		operation.KindRetried}
}

// appendOf is the next append: one to three facts, each legal after the one before, none
// once the state is terminal. Progress is likelier, so that histories run long.
func (h *history) appendOf(s operation.State) []operation.Fact {
	var out []operation.Fact
	for n := 1 + h.r.IntN(3); len(out) < n && !s.Terminal(); {
		var legal []operation.Kind
		for _, k := range laterKinds() {
			if _, err := operation.Next(s, k); err == nil {
				legal = append(legal, k)
				if k == operation.KindProgress || k == operation.KindRetried { // retried: so that every seed has some
					legal = append(legal, k, k, k)
				}
			}
		}
		k := legal[h.r.IntN(len(legal))]
		s, _ = operation.Next(s, k)
		out = append(out, h.fact(k))
	}
	return out
}

// normal is op with its times in UTC: a fold's times are in the zone each writer wrote
// them in, a snapshot's in UTC; the instants are what the store keeps.
func normal(op operation.Operation) operation.Operation {
	op.CreatedAt, op.UpdatedAt, op.ObservedAt, op.Deadline = op.CreatedAt.UTC(), op.UpdatedAt.UTC(), op.ObservedAt.UTC(), op.Deadline.UTC()
	op.WaitingUntil = op.WaitingUntil.UTC()
	if op.Lease != nil {
		l := *op.Lease
		l.Until = l.Until.UTC()
		op.Lease = &l
	}
	return op
}

// diff names the fields where got and want differ.
func diff(got, want operation.Operation) string {
	var out []string
	g, w := reflect.ValueOf(normal(got)), reflect.ValueOf(normal(want))
	var walk func(prefix string, g, w reflect.Value)
	walk = func(prefix string, g, w reflect.Value) {
		for i := range g.NumField() {
			name := prefix + g.Type().Field(i).Name
			if g.Type().Field(i).Anonymous {
				walk(name+".", g.Field(i), w.Field(i))
				continue
			}
			if !reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
				out = append(out, fmt.Sprintf("%s: got %#v, want %#v", name, g.Field(i).Interface(), w.Field(i).Interface()))
			}
		}
	}
	walk("", g, w)
	return strings.Join(out, "\n")
}

func admitIntent(id string, first operation.Fact) admission.Intent {
	return admission.Intent{Scope: admission.Scope{Tenant: "acme", Principal: "alice"}, Key: "k-" + id, Now: first.At,
		Record: admission.Record{Fingerprint: "fp", OperationID: id, Status: 202, Location: "/v1/operations/" + id,
			Body: []byte(`{}`), ExpiresAt: first.At.Add(24 * time.Hour)},
		First: first}
}

// countedStores runs test on plain DynamoDB Local and behind the conflict proxy, as
// dynamotest.EachStore does, with the counter of the client's requests.
func countedStores(t *testing.T, test func(t *testing.T, client *dynamodb.Client, counter *dynamotest.Counter)) {
	t.Run("plain", func(t *testing.T) {
		client, counter := dynamotest.NewClient(t)
		test(t, client, counter)
	})
	t.Run("conflicts", func(t *testing.T) {
		client, counter, _ := dynamotest.NewConflictClient(t, 10*time.Millisecond)
		test(t, client, counter)
	})
}

// loadCalls are the requests a Load made: GetItem alone, once or twice, when it read the
// snapshot.
func loadCalls(counter *dynamotest.Counter) []string {
	var ops []string
	for _, c := range counter.Calls() {
		ops = append(ops, c.Operation)
	}
	return ops
}

// Over many generated histories, after every append, Load (the projection's snapshot, and
// the accepted fact when the admission did not fit) equals the fold of every fact, field for
// field, and reads no more than those two items.
func TestLoadEqualsTheFoldOfTheFacts(t *testing.T) {
	t.Parallel()
	countedStores(t, func(t *testing.T, client *dynamodb.Client, counter *dynamotest.Counter) {
		store := dynamo.New(client, dynamotest.NewTable(t, client))
		ctx := context.Background()
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		r := rand.New(rand.NewPCG(seed, 1))
		reads := map[int]int{} // items a Load read → Loads
		kindsSeen := map[operation.Kind]bool{}
		for n := range 40 {
			id := fmt.Sprintf("op_%026d", n)
			h := newHistory(r, id)
			first := operation.Fact{Version: 1, Kind: operation.KindAccepted, At: h.at, Source: operation.SourceAdmission, Admission: h.admission()}
			if n%8 == 0 { // whatever the seed, some admissions that do not fit in the projection
				first.Admission.Input = json.RawMessage(`"` + strings.Repeat("x", 2000) + `"`)
			}
			if _, err := store.Admit(ctx, admitIntent(id, first)); err != nil {
				t.Fatal(err)
			}
			store.Drain()
			for {
				counter.Reset()
				got, err := store.Load(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				calls := loadCalls(counter)
				facts, err := store.Facts(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				want, err := operation.Fold(id, facts)
				if err != nil {
					t.Fatal(err)
				}
				// A lease's callback stays in the fact that took it (LeaseVersion): Load
				// leaves it out, and Callback reads it from there.
				folded := len(want.Signals) > 0 || want.Awaiting != nil || want.Delivery != nil || want.Retryable != nil || want.Retried != nil
				if want.LeaseVersion > 0 && !folded { // a fold of the facts keeps the callback
					cb, err := store.Callback(ctx, id, want.LeaseVersion)
					if err != nil || cb != want.Lease.Callback {
						t.Fatalf("%s: the callback of fact %d is %q, %v; want %q", id, want.LeaseVersion, cb, err, want.Lease.Callback)
					}
					l := *want.Lease
					l.Callback = ""
					want.Lease = &l
				}
				if d := diff(got, want); d != "" {
					t.Fatalf("seed %d, %s at version %d: Load differs from the fold:\n%s", seed, id, want.Version, d)
				}
				if folded {
					// Signals and their waits are folded from the facts: the item, then a query.
					if !slices.Equal(calls, []string{"GetItem", "Query"}) {
						t.Fatalf("%s at version %d with signals: Load made %v, want GetItem then Query", id, want.Version, calls)
					}
				} else if len(calls) < 1 || len(calls) > 2 || slices.ContainsFunc(calls, func(c string) bool { return c != "GetItem" }) {
					t.Fatalf("%s at version %d: Load made %v, want one or two GetItem", id, want.Version, calls)
				}
				if calls[len(calls)-1] == "GetItem" {
					reads[len(calls)]++
				}
				// The admission is in the projection only where it costs no write unit.
				if item := metaItem(t, client, store.Table, id); len(calls) == 1 {
					a := item["snap"].(*types.AttributeValueMemberM).Value["a"]
					size := ddbmeter.Size(meterItem(item))
					lean := size - 2 - ddbmeter.ValueSize(meterValue(a)) // "a" and its map entry's byte
					if ddbmeter.WriteUnits(size+len("reconcile_attempts")+3) != ddbmeter.WriteUnits(lean+len("reconcile_attempts")+3) {
						t.Fatalf("%s at version %d: the admission makes the projection %d bytes, %d without it", id, want.Version, size, lean)
					}
				}
				next := h.appendOf(got.State)
				if len(next) == 0 {
					break
				}
				for _, f := range next {
					kindsSeen[f.Kind] = true
				}
				if _, err := store.Append(ctx, got, next...); err != nil {
					t.Fatalf("append %v to %s at version %d: %v", next, id, got.Version, err)
				}
			}
		}
		// Both ways of reading the admission were taken, and every kind was appended: the
		// comparison above covered them.
		if reads[1] == 0 || reads[2] == 0 {
			t.Errorf("Loads by items read: %v; want some of one item and some of two", reads)
		}
		for _, k := range laterKinds() {
			if !kindsSeen[k] {
				t.Errorf("no %s fact was generated", k)
			}
		}
	})
}

// Every field of the fold is one the snapshot was written for: a field added to
// operation.Operation or operation.Admission fails here until the snapshot (snapshot.go)
// carries it, or Load would silently leave it empty.
func TestSnapshotKnowsEveryFieldOfTheFold(t *testing.T) {
	t.Parallel()
	var names []string
	var walk func(prefix string, ty reflect.Type)
	walk = func(prefix string, ty reflect.Type) {
		for i := range ty.NumField() {
			if f := ty.Field(i); f.Anonymous {
				walk(prefix+f.Name+".", f.Type)
			} else {
				names = append(names, prefix+f.Name)
			}
		}
	}
	walk("", reflect.TypeFor[operation.Operation]())
	known := []string{"ID", "Admission.Type", "Admission.TypeVersion", "Admission.Target", "Admission.Tenant", "Admission.Principal",
		"Admission.Input", "Admission.QuotaReserved", "Admission.QuotaShard", "Admission.PrincipalQuotaReserved",
		"Admission.PrincipalQuotaShard", "Admission.Deadline", "Admission.QuotaWeight", "Admission.CorrelationID",
		"Admission.Traceparent", "State", "Version", "CreatedAt", "UpdatedAt", "ObservedAt", "CancelRequested", "Started",
		"Progress", "Result", "Problem", "Execution", "Lease", "Leased", "LeaseVersion", "WaitingUntil",
		// Not in the snapshot: an operation with any of these is folded from its facts
		// (snapshotOf declines), which TestLoadEqualsTheFoldOfTheFacts covers.
		"Signals", "Awaiting", "Delivery", "TimedOut", "Retryable", "Retried", "Retrying"}
	if !slices.Equal(names, known) {
		t.Fatalf("the fold's fields are\n%v\nthe snapshot knows\n%v", names, known)
	}
	lease := []string{}
	for i := range reflect.TypeFor[operation.Lease]().NumField() {
		lease = append(lease, reflect.TypeFor[operation.Lease]().Field(i).Name)
	}
	if !slices.Equal(lease, []string{"Run", "Execution", "Until", "Callback"}) {
		t.Fatalf("the lease's fields are %v", lease)
	}
}

// metaItem reads an operation's projection item.
func metaItem(t *testing.T, client *dynamodb.Client, table, id string) map[string]types.AttributeValue {
	t.Helper()
	return itemAt(t, client, table, id, "META")
}

// An operation whose projection has no snapshot (written before snapshots) loads through the
// fold of its facts, and the next append writes the snapshot; so does one whose snapshot is
// of an older version than its projection (a writer of the previous release appended since,
// updating the rest of the item and leaving the snapshot as it was).
func TestLoadFoldsAProjectionWithoutItsSnapshot(t *testing.T) {
	t.Parallel()
	client, counter := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	store := dynamo.New(client, table)
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	id := "op_01JDZ3W6Q1Q9V8G5K2N7R4T6YB"
	first := operation.Fact{Version: 1, Kind: operation.KindAccepted, At: at, Source: operation.SourceAdmission,
		Admission: &operation.Admission{Type: "demo.task", TypeVersion: 1, Target: "t1", Tenant: "acme", Principal: "alice", Input: json.RawMessage(`{"target":"t1"}`)}}
	if _, err := store.Admit(ctx, admitIntent(id, first)); err != nil {
		t.Fatal(err)
	}
	store.Drain()
	lease := &operation.Lease{Run: "req_1", Execution: id, Until: at.Add(time.Minute)}
	op := dynamotest.Load(t, store, id)
	op, err := store.Append(ctx, op,
		operation.Fact{Kind: operation.KindDispatched, At: at.Add(time.Second), Source: operation.SourceDispatcher, Execution: "arn:aws:states:us-east-1:1:execution:m:" + id},
		operation.Fact{Kind: operation.KindStarted, At: at.Add(2 * time.Second), Source: operation.SourceExecutor, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	// The projection as the previous release wrote it: every attribute but the snapshot.
	old := metaItem(t, client, table, id)
	if old["snap"] == nil {
		t.Fatal("the store wrote no snapshot")
	}
	delete(old, "snap")
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: old}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want []string) operation.Operation {
		t.Helper()
		counter.Reset()
		got, err := store.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if calls := loadCalls(counter); !slices.Equal(calls, want) {
			t.Errorf("%s: Load made %v, want %v", what, calls, want)
		}
		facts, err := store.Facts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		fold, err := operation.Fold(id, facts)
		if err != nil {
			t.Fatal(err)
		}
		if d := diff(got, fold); d != "" {
			t.Fatalf("%s: Load differs from the fold:\n%s", what, d)
		}
		return got
	}
	op = check("no snapshot", []string{"GetItem", "Query"})
	op, err = store.Append(ctx, op, operation.Fact{Kind: operation.KindProgress, At: at.Add(3 * time.Second), Source: operation.SourceExecutor,
		Lease: lease, Progress: &operation.Progress{CompletedSteps: 1}})
	if err != nil {
		t.Fatal(err)
	}
	stale := metaItem(t, client, table, id)["snap"]
	op = check("the next append wrote it", []string{"GetItem"})

	// A writer of the previous release appends: its projection update leaves the snapshot
	// at the version before.
	if _, err = store.Append(ctx, op, operation.Fact{Kind: operation.KindCancelRequested, At: at.Add(4 * time.Second), Source: operation.SourceClient, Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "OP#" + id}, "sk": &types.AttributeValueMemberS{Value: "META"}},
		UpdateExpression: aws.String("SET snap = :old"), ExpressionAttributeValues: map[string]types.AttributeValue{":old": stale}}); err != nil {
		t.Fatal(err)
	}
	op = check("a snapshot of the version before", []string{"GetItem", "Query"})
	if !op.CancelRequested || op.Version != 5 {
		t.Fatalf("the fold missed the newer fact: %+v", op)
	}
	if _, err = store.Append(ctx, op, operation.Fact{Kind: operation.KindCanceled, At: at.Add(5 * time.Second), Source: operation.SourceExecutor}); err != nil {
		t.Fatal(err)
	}
	check("the next append wrote it again", []string{"GetItem"})
}

// streamImage is an item as DynamoDB Streams delivers it to a function (through JSON, as
// Lambda's event source mapping does).
func streamImage(t *testing.T, item map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	var conv func(v types.AttributeValue) events.DynamoDBAttributeValue
	conv = func(v types.AttributeValue) events.DynamoDBAttributeValue {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			return events.NewStringAttribute(v.Value)
		case *types.AttributeValueMemberN:
			return events.NewNumberAttribute(v.Value)
		case *types.AttributeValueMemberBOOL:
			return events.NewBooleanAttribute(v.Value)
		case *types.AttributeValueMemberM:
			m := map[string]events.DynamoDBAttributeValue{}
			for k, e := range v.Value {
				m[k] = conv(e)
			}
			return events.NewMapAttribute(m)
		}
		t.Fatalf("no stream value for %T", v)
		return events.DynamoDBAttributeValue{}
	}
	img := map[string]events.DynamoDBAttributeValue{}
	for k, v := range item {
		img[k] = conv(v)
	}
	b, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

type recordingBus struct{ details [][]byte }

func (b *recordingBus) Publish(_ context.Context, evs []notify.Event) ([]bool, error) {
	published := make([]bool, len(evs))
	for i, e := range evs {
		b.details = append(b.details, e.Detail)
		published[i] = true
	}
	return published, nil
}

// The snapshot holds the execution reference and the lease, which are internal: the
// notifier reads the projection's stream records (their old and new images carry the
// snapshot now) and publishes the representation only, and the lists read the
// representation only. None of them shows a provider identifier or a Run.
func TestSnapshotIsNeverPublished(t *testing.T) {
	t.Parallel()
	client, _ := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	store := dynamo.New(client, table)
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	id := "op_01JDZ3W6Q1Q9V8G5K2N7R4T6YB"
	arn, run := "arn:aws:states:us-east-1:123456789012:execution:longrun-demo-task:"+id+"-2", "req_RUNOFTHERECORDER"
	first := operation.Fact{Version: 1, Kind: operation.KindAccepted, At: at, Source: operation.SourceAdmission,
		Admission: &operation.Admission{Type: "demo.task", Target: "t1", Tenant: "acme", Principal: "alice", Input: json.RawMessage(`{"target":"t1"}`),
			CorrelationID: "4bf92f3577b34da6a3ce929d0e0e4736", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	if _, err := store.Admit(ctx, admitIntent(id, first)); err != nil {
		t.Fatal(err)
	}
	op := dynamotest.Load(t, store, id)
	op, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: at, Source: operation.SourceDispatcher, Execution: arn})
	if err != nil {
		t.Fatal(err)
	}
	before := metaItem(t, client, table, id)
	if _, err = store.Append(ctx, op, operation.Fact{Kind: operation.KindOutcomeUnknown, At: at.Add(time.Second), Source: operation.SourceExecutor,
		Lease: &operation.Lease{Run: run, Execution: "elsewhere", Until: at.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	after := metaItem(t, client, table, id)
	var rec events.DynamoDBEventRecord
	rec.EventName, rec.Change.SequenceNumber = "MODIFY", "1"
	rec.Change.OldImage, rec.Change.NewImage = streamImage(t, before), streamImage(t, after)
	if img, _ := json.Marshal(rec.Change.NewImage["snap"]); !strings.Contains(string(img), run) || !strings.Contains(string(img), "elsewhere") ||
		!strings.Contains(string(img), "longrun-demo-task") {
		t.Fatalf("the test must store the internal fields to prove they stay in: %s", img)
	}
	bus := &recordingBus{}
	n := &notify.Notifier{Bus: bus, Changes: dynamo.ProjectionChange, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	if resp, err := n.HandleStream(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("notify: %+v %v", resp, err)
	}
	if len(bus.details) != 1 {
		t.Fatalf("published %d events, want 1", len(bus.details))
	}
	var shown []string
	shown = append(shown, string(bus.details[0]))
	page, _, err := store.List(ctx, httpapi.ListQuery{Tenant: "acme", Principal: "alice", Limit: 10})
	if err != nil || len(page) != 1 {
		t.Fatalf("list: %v %v", page, err)
	}
	unknown, _, err := store.UnknownOutcomes(ctx, 10, "")
	if err != nil || len(unknown) != 1 {
		t.Fatalf("unknown outcomes: %v %v", unknown, err)
	}
	for _, v := range []any{page, unknown} {
		b, _ := json.Marshal(v)
		shown = append(shown, string(b))
	}
	for _, s := range shown {
		for _, leak := range []string{"arn:aws", "longrun-demo-task", run, "elsewhere", "snap"} {
			if strings.Contains(s, leak) {
				t.Errorf("%q shown: %s", leak, s)
			}
		}
	}
	if !strings.Contains(shown[0], `"state":"outcome_unknown"`) || !strings.Contains(shown[0], `"previousState":"dispatched"`) {
		t.Errorf("the event is not the change: %s", shown[0])
	}
}

// Load reads the projection, not the facts, so a fact written around Append (a bug, a
// manual edit) is met by the first append that reaches its slot: that is a malformed
// history, which no retry gets past, not a conflict with another writer (which
// TestAppendIsOptimistic holds to ErrConflict).
func TestAFactTheProjectionDoesNotCountIsAMalformedHistory(t *testing.T) {
	t.Parallel()
	client, _ := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	store := dynamo.New(client, table)
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	id := "op_01JDZ3W6Q1Q9V8G5K2N7R4T6YB"
	first := operation.Fact{Version: 1, Kind: operation.KindAccepted, At: at, Source: operation.SourceAdmission,
		Admission: &operation.Admission{Type: "demo.task", Target: "t1", Tenant: "acme", Principal: "alice", Input: json.RawMessage(`{}`)}}
	if _, err := store.Admit(ctx, admitIntent(id, first)); err != nil {
		t.Fatal(err)
	}
	planted := itemAt(t, client, table, id, "FACT#00000001")
	planted["sk"] = &types.AttributeValueMemberS{Value: "FACT#00000002"}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: planted}); err != nil {
		t.Fatal(err)
	}
	op := dynamotest.Load(t, store, id)
	_, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: at, Source: operation.SourceDispatcher})
	if !errors.Is(err, operation.ErrMalformedHistory) || errors.Is(err, operation.ErrConflict) {
		t.Fatalf("err = %v, want ErrMalformedHistory", err)
	}
}
