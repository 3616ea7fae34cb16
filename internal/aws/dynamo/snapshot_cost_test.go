package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/cost"
	"github.com/longrun-dev/longrun/internal/local/ddbmeter"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// metered is a store whose requests pass the cost model's meter (internal/local/ddbmeter) on
// their way to DynamoDB Local, the meter, and a client that bypasses it to look at items.
type metered struct {
	store  *dynamo.Store
	meter  *ddbmeter.Meter
	direct *dynamodb.Client
	table  string
	shape  *ddbmeter.Table
}

func newMetered(t *testing.T) *metered {
	t.Helper()
	m, err := ddbmeter.New(os.Getenv(dynamotest.EndpointEnv), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	client, _ := dynamotest.Client(srv.URL)
	direct, _ := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	return &metered{store: dynamo.New(client, table), meter: m, direct: direct, table: table, shape: shape(table)}
}

// shape is the production table (dynamo.TableSpec) as the meter's rules see it.
func shape(table string) *ddbmeter.Table {
	spec := dynamo.TableSpec(table)
	keys := func(ks []types.KeySchemaElement) []string {
		var out []string
		for _, k := range ks {
			out = append(out, aws.ToString(k.AttributeName))
		}
		return out
	}
	t := &ddbmeter.Table{Name: table, Keys: keys(spec.KeySchema)}
	for _, g := range spec.GlobalSecondaryIndexes {
		t.Indexes = append(t.Indexes, ddbmeter.Index{Name: aws.ToString(g.IndexName), Keys: keys(g.KeySchema),
			Projection: string(g.Projection.ProjectionType), NonKey: g.Projection.NonKeyAttributes})
	}
	return t
}

// usage runs call and returns what the meter says it consumed.
func (m *metered) usage(t *testing.T, call func() error) ddbmeter.Totals {
	t.Helper()
	m.store.Drain()
	m.meter.Reset()
	if err := call(); err != nil {
		t.Fatal(err)
	}
	m.store.Drain() // an admission's read beside its transaction finishes in the background
	tot := m.meter.Totals()
	if tot.Unpriced != 0 {
		t.Fatalf("the meter could not price %d calls", tot.Unpriced)
	}
	return tot
}

func (m *metered) item(t *testing.T, id, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := m.direct.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(m.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "OP#" + id}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// withoutSnap is a projection item as the store wrote it before snapshots.
func withoutSnap(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	out := maps.Clone(item)
	delete(out, "snap")
	return out
}

// typical admits a typical operation: a small input, a correlation id and a traceparent,
// both quotas, a deadline, as internal/core/admission writes them.
func typical(t *testing.T, m *metered, id string, at time.Time) ddbmeter.Totals {
	t.Helper()
	corr := "4bf92f3577b34da6a3ce929d0e0e4736"
	first := operation.Fact{Version: 1, Kind: operation.KindAccepted, At: at, Source: operation.SourceAdmission,
		Admission: &operation.Admission{Type: "demo.task", TypeVersion: 1, Target: "orders-2026-11", Tenant: "acme", Principal: "alice",
			Input: json.RawMessage(`{"target":"orders-2026-11","steps":3}`), QuotaReserved: true, QuotaShard: 3, PrincipalQuotaReserved: true,
			PrincipalQuotaShard: 11, Deadline: at.Add(time.Hour), CorrelationID: corr, Traceparent: "00-" + corr + "-00f067aa0ba902b7-01"}}
	in := admitIntent(id, first)
	in.QuotaLimit, in.PrincipalQuotaLimit = 1000, 500
	return m.usage(t, func() error { _, err := m.store.Admit(context.Background(), in); return err })
}

// A Load reads the same items, and the same read units, for an operation of 3 facts as for
// one of 300: the projection (and the accepted fact when the admission does not fit in it),
// never the history, which the meter sees grow when Facts reads it.
func TestLoadReadsTheSameWhateverTheHistory(t *testing.T) {
	t.Parallel()
	m := newMetered(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	build := func(id string, input json.RawMessage, facts int) {
		t.Helper()
		first := operation.Fact{Version: 1, Kind: operation.KindAccepted, At: at, Source: operation.SourceAdmission,
			Admission: &operation.Admission{Type: "demo.task", TypeVersion: 1, Target: id, Tenant: "acme", Principal: "alice", Input: input}}
		if _, err := m.store.Admit(ctx, admitIntent(id, first)); err != nil {
			t.Fatal(err)
		}
		op := dynamotest.Load(t, m.store, id)
		batch := []operation.Fact{
			{Kind: operation.KindDispatched, At: at, Source: operation.SourceDispatcher, Execution: "arn:aws:states:us-east-1:123456789012:execution:longrun-demo-task:" + id},
			{Kind: operation.KindStarted, At: at, Source: operation.SourceExecutor},
		}
		for n := 3; n < facts; n++ {
			batch = append(batch, operation.Fact{Kind: operation.KindProgress, At: at.Add(time.Duration(n) * time.Second), Source: operation.SourceExecutor,
				Progress: &operation.Progress{CompletedSteps: n, TotalSteps: facts, Message: "copying the rows of one more partition"}})
		}
		for len(batch) > 0 {
			n := min(len(batch), 99) // and the projection: a transaction's 100 items
			var err error
			if op, err = m.store.Append(ctx, op, batch[:n]...); err != nil {
				t.Fatal(err)
			}
			batch = batch[n:]
		}
		if op.Version != facts {
			t.Fatalf("%s has %d facts, want %d", id, op.Version, facts)
		}
	}
	for _, tc := range []struct {
		name  string
		input json.RawMessage
		items int // a GetItem each
	}{
		{"small input", json.RawMessage(`{"target":"t1"}`), 1},
		{"input too large for the projection", json.RawMessage(`{"blob":"` + strings.Repeat("x", 3000) + `"}`), 2},
	} {
		name := strings.ReplaceAll(tc.name, " ", "_")
		var loads, histories []ddbmeter.Totals
		for _, n := range []int{3, 30, 300} {
			id := fmt.Sprintf("op_%d_%s", n, name)
			build(id, tc.input, n)
			loads = append(loads, m.usage(t, func() error { _, err := m.store.Load(ctx, id); return err }))
			histories = append(histories, m.usage(t, func() error { _, err := m.store.Facts(ctx, id); return err }))
			t.Logf("%s, %d facts: Load %v %.1f RRU; the Query of every fact (Load before snapshots) %.1f RRU", tc.name, n,
				loads[len(loads)-1].Calls, loads[len(loads)-1].Usage.RRU, histories[len(histories)-1].Usage.RRU)
		}
		for i, l := range loads {
			if l.Calls["GetItem"] != tc.items || len(l.Calls) != 1 {
				t.Errorf("%s: Load %d made %v, want %d GetItem", tc.name, i, l.Calls, tc.items)
			}
			if l.Usage != loads[0].Usage {
				t.Errorf("%s: Load %d consumed %+v, Load 0 %+v: want the same", tc.name, i, l.Usage, loads[0].Usage)
			}
		}
		if histories[2].Usage.RRU <= histories[0].Usage.RRU {
			t.Errorf("%s: the history of 300 facts read %.1f RRU, of 3 facts %.1f: the meter does not see the history", tc.name,
				histories[2].Usage.RRU, histories[0].Usage.RRU)
		}
	}
}

// ledger adds up, per call, what the store consumes now and what it consumed before
// snapshots: the same requests, with the projection item priced without its snapshot and a
// Load priced as the Query of every fact it used to be.
type ledger struct {
	m              *metered
	before, after  ddbmeter.Usage
	prices         cost.Prices
	loads, appends int
}

// load prices one Load of id and the Query that the Load was before.
func (l *ledger) load(t *testing.T, id string) (before, after ddbmeter.Usage) {
	t.Helper()
	ctx := context.Background()
	after = l.m.usage(t, func() error { _, err := l.m.store.Load(ctx, id); return err }).Usage
	before = l.m.usage(t, func() error { _, err := l.m.store.Facts(ctx, id); return err }).Usage
	l.before, l.after, l.loads = l.before.Plus(before), l.after.Plus(after), l.loads+1
	return before, after
}

// write prices a write that changes id's projection: as the meter measured it, and with the
// projection's share priced on items without the snapshot instead.
func (l *ledger) write(t *testing.T, id string, call func() error) (before, after ddbmeter.Usage, meta map[string]types.AttributeValue) {
	t.Helper()
	old := l.m.item(t, id, "META")
	after = l.m.usage(t, call).Usage
	meta = l.m.item(t, id, "META")
	w := func(a, b map[string]types.AttributeValue) ddbmeter.Usage {
		return l.m.shape.WriteUsage(ddbmeter.Write{Before: meterItem(a), After: meterItem(b), Transactional: true})
	}
	now, then := w(old, meta), w(withoutSnap(old), withoutSnap(meta))
	before = ddbmeter.Usage{WRU: after.WRU - now.WRU + then.WRU, IndexWRU: after.IndexWRU - now.IndexWRU + then.IndexWRU, RRU: after.RRU}
	l.before, l.after, l.appends = l.before.Plus(before), l.after.Plus(after), l.appends+1
	return before, after, meta
}

func (l *ledger) dollars(u ddbmeter.Usage) float64 {
	p := l.prices.Prices
	return (u.WRU+u.IndexWRU)*p.WriteUnit.USD + u.RRU*p.ReadUnit.USD
}

// The figures of docs/table-design.md ("What a read costs"), and the rule they must keep: a
// typical operation (3 steps, a small input and result) costs no more with the snapshot
// than without, reads and the bigger projection's writes together. Its lifecycle is what
// the services do: the dispatcher's read and append; the recorder's Run, which reads before
// each step and after the last (steps that end within a second record nothing, their lease
// covering the next), taking the lease with the started fact and ending with the outcome;
// and two status reads by the client. A slower run records a progress fact per step.
func TestSnapshotCostOfATypicalOperation(t *testing.T) {
	t.Parallel()
	prices, err := cost.ListPrices()
	if err != nil {
		t.Fatal(err)
	}
	for _, slow := range []bool{false, true} {
		m := newMetered(t)
		l := &ledger{m: m, prices: prices}
		ctx := context.Background()
		id := "op_01JDZ3W6Q1Q9V8G5K2N7R4T6YB"
		at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
		admitted := typical(t, m, id, at)
		meta := m.item(t, id, "META")
		admitBefore := admitted.Usage
		{ // the projection's share of the admission, without the snapshot
			w := func(b map[string]types.AttributeValue) ddbmeter.Usage {
				return m.shape.WriteUsage(ddbmeter.Write{After: meterItem(b), Transactional: true})
			}
			now, then := w(meta), w(withoutSnap(meta))
			admitBefore.WRU += then.WRU - now.WRU
			admitBefore.IndexWRU += then.IndexWRU - now.IndexWRU
		}
		l.before, l.after = admitBefore, admitted.Usage
		t.Logf("slow %v: admission %+v, before %+v; projection %d B, before %d B", slow, admitted.Usage, admitBefore,
			ddbmeter.Size(meterItem(meta)), ddbmeter.Size(meterItem(withoutSnap(meta))))

		lease := &operation.Lease{Run: "req_01JDZ3W6Q1Q9V8G5K2N7R4T6YC", Execution: id, Until: at.Add(15 * time.Minute)}
		appendAt := func(facts ...operation.Fact) {
			t.Helper()
			loaded := dynamotest.Load(t, m.store, id)
			before, after, meta := l.write(t, id, func() error { _, err := m.store.Append(ctx, loaded, facts...); return err })
			t.Logf("slow %v: append %s: %+v, before %+v; projection %d B (%d WU), before %d B (%d WU)", slow, facts[0].Kind, after, before,
				ddbmeter.Size(meterItem(meta)), ddbmeter.WriteUnits(ddbmeter.Size(meterItem(meta))),
				ddbmeter.Size(meterItem(withoutSnap(meta))), ddbmeter.WriteUnits(ddbmeter.Size(meterItem(withoutSnap(meta)))))
		}
		step := func(s int) time.Time { return at.Add(time.Duration(s) * time.Second) }
		load := func(what string) {
			t.Helper()
			before, after := l.load(t, id)
			t.Logf("slow %v: %s: Load %.1f RRU, before %.1f RRU", slow, what, after.RRU, before.RRU)
		}

		load("dispatcher")
		appendAt(operation.Fact{Kind: operation.KindDispatched, At: step(1), Source: operation.SourceDispatcher,
			Execution: "arn:aws:states:us-east-1:123456789012:execution:longrun-demo-task:" + id})
		load("gate 1")
		appendAt(operation.Fact{Kind: operation.KindStarted, At: step(2), Source: operation.SourceExecutor, Lease: lease})
		for s := 1; s <= 2; s++ {
			load(fmt.Sprintf("hand-back %d and gate %d", s, s+1))
			if slow {
				appendAt(operation.Fact{Kind: operation.KindProgress, At: step(2 + s), Source: operation.SourceExecutor, Lease: lease,
					Progress: &operation.Progress{CompletedSteps: s, TotalSteps: 3}})
			}
		}
		load("client's status read")
		load("hand-back 3")
		appendAt(operation.Fact{Kind: operation.KindSucceeded, At: step(6), Source: operation.SourceExecutor,
			Progress: &operation.Progress{CompletedSteps: 3, TotalSteps: 3}, Result: json.RawMessage(`{"processed":3,"target":"orders-2026-11"}`)})
		load("client's status read")

		b, a := l.dollars(l.before), l.dollars(l.after)
		t.Logf("slow %v: one operation, %d Loads and %d appends besides its admission: before %+v $%.2f per million, after %+v $%.2f per million",
			slow, l.loads, l.appends, l.before, b*1e6, l.after, a*1e6)
		if a > b {
			t.Errorf("slow %v: a typical operation costs $%.4f per million with the snapshot, $%.4f without", slow, a*1e6, b*1e6)
		}
	}
}
