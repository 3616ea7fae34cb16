package facts_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/facts"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/testkit/memstore"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func dispatched(at time.Time) operation.Fact {
	return operation.Fact{Kind: operation.KindDispatched, At: at, Source: operation.SourceDispatcher, Execution: "arn:exec:1"}
}

func cancelRequested(at time.Time) operation.Fact {
	return operation.Fact{Kind: operation.KindCancelRequested, At: at, Source: operation.SourceClient}
}

// counting counts a store's reads.
type counting struct {
	facts.Store
	loads int
}

func (c *counting) Load(ctx context.Context, id string) (operation.Operation, error) {
	c.loads++
	return c.Store.Load(ctx, id)
}

// losing refuses every append as a store does when another writer always got there first.
type losing struct{ facts.Store }

func (losing) Append(_ context.Context, op operation.Operation, _ ...operation.Fact) (operation.Operation, error) {
	return op, operation.ErrConflict
}

// Update hands back the decision of the attempt that counted, with what the store holds
// after it; a lost race throws away that attempt's decision with its facts.
func TestUpdateReturnsTheDecisionOfTheAttemptThatCounted(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		// race makes the first append lose to a dispatched fact written before it.
		race   bool
		decide func(op operation.Operation) ([]operation.Fact, string, error)
		// want: the decision, the state and version after, how often decide ran, the error
		want         string
		state        operation.State
		version      int
		attempts     int
		wantErr      error
		wantProblem  problem.Code
		wantConflict bool
	}{
		{
			name: "nothing to append: the decision and the operation as read",
			decide: func(op operation.Operation) ([]operation.Fact, string, error) {
				return nil, "nothing on " + string(op.State), nil
			},
			want: "nothing on accepted", state: operation.Accepted, version: 1, attempts: 1,
		},
		{
			name: "facts appended: the decision and the operation after them",
			decide: func(op operation.Operation) ([]operation.Fact, string, error) {
				return []operation.Fact{cancelRequested(t0)}, "cancel on " + string(op.State), nil
			},
			want: "cancel on accepted", state: operation.Cancelling, version: 2, attempts: 1,
		},
		{
			name: "a lost race decides again on what the winner wrote",
			race: true,
			decide: func(op operation.Operation) ([]operation.Fact, string, error) {
				return []operation.Fact{cancelRequested(t0)}, "cancel on " + string(op.State), nil
			},
			want: "cancel on dispatched", state: operation.Cancelling, version: 3, attempts: 2,
		},
		{
			// What callers got wrong when they wrote decisions into variables of their own:
			// the first attempt's decision must not survive an attempt that decides nothing.
			name: "a lost race's decision does not outlive it",
			race: true,
			decide: func(op operation.Operation) ([]operation.Fact, string, error) {
				if op.State != operation.Accepted {
					return nil, "", nil
				}
				return []operation.Fact{{Kind: operation.KindCanceled, At: t0, Source: operation.SourceClient}}, "canceled", nil
			},
			want: "", state: operation.Dispatched, version: 2, attempts: 2,
		},
		{
			name: "decide's error and decision come back as it returned them, nothing appended",
			decide: func(op operation.Operation) ([]operation.Fact, string, error) {
				return []operation.Fact{cancelRequested(t0)}, "refused", problem.New(problem.VersionMismatch, "no")
			},
			want: "refused", state: operation.Accepted, version: 1, attempts: 1, wantProblem: problem.VersionMismatch,
		},
		{
			name: "an append the store refuses for good: its error, and no decision",
			decide: func(op operation.Operation) ([]operation.Fact, string, error) {
				return []operation.Fact{{Kind: operation.KindProgress, At: t0, Source: operation.SourceExecutor}}, "progress", nil
			},
			want: "", state: operation.Accepted, version: 1, attempts: 1, wantErr: operation.ErrIllegalTransition,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New()
			id := s.Accept(t, "", t0)
			if c.race {
				s.BeforeNextAppend(func(op operation.Operation) {
					if _, err := s.Append(ctx, op, dispatched(t0)); err != nil {
						t.Errorf("the racing append: %v", err)
					}
				})
			}
			attempts := 0
			op, got, err := facts.Update(ctx, s, id, func(op operation.Operation) ([]operation.Fact, string, error) {
				attempts++
				return c.decide(op)
			})
			switch {
			case c.wantErr != nil && !errors.Is(err, c.wantErr),
				c.wantProblem != "" && problem.CodeOf(err) != c.wantProblem,
				c.wantErr == nil && c.wantProblem == "" && err != nil:
				t.Fatalf("error %v; want %v %s", err, c.wantErr, c.wantProblem)
			}
			if got != c.want || attempts != c.attempts {
				t.Fatalf("decision %q after %d attempts; want %q after %d", got, attempts, c.want, c.attempts)
			}
			stored, lerr := s.Load(ctx, id)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if stored.State != c.state || stored.Version != c.version {
				t.Fatalf("stored %s v%d; want %s v%d", stored.State, stored.Version, c.state, c.version)
			}
			if err == nil && (op.State != stored.State || op.Version != stored.Version) {
				t.Fatalf("Update returned %s v%d, the store holds %s v%d", op.State, op.Version, stored.State, stored.Version)
			}
		})
	}
}

// A writer that loses every race gives up after MaxAttempts, with the conflict as the
// cause and no decision: none of it was recorded.
func TestUpdateGivesUpAfterMaxAttempts(t *testing.T) {
	s := memstore.New()
	id := s.Accept(t, "", t0)
	attempts := 0
	_, got, err := facts.Update(context.Background(), losing{s}, id, func(op operation.Operation) ([]operation.Fact, string, error) {
		attempts++
		return []operation.Fact{cancelRequested(t0)}, "cancel", nil
	})
	if !errors.Is(err, operation.ErrConflict) || got != "" || attempts != facts.MaxAttempts {
		t.Fatalf("%d attempts, decision %q, error %v; want %d, none, a conflict", attempts, got, err, facts.MaxAttempts)
	}
}

// An operation that cannot be read is not decided on.
func TestUpdateOfAnUnknownOperationDecidesNothing(t *testing.T) {
	called := false
	_, _, err := facts.Update(context.Background(), memstore.New(), "op_missing", func(op operation.Operation) ([]operation.Fact, int, error) {
		called = true
		return nil, 0, nil
	})
	if problem.CodeOf(err) != problem.NotFound || called {
		t.Fatalf("error %v, decide called %v; want not_found, not called", err, called)
	}
}

// UpdateFrom decides first on the operation its caller read, without reading it again,
// and reads afresh only after losing a race.
func TestUpdateFromReadsOnlyAfterALostRace(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		race  bool
		loads int
		seen  []operation.State
	}{
		{"no race: no read", false, 0, []operation.State{operation.Accepted}},
		{"a lost race: one read", true, 1, []operation.State{operation.Accepted, operation.Dispatched}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memstore.New()
			id := mem.Accept(t, "", t0)
			read, err := mem.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c.race {
				mem.BeforeNextAppend(func(op operation.Operation) {
					if _, err := mem.Append(ctx, op, dispatched(t0)); err != nil {
						t.Errorf("the racing append: %v", err)
					}
				})
			}
			s := &counting{Store: mem}
			var seen []operation.State
			_, _, err = facts.UpdateFrom(ctx, s, id, &read, func(op operation.Operation) ([]operation.Fact, struct{}, error) {
				seen = append(seen, op.State)
				return []operation.Fact{cancelRequested(t0)}, struct{}{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if s.loads != c.loads || len(seen) != len(c.seen) || seen[len(seen)-1] != c.seen[len(c.seen)-1] || seen[0] != c.seen[0] {
				t.Fatalf("%d reads, decided on %v; want %d reads, %v", s.loads, seen, c.loads, c.seen)
			}
		})
	}
}
