// Package storetest is the contract of longrun's stores: the assertions that the DynamoDB
// store (internal/aws/dynamo, on DynamoDB Local) and the in-memory store
// (internal/testkit/memstore) must both pass. Tests of decisions run on the in-memory store
// without Java; this contract is what lets them trust it, so that it cannot drift from the
// real one unnoticed: a condition the real store enforces that the fake does not (or the
// other way round) fails one of the two runs.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Store is what a store under contract implements: admission's port, the facts port, the
// whole history, and the recorder's claims.
type Store interface {
	admission.Store
	facts.Store
	Facts(ctx context.Context, id string) ([]operation.Fact, error)
	Claim(ctx context.Context, id, run string, first, prev, taken int, sent time.Time) (bool, time.Time, error)
	Callback(ctx context.Context, id string, version int) (string, error)
}

// Run runs the contract on stores that newStore makes, one empty store per case.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	for _, c := range []struct {
		name string
		test func(t *testing.T, s Store)
	}{
		{"admission writes the accepted fact", admitted},
		{"a retry with the same key replays", replayed},
		{"an active target is busy until its operation settles", targetBusy},
		{"a full quota refuses until an operation settles", quota},
		{"an unknown operation is not found", notFound},
		{"an append on the latest version is read back", appended},
		{"an append on a stale version conflicts and writes nothing", stale},
		{"an illegal fact is refused before anything is written", illegal},
		{"a parked Run's callback is read from its fact", callback},
		{"a step's end is claimed once and in order", claims},
		{"Update decides again after losing a race", retried},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore(t)) })
	}
}

// clock is a fixed instant on the millisecond, as every store keeps its times.
func clock() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func service(s Store, now time.Time) *admission.Service {
	gen := &ids.Generator{Now: func() time.Time { return now }, Entropy: rand.Reader}
	return &admission.Service{Store: s, Registry: optype.Builtin(), Now: func() time.Time { return now }, NewID: gen.Operation}
}

func admit(t *testing.T, svc *admission.Service, key, target string) (admission.Outcome, error) {
	t.Helper()
	return svc.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
		Key: key, MediaType: "application/json", CorrelationID: "corr-" + key,
		Body: []byte(fmt.Sprintf(`{"type":"demo.task","input":{"target":%q, "steps": 2}}`, target))})
}

func mustAdmit(t *testing.T, svc *admission.Service, key, target string) string {
	t.Helper()
	out, err := admit(t, svc, key, target)
	if err != nil {
		t.Fatalf("admit %s: %v", key, err)
	}
	return out.Record.OperationID
}

func load(t *testing.T, s Store, id string) operation.Operation {
	t.Helper()
	op, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	return op
}

func fact(kind operation.Kind, at time.Time) operation.Fact {
	return operation.Fact{Kind: kind, At: at, Source: operation.SourceExecutor}
}

func admitted(t *testing.T, s Store) {
	now := clock()
	id := mustAdmit(t, service(s, now), "k1", "build-1")
	op := load(t, s, id)
	if op.ID != id || op.State != operation.Accepted || op.Version != 1 || !op.CreatedAt.Equal(now) || !op.UpdatedAt.Equal(now) {
		t.Fatalf("after admission: %s %s v%d created %v updated %v; want accepted v1 at %v", op.ID, op.State, op.Version, op.CreatedAt, op.UpdatedAt, now)
	}
	if op.Type != "demo.task" || op.Target != "demo:build-1" || op.Tenant != "acme" || op.Principal != "alice" ||
		op.CorrelationID != "corr-k1" || string(op.Input) != `{"steps":2,"target":"build-1"}` {
		t.Fatalf("admission read back as %+v (input %s)", op.Admission, op.Input)
	}
	history, err := s.Facts(context.Background(), id)
	if err != nil || len(history) != 1 || history[0].Kind != operation.KindAccepted || history[0].Version != 1 {
		t.Fatalf("history after admission: %+v, %v", history, err)
	}
}

func replayed(t *testing.T, s Store) {
	svc := service(s, clock())
	id := mustAdmit(t, svc, "k1", "build-1")
	again, err := admit(t, svc, "k1", "build-1")
	if err != nil || !again.Replayed || again.Record.OperationID != id {
		t.Fatalf("the same request again: %+v, %v; want a replay of %s", again, err, id)
	}
	if _, err := admit(t, svc, "k1", "build-2"); problem.CodeOf(err) != problem.IdempotencyKeyReused {
		t.Fatalf("another body with the key: %v; want idempotency_key_reused", err)
	}
	if op := load(t, s, id); op.Version != 1 {
		t.Fatalf("a replay wrote: version %d", op.Version)
	}
}

func targetBusy(t *testing.T, s Store) {
	now := clock()
	svc := service(s, now)
	id := mustAdmit(t, svc, "k1", "build-1")
	_, err := admit(t, svc, "k2", "build-1")
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.TargetBusy || pe.OperationID != id {
		t.Fatalf("a second operation on the target: %v; want target_busy naming %s", err, id)
	}
	op := load(t, s, id)
	if _, err := s.Append(context.Background(), op, operation.Fact{Kind: operation.KindCanceled, At: now, Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
	}
	if _, err := admit(t, svc, "k3", "build-1"); err != nil {
		t.Fatalf("the target once its operation settled: %v", err)
	}
}

func quota(t *testing.T, s Store) {
	now := clock()
	svc := service(s, now)
	svc.Quota = 2
	first := mustAdmit(t, svc, "k1", "build-1")
	mustAdmit(t, svc, "k2", "build-2")
	if _, err := admit(t, svc, "k3", "build-3"); problem.CodeOf(err) != problem.QuotaExceeded {
		t.Fatalf("a third active operation with a quota of 2: %v; want quota_exceeded", err)
	}
	op := load(t, s, first)
	if !op.QuotaReserved {
		t.Fatal("the accepted fact does not record the quota slot it took")
	}
	if _, err := s.Append(context.Background(), op, operation.Fact{Kind: operation.KindCanceled, At: now, Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
	}
	if _, err := admit(t, svc, "k4", "build-4"); err != nil {
		t.Fatalf("once one settled, its slot is free: %v", err)
	}
}

func notFound(t *testing.T, s Store) {
	_, err := s.Load(context.Background(), "op_missing")
	if problem.CodeOf(err) != problem.NotFound {
		t.Fatalf("load of an unknown id: %v; want not_found", err)
	}
	if _, err := s.Facts(context.Background(), "op_missing"); problem.CodeOf(err) != problem.NotFound {
		t.Fatalf("facts of an unknown id: %v; want not_found", err)
	}
}

func appended(t *testing.T, s Store) {
	now := clock()
	id := mustAdmit(t, service(s, now), "k1", "build-1")
	op := load(t, s, id)
	ctx := context.Background()
	started := fact(operation.KindStarted, now.Add(time.Second))
	started.Lease = &operation.Lease{Run: "run-1", Execution: id, Until: now.Add(time.Minute)}
	half := 50.0
	progress := fact(operation.KindProgress, now.Add(2*time.Second))
	progress.Progress = &operation.Progress{CompletedSteps: 1, TotalSteps: 2, Percent: &half, Message: "half"}
	progress.Lease = started.Lease
	next, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher, Execution: "arn:exec:" + id},
		started, progress)
	if err != nil {
		t.Fatal(err)
	}
	if next.Version != 4 || next.State != operation.Running {
		t.Fatalf("Append returned %s v%d; want running v4", next.State, next.Version)
	}
	got := load(t, s, id)
	if err := same(got, next); err != nil {
		t.Fatalf("Load after Append: %v", err)
	}
	history, err := s.Facts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []operation.Kind
	for i, f := range history {
		if f.Version != i+1 {
			t.Fatalf("fact %d has version %d", i, f.Version)
		}
		kinds = append(kinds, f.Kind)
	}
	if fmt.Sprint(kinds) != "[accepted dispatched started progress]" {
		t.Fatalf("history %v", kinds)
	}
	done := fact(operation.KindSucceeded, now.Add(3*time.Second))
	done.Result = json.RawMessage(`{"rows":3}`)
	final, err := s.Append(ctx, got, done)
	if err != nil {
		t.Fatal(err)
	}
	if err := same(load(t, s, id), final); err != nil || final.State != operation.Succeeded {
		t.Fatalf("after succeeded (%s): %v", final.State, err)
	}
}

// same says how a and b differ in what a store must give back as it was written (times as
// instants, not by their locations).
func same(a, b operation.Operation) error {
	switch {
	case a.ID != b.ID || a.State != b.State || a.Version != b.Version:
		return fmt.Errorf("%s %s v%d, want %s %s v%d", a.ID, a.State, a.Version, b.ID, b.State, b.Version)
	case !a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) || !a.ObservedAt.Equal(b.ObservedAt) ||
		!a.WaitingUntil.Equal(b.WaitingUntil):
		return fmt.Errorf("times %v %v %v %v, want %v %v %v %v", a.CreatedAt, a.UpdatedAt, a.ObservedAt, a.WaitingUntil,
			b.CreatedAt, b.UpdatedAt, b.ObservedAt, b.WaitingUntil)
	case a.Started != b.Started || a.CancelRequested != b.CancelRequested || a.Execution != b.Execution || a.Leased != b.Leased:
		return fmt.Errorf("started %v cancel %v execution %q leased %v, want %v %v %q %v", a.Started, a.CancelRequested, a.Execution, a.Leased,
			b.Started, b.CancelRequested, b.Execution, b.Leased)
	case asJSON(a.Progress) != asJSON(b.Progress):
		return fmt.Errorf("progress %s, want %s", asJSON(a.Progress), asJSON(b.Progress))
	case string(a.Result) != string(b.Result) || asJSON(a.Problem) != asJSON(b.Problem):
		return fmt.Errorf("result %s problem %s, want %s %s", a.Result, asJSON(a.Problem), b.Result, asJSON(b.Problem))
	case (a.Lease == nil) != (b.Lease == nil) ||
		a.Lease != nil && (a.Lease.Run != b.Lease.Run || a.Lease.Execution != b.Lease.Execution || !a.Lease.Until.Equal(b.Lease.Until)):
		return fmt.Errorf("lease %+v, want %+v", a.Lease, b.Lease)
	}
	return nil
}

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func stale(t *testing.T, s Store) {
	now := clock()
	id := mustAdmit(t, service(s, now), "k1", "build-1")
	read := load(t, s, id)
	ctx := context.Background()
	if _, err := s.Append(ctx, read, operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher, Execution: "arn:exec:a"}); err != nil {
		t.Fatal(err)
	}
	// A second writer that read the same version: exactly one of two wins.
	_, err := s.Append(ctx, read, operation.Fact{Kind: operation.KindCancelRequested, At: now, Source: operation.SourceClient})
	if !errors.Is(err, operation.ErrConflict) {
		t.Fatalf("an append on version %d after another: %v; want operation.ErrConflict", read.Version, err)
	}
	op := load(t, s, id)
	if op.Version != 2 || op.State != operation.Dispatched || op.CancelRequested {
		t.Fatalf("the losing append wrote: %s v%d cancel %v", op.State, op.Version, op.CancelRequested)
	}
}

func illegal(t *testing.T, s Store) {
	now := clock()
	id := mustAdmit(t, service(s, now), "k1", "build-1")
	op := load(t, s, id)
	_, err := s.Append(context.Background(), op, fact(operation.KindStarted, now), fact(operation.KindAccepted, now))
	if !errors.Is(err, operation.ErrIllegalTransition) {
		t.Fatalf("accepted after started: %v; want operation.ErrIllegalTransition", err)
	}
	if got := load(t, s, id); got.Version != 1 || got.State != operation.Accepted {
		t.Fatalf("an illegal append wrote part of itself: %s v%d", got.State, got.Version)
	}
}

func callback(t *testing.T, s Store) {
	now := clock()
	id := mustAdmit(t, service(s, now), "k1", "build-1")
	op := load(t, s, id)
	ctx := context.Background()
	f := fact(operation.KindStarted, now)
	f.Lease = &operation.Lease{Run: "run-1", Execution: id, Until: now.Add(time.Hour), Callback: "token-of-step-1"}
	if _, err := s.Append(ctx, op, f); err != nil {
		t.Fatal(err)
	}
	got := load(t, s, id)
	if got.LeaseVersion != 2 || got.Lease == nil || got.Lease.Run != "run-1" {
		t.Fatalf("lease %+v at version %d; want run-1's, taken by fact 2", got.Lease, got.LeaseVersion)
	}
	// The real store keeps the callback (a task token, up to 2 KB) in its fact only, so a
	// reader must not count on Load to give it: neither store does.
	if got.Lease.Callback != "" {
		t.Fatalf("Load gave the callback %q; the callback is read with Callback", got.Lease.Callback)
	}
	if cb, err := s.Callback(ctx, id, got.LeaseVersion); err != nil || cb != "token-of-step-1" {
		t.Fatalf("Callback: %q, %v", cb, err)
	}
	if cb, err := s.Callback(ctx, id, 1); err != nil || cb != "" {
		t.Fatalf("the accepted fact's callback: %q, %v; want none", cb, err)
	}
}

func claims(t *testing.T, s Store) {
	ctx := context.Background()
	at := time.UnixMilli(clock().UnixMilli())
	for i, c := range []struct {
		run         string
		first, step int
		taken       bool
	}{
		{"run-a", 1, 1, true},
		{"run-a", 1, 1, false}, // the same end again
		{"run-a", 1, 3, false}, // out of order
		{"run-a", 1, 2, true},
		{"run-b", 4, 4, true},  // the next Run, from its first step
		{"run-a", 1, 3, false}, // the earlier Run, late
		{"run-b", 4, 5, true},
		{"run-b", 4, 4, false},
	} {
		sent := at.Add(time.Duration(i) * time.Second)
		got, last, err := s.Claim(ctx, "op_1", c.run, c.first, c.step-1, c.step, sent)
		if err != nil || got != c.taken {
			t.Fatalf("%d: %s takes step %d (first %d): %v, %v; want %v", i, c.run, c.step, c.first, got, err, c.taken)
		}
		if i == 0 && !last.IsZero() {
			t.Fatalf("the first claim ever says a step went out before it, at %v", last)
		}
		if i == 3 && !last.Equal(at) {
			t.Fatalf("step 2's claim says step 1 went out at %v; want %v", last, at)
		}
	}
}

func retried(t *testing.T, s Store) {
	now := clock()
	id := mustAdmit(t, service(s, now), "k1", "build-1")
	ctx := context.Background()
	attempts := 0
	op, decided, err := facts.Update(ctx, s, id, func(op operation.Operation) ([]operation.Fact, string, error) {
		attempts++
		if attempts == 1 {
			// Another writer appends between this read and this append.
			if _, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher, Execution: "arn:exec:a"}); err != nil {
				return nil, "", err
			}
		}
		return []operation.Fact{{Kind: operation.KindCancelRequested, At: now, Source: operation.SourceClient}},
			fmt.Sprintf("cancel on %s", op.State), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || decided != "cancel on dispatched" {
		t.Fatalf("%d attempts deciding %q; want 2, the second deciding on dispatched", attempts, decided)
	}
	if op.Version != 3 || op.State != operation.Cancelling || op.Execution != "arn:exec:a" {
		t.Fatalf("Update ended at %s v%d execution %q", op.State, op.Version, op.Execution)
	}
	if err := same(load(t, s, id), op); err != nil {
		t.Fatal(err)
	}
}
