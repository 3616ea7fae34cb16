package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

var now = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func intent(id, key, target string) admission.Intent {
	return admission.Intent{
		Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
		Key:   key,
		Now:   now,
		Record: admission.Record{Fingerprint: "fp-" + target, OperationID: id, Status: 202,
			Location: "/v1/operations/" + id, Body: []byte(`{"operationId":"` + id + `"}`), ExpiresAt: now.Add(24 * time.Hour)},
		First: operation.Fact{Version: 1, Kind: operation.KindAccepted, At: now, Source: operation.SourceAdmission,
			Admission: &operation.Admission{Type: "demo.task", TypeVersion: 1, Target: target, Tenant: "acme", Principal: "alice", Input: json.RawMessage(`{}`)}},
		QuotaLimit: 10,
	}
}

func newStore(t *testing.T) (*dynamo.Store, *dynamodb.Client, string) {
	client, _ := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	return dynamo.New(client, table), client, table
}

func count(t *testing.T, client *dynamodb.Client, table string) int {
	t.Helper()
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Select: "COUNT", ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

func TestAdmitWritesEverythingOnce(t *testing.T) {
	t.Parallel()
	store, client, table := newStore(t)
	ctx := context.Background()
	existing, err := store.Admit(ctx, intent("op_1", "k1", "demo:a"))
	// (Its own record, when the SDK retried a commit whose answer was slow to come: the
	// retry's condition then finds what the first attempt wrote, as admission expects.)
	if err != nil || (existing != nil && existing.OperationID != "op_1") {
		t.Fatalf("admit: %v %v", existing, err)
	}
	// idempotency record, fact, projection, lock, quota counter
	if n := count(t, client, table); n != 5 {
		t.Fatalf("items = %d, want 5", n)
	}
	op, err := store.Load(ctx, "op_1")
	if err != nil || op.State != operation.Accepted || op.Version != 1 || op.Target != "demo:a" {
		t.Fatalf("load: %+v %v", op, err)
	}
}

// A replay of a still-active operation fails two conditions at once (the key and the lock
// it holds itself): the key must win, or every replay would look like target_busy.
func TestReplayOfActiveOperationReturnsRecordNotTargetBusy(t *testing.T) {
	t.Parallel()
	store, client, table := newStore(t)
	ctx := context.Background()
	if _, err := store.Admit(ctx, intent("op_1", "k1", "demo:a")); err != nil {
		t.Fatal(err)
	}
	existing, err := store.Admit(ctx, intent("op_2", "k1", "demo:a"))
	if err != nil || existing == nil || existing.OperationID != "op_1" || string(existing.Body) != `{"operationId":"op_1"}` {
		t.Fatalf("replay: %+v %v", existing, err)
	}
	if !existing.ExpiresAt.Equal(now.Add(24 * time.Hour)) {
		t.Fatalf("expires %v", existing.ExpiresAt)
	}
	if n := count(t, client, table); n != 5 {
		t.Fatalf("items = %d after replay, want 5", n)
	}
}

func TestTargetBusyAndQuota(t *testing.T) {
	t.Parallel()
	store, client, table := newStore(t)
	ctx := context.Background()
	first := intent("op_1", "k1", "demo:a")
	first.QuotaLimit = 1
	if _, err := store.Admit(ctx, first); err != nil {
		t.Fatal(err)
	}
	_, err := store.Admit(ctx, intent("op_2", "k2", "demo:a"))
	if pe := problem.As(err); pe.Code != problem.TargetBusy || pe.OperationID != "op_1" {
		t.Fatalf("err = %v", err)
	}
	in := intent("op_3", "k3", "demo:b")
	in.QuotaLimit = 1
	_, err = store.Admit(ctx, in)
	if pe := problem.As(err); pe.Code != problem.QuotaExceeded || pe.RetryAfter <= 0 {
		t.Fatalf("err = %v", err)
	}
	if n := count(t, client, table); n != 5 {
		t.Fatalf("items = %d, want 5: a rejected admission must write nothing", n)
	}
}

func TestAppendIsOptimistic(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t)
	ctx := context.Background()
	if _, err := store.Admit(ctx, intent("op_1", "k1", "demo:a")); err != nil {
		t.Fatal(err)
	}
	op, err := store.Load(ctx, "op_1")
	if err != nil {
		t.Fatal(err)
	}
	// Eight writers observe version 1 and race; exactly one may append.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, operation.ErrConflict):
				conflicts++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 7 {
		t.Fatalf("wins %d conflicts %d", wins, conflicts)
	}
	got, err := store.Load(ctx, "op_1")
	if err != nil || got.State != operation.Dispatched || got.Version != 2 {
		t.Fatalf("after race: %+v %v", got, err)
	}
	// A fact that cannot follow is refused before any write.
	if _, err := store.Append(ctx, got, operation.Fact{Kind: operation.KindAccepted, At: now}); !errors.Is(err, operation.ErrIllegalTransition) {
		t.Fatalf("illegal append: %v", err)
	}
	// A stale writer (observed version 1) cannot overwrite the newer decision.
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindCanceled, At: now}); !errors.Is(err, operation.ErrConflict) {
		t.Fatalf("stale append: %v", err)
	}
	final, _ := store.Load(ctx, "op_1")
	if final.Version != 2 || final.State != operation.Dispatched {
		t.Fatalf("final %+v", final)
	}
}

func TestLoadMissingIsNotFound(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t)
	if _, err := store.Load(context.Background(), "op_nope"); problem.CodeOf(err) != problem.NotFound {
		t.Fatalf("err = %v", err)
	}
}

func meta(t *testing.T, client *dynamodb.Client, table, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "OP#" + id}, "sk": &types.AttributeValueMemberS{Value: "META"}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// The projection is the same fold as a read, written in the transaction of each fact; it
// carries a due time exactly while there is something to reconcile.
func TestProjectionFollowsTheFold(t *testing.T) {
	t.Parallel()
	store, client, table := newStore(t)
	ctx := context.Background()
	if _, err := store.Admit(ctx, intent("op_1", "k1", "demo:a")); err != nil {
		t.Fatal(err)
	}
	m := meta(t, client, table, "op_1")
	due, ok := m["due_at"].(*types.AttributeValueMemberS)
	if !ok || due.Value != operation.FormatTime(now.Add(operation.DefaultLeases().Dispatch)) || m["due_shard"] == nil {
		t.Fatalf("accepted projection: %v", m)
	}
	op, _ := store.Load(ctx, "op_1")
	op, err := store.Append(ctx, op,
		operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher},
		operation.Fact{Kind: operation.KindSucceeded, At: now.Add(time.Second), Source: operation.SourceExecutor, Result: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	m = meta(t, client, table, "op_1")
	if _, ok := m["due_at"]; ok || m["due_shard"] != nil {
		t.Fatalf("a terminal operation is still due: %v", m)
	}
	var rep operation.Representation
	if err := json.Unmarshal([]byte(m["rep"].(*types.AttributeValueMemberS).Value), &rep); err != nil {
		t.Fatal(err)
	}
	want := op.Represent("")
	got, _ := json.Marshal(rep)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) || m["state"].(*types.AttributeValueMemberS).Value != "succeeded" {
		t.Fatalf("projection %s\nfold       %s", got, exp)
	}
}

// A fact item that cannot be decoded is a malformed history (poison for the stream
// consumers), not a transient failure to retry until the record expires: for Facts, and for
// Load when it folds the facts (a projection without a snapshot) or reads the accepted fact.
func TestUnreadableFactIsAMalformedHistory(t *testing.T) {
	t.Parallel()
	store, client, table := newStore(t)
	ctx := context.Background()
	if _, err := store.Admit(ctx, intent("op_1", "k1", "demo:a")); err != nil {
		t.Fatal(err)
	}
	poison := func(id, version string) {
		t.Helper()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "OP#" + id}, "sk": &types.AttributeValueMemberS{Value: "FACT#" + version},
			"kind": &types.AttributeValueMemberS{Value: "started"}, "fact": &types.AttributeValueMemberS{Value: "{not json"},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	poison("op_1", "00000002")
	if _, err := store.Facts(ctx, "op_1"); !errors.Is(err, operation.ErrMalformedHistory) {
		t.Fatalf("facts: err = %v, want ErrMalformedHistory", err)
	}
	// The snapshot's Load does not read fact 2 (nor would it exist: the projection is at
	// version 1); without the snapshot, Load folds every fact.
	m := meta(t, client, table, "op_1")
	delete(m, "snap")
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: m}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load(ctx, "op_1"); !errors.Is(err, operation.ErrMalformedHistory) {
		t.Fatalf("load without a snapshot: err = %v, want ErrMalformedHistory", err)
	}
	// An input too large for the projection is read from the accepted fact.
	large := intent("op_2", "k2", "demo:b")
	large.First.Admission.Input = json.RawMessage(`"` + strings.Repeat("x", 3000) + `"`)
	if _, err := store.Admit(ctx, large); err != nil {
		t.Fatal(err)
	}
	if snap := meta(t, client, table, "op_2")["snap"].(*types.AttributeValueMemberM).Value; snap["a"] != nil {
		t.Fatalf("the projection carries a 3 KB input: %v", snap)
	}
	poison("op_2", "00000001")
	if _, err := store.Load(ctx, "op_2"); !errors.Is(err, operation.ErrMalformedHistory) {
		t.Fatalf("load of an unreadable accepted fact: err = %v, want ErrMalformedHistory", err)
	}
}
