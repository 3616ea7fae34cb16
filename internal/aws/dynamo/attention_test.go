package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// Operators see every tenant's operations in outcome_unknown, oldest first, page by page;
// one leaves the list when it is resolved (issue #12: an operator list of them).
func TestUnknownOutcomesAcrossTenants(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t)
	ctx := context.Background()
	var ids []string
	for i, tenant := range []string{"acme", "globex", "acme"} {
		in := intent(fmt.Sprintf("op_u%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("demo:%d", i))
		in.Scope.Tenant, in.First.Admission.Tenant = tenant, tenant
		in.Now, in.First.At = now.Add(time.Duration(i)*time.Second), now.Add(time.Duration(i)*time.Second)
		if _, err := store.Admit(ctx, in); err != nil {
			t.Fatal(err)
		}
		op, err := store.Load(ctx, in.Record.OperationID)
		if err != nil {
			t.Fatal(err)
		}
		at := now.Add(time.Duration(i) * time.Second)
		if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindStarted, At: at, Source: operation.SourceExecutor},
			operation.Fact{Kind: operation.KindOutcomeUnknown, At: at, Source: operation.SourceExecutor,
				Problem: operation.NewProblem("worker_error", "Outcome unknown", "lost")}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.Record.OperationID)
	}
	// A healthy operation is not listed.
	if _, err := store.Admit(ctx, intent("op_ok", "k-ok", "demo:ok")); err != nil {
		t.Fatal(err)
	}
	first, next, err := store.UnknownOutcomes(ctx, 2, "")
	if err != nil || len(first) != 2 || next == "" {
		t.Fatalf("page 1: %+v %q %v", first, next, err)
	}
	rest, next2, err := store.UnknownOutcomes(ctx, 2, next)
	if err != nil || len(rest) != 1 || next2 != "" {
		t.Fatalf("page 2: %+v %q %v", rest, next2, err)
	}
	all := append(first, rest...)
	for i, u := range all {
		if u.OperationID != ids[i] || u.State != operation.OutcomeUnknown {
			t.Fatalf("item %d: %+v, want %s oldest first", i, u, ids[i])
		}
	}
	if all[1].Tenant != "globex" {
		t.Fatalf("tenant %q", all[1].Tenant)
	}
	if n, err := store.CountUnknownOutcomes(ctx); err != nil || n != 3 {
		t.Fatalf("count %d %v", n, err)
	}
	op, err := store.Load(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindSucceeded, At: now, Source: operation.SourceOperator}); err != nil {
		t.Fatal(err)
	}
	if n, _ := store.CountUnknownOutcomes(ctx); n != 2 {
		t.Fatalf("after a resolution: %d", n)
	}
	if _, _, err := store.UnknownOutcomes(ctx, 2, "not-a-position"); err == nil {
		t.Fatal("a bad position was accepted")
	}
}
