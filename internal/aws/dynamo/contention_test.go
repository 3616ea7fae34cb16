package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/local/conflictproxy"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// conflictHold is the shortest transaction the tests allow (10 ms; up to 20 ms).
const conflictHold = 10 * time.Millisecond

// newConflictStore is a store behind the conflict proxy, with the production settings: its
// retries count attempts, so DynamoDB Local's queue (one request at a time, ~20× longer than
// AWS with 32 callers and the race detector) lengthens a call without spending them.
func newConflictStore(t *testing.T) (*dynamo.Store, *conflictproxy.Proxy) {
	client, _, proxy := dynamotest.NewConflictClient(t, conflictHold)
	return dynamo.New(client, dynamotest.NewTable(t, client)), proxy
}

// race runs n admissions at once and returns each one's record and error.
func race(store *dynamo.Store, intents []admission.Intent, concurrency int) ([]*admission.Record, []error) {
	recs := make([]*admission.Record, len(intents))
	errs := make([]error, len(intents))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, in := range intents {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			recs[i], errs[i] = store.Admit(context.Background(), in)
		}()
	}
	wg.Wait()
	return recs, errs
}

// Under real transaction conflicts, 64 identical first requests converge on one operation:
// exactly one creates it, every other learns its record. None gets 503.
func TestIdenticalRacersConvergeUnderConflicts(t *testing.T) {
	t.Parallel()
	store, proxy := newConflictStore(t)
	for trial := range 5 {
		key := fmt.Sprintf("k%d", trial)
		intents := make([]admission.Intent, 64)
		for i := range intents {
			intents[i] = intent(fmt.Sprintf("op_%d_%d", trial, i), key, fmt.Sprintf("demo:same%d", trial))
		}
		recs, errs := race(store, intents, 64)
		created, winner := 0, ""
		for i, rec := range recs {
			if errs[i] != nil {
				t.Fatalf("trial %d racer %d: %v", trial, i, errs[i])
			}
			if rec == nil || rec.OperationID == intents[i].Record.OperationID { // (own: a retried commit)
				created++
				winner = intents[i].Record.OperationID
			}
		}
		if created != 1 {
			t.Fatalf("trial %d: %d racers created an operation", trial, created)
		}
		for i, rec := range recs {
			if rec != nil && rec.OperationID != winner {
				t.Fatalf("trial %d racer %d replayed %s, the winner is %s", trial, i, rec.OperationID, winner)
			}
		}
	}
	if proxy.Stats().Cancelled == 0 {
		t.Fatal("no transaction conflicted: the test proved nothing")
	}
}

// Different bodies on one key: one creates, every other sees the winner's fingerprint (the
// service answers those 409).
func TestDifferentBodiesOneKeyUnderConflicts(t *testing.T) {
	t.Parallel()
	store, _ := newConflictStore(t)
	intents := make([]admission.Intent, 16)
	for i := range intents {
		intents[i] = intent(fmt.Sprintf("op_%d", i), "k", fmt.Sprintf("demo:%d", i))
	}
	recs, errs := race(store, intents, 16)
	created, fingerprints := 0, map[string]bool{}
	for i, rec := range recs {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if rec == nil || rec.OperationID == intents[i].Record.OperationID {
			created++
			continue
		}
		fingerprints[rec.Fingerprint] = true
	}
	if created != 1 || len(fingerprints) != 1 {
		t.Fatalf("created %d, records seen %v", created, fingerprints)
	}
}

// One tenant's admissions of distinct keys and targets do not serialize on one quota item:
// 400 at concurrency 32 under conflicts all succeed.
func TestOneTenantDistinctAdmissionsUnderConflicts(t *testing.T) {
	t.Parallel()
	store, proxy := newConflictStore(t)
	intents := make([]admission.Intent, 400)
	for i := range intents {
		intents[i] = intent(fmt.Sprintf("op_%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("demo:%d", i))
		intents[i].QuotaLimit = admission.DefaultQuota
	}
	_, errs := race(store, intents, 32)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("admission %d: %v", i, err)
		}
	}
	t.Logf("proxy: %+v", proxy.Stats())
}

// The quota holds exactly across its shards, under conflicts: with a limit of 50, 50 of 120
// distinct admissions are admitted and 70 are over quota; freeing one slot admits one more.
func TestQuotaHoldsExactlyUnderConflicts(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{50, 40, 7} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) { quotaHoldsExactly(t, limit) })
	}
}

func quotaHoldsExactly(t *testing.T, limit int) {
	store, _ := newConflictStore(t)
	intents := make([]admission.Intent, 120)
	for i := range intents {
		intents[i] = intent(fmt.Sprintf("op_%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("demo:%d", i))
		intents[i].QuotaLimit = limit
		intents[i].First.Admission.QuotaReserved = true
	}
	recs, errs := race(store, intents, 32)
	admitted, over := []string{}, 0
	for i, err := range errs {
		switch {
		case err == nil && (recs[i] == nil || recs[i].OperationID == intents[i].Record.OperationID):
			// (its own record: an SDK retry of a commit whose answer was lost)
			admitted = append(admitted, intents[i].Record.OperationID)
		case problem.CodeOf(err) == problem.QuotaExceeded:
			over++
		default:
			t.Fatalf("admission %d: %v %+v", i, err, recs[i])
		}
	}
	if len(admitted) != limit || over != 120-limit {
		t.Fatalf("admitted %d, over quota %d; want %d and %d", len(admitted), over, limit, 120-limit)
	}
	more := intent("op_more", "k-more", "demo:more")
	more.QuotaLimit = limit
	if _, err := store.Admit(context.Background(), more); problem.CodeOf(err) != problem.QuotaExceeded {
		t.Fatalf("a full quota admitted: %v", err)
	}
	// End one operation: its terminal fact releases its slot in the same transaction.
	ctx := context.Background()
	op, err := store.Load(ctx, admitted[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindCanceled, At: now, Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
	}
	more.Record.OperationID, more.Key = "op_more2", "k-more2"
	if _, err := store.Admit(ctx, more); err != nil {
		t.Fatalf("a freed slot was not reusable: %v", err)
	}
}

// Racing appends on one operation under conflicts: exactly one of eight writers that read
// the same version wins; the others learn they lost (ErrConflict), never 503.
func TestAppendRaceUnderConflicts(t *testing.T) {
	t.Parallel()
	store, _ := newConflictStore(t)
	ctx := context.Background()
	if _, err := store.Admit(ctx, intent("op_1", "k1", "demo:a")); err != nil {
		t.Fatal(err)
	}
	op, err := store.Load(ctx, "op_1")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = store.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, operation.ErrConflict):
		default:
			t.Fatalf("append: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won", wins)
	}
}

// One caller cannot take its whole tenant's quota (issue #12): with a caller quota of 3,
// alice's fourth active operation is over quota while bob, of the same tenant, still admits;
// alice's first ending frees her place.
func TestCallerQuotaBesideTheTenantQuota(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t)
	ctx := context.Background()
	as := func(principal, id string) admission.Intent {
		in := intent(id, "k-"+id, "demo:"+id)
		in.Scope.Principal, in.First.Admission.Principal = principal, principal
		in.QuotaLimit, in.PrincipalQuotaLimit = 100, 3
		in.First.Admission.QuotaReserved, in.First.Admission.PrincipalQuotaReserved = true, true
		return in
	}
	for i := range 3 {
		if _, err := store.Admit(ctx, as("alice", fmt.Sprintf("op_a%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	_, err := store.Admit(ctx, as("alice", "op_a3"))
	if pe := problem.As(err); pe.Code != problem.QuotaExceeded || pe.RetryAfter <= 0 {
		t.Fatalf("alice's fourth: %v", err)
	}
	if _, err := store.Admit(ctx, as("bob", "op_b0")); err != nil {
		t.Fatalf("bob, same tenant: %v", err)
	}
	op, err := store.Load(ctx, "op_a0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindCanceled, At: now, Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Admit(ctx, as("alice", "op_a4")); err != nil {
		t.Fatalf("alice after one of hers ended: %v", err)
	}
}

// A type's quota weight takes that many slots of each quota, on one shard, and its terminal
// fact frees as many: with 2 shards of 5 slots, three weight-3 operations fit (one per
// shard, then none: 3+3 > 5), two weight-1 ones fill the gaps, and ending a weight-3 one
// makes room for another. Racing, behind the conflict proxy.
func TestQuotaWeightTakesAndFreesThatManySlots(t *testing.T) {
	t.Parallel()
	store, _ := newConflictStore(t)
	store.QuotaShards = 2
	ctx := context.Background()
	weighted := func(i, weight int) admission.Intent {
		in := intent(fmt.Sprintf("op_w%d", i), fmt.Sprintf("kw%d", i), fmt.Sprintf("demo:w%d", i))
		in.QuotaLimit = 10
		in.First.Admission.QuotaReserved = true
		in.First.Admission.QuotaWeight = weight
		return in
	}
	intents := make([]admission.Intent, 8)
	for i := range intents {
		intents[i] = weighted(i, 3)
	}
	_, errs := race(store, intents, 8)
	var admitted []string
	for i, err := range errs {
		switch {
		case err == nil:
			admitted = append(admitted, intents[i].Record.OperationID)
		case problem.CodeOf(err) != problem.QuotaExceeded:
			t.Fatalf("admission %d: %v", i, err)
		}
	}
	if len(admitted) != 2 {
		t.Fatalf("%d weight-3 operations admitted into 2 shards of 5, want 2", len(admitted))
	}
	for i := 10; i < 14; i++ { // each shard has room for 2 more slots: 4 weight-1 operations
		if _, err := store.Admit(ctx, weighted(i, 1)); err != nil {
			t.Fatalf("weight-1 admission %d: %v", i, err)
		}
	}
	if _, err := store.Admit(ctx, weighted(20, 1)); problem.CodeOf(err) != problem.QuotaExceeded {
		t.Fatalf("a full quota admitted: %v", err)
	}
	if _, err := store.Admit(ctx, weighted(21, 6)); problem.CodeOf(err) != problem.QuotaExceeded {
		t.Fatalf("a weight above every shard's share was admitted: %v", err)
	}
	op, err := store.Load(ctx, admitted[0])
	if err != nil || op.QuotaWeight != 3 {
		t.Fatalf("the accepted fact keeps the weight: %v %+v", err, op.Admission)
	}
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindCanceled, At: now, Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Admit(ctx, weighted(22, 3)); err != nil {
		t.Fatalf("the 3 freed slots were not reusable: %v", err)
	}
	if _, err := store.Admit(ctx, weighted(23, 1)); problem.CodeOf(err) != problem.QuotaExceeded {
		t.Fatalf("more than the freed slots were reusable: %v", err)
	}
}
