package reconcile

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/testkit/memstore"
)

// noDue is the in-memory store as the reconciler's port; record reads no due index.
type noDue struct{ *memstore.Store }

func (noDue) Due(context.Context, time.Time, int) ([]DueItem, error)        { return nil, nil }
func (noDue) CountUnknownOutcomes(context.Context) (int, error)             { return 0, nil }
func (noDue) Reschedule(context.Context, string, int, time.Time, int) error { return nil }

type counted map[string]float64

func (c counted) Add(name, _ string, value float64, _ ...string) { c[name] += value }

// The reconciler records what it found only on the version it looked at. When another
// writer got there first (here the recorder's own outcome), whoever moved the operation
// knew more: nothing is recorded, and nothing is reported or counted as recorded, though
// the attempt that lost the race had decided to record.
func TestDecidesNothingOnAnOperationThatMovedSinceItLooked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		race   bool
		kind   operation.Kind // the result's kind: what it recorded
		state  operation.State
		counts bool
	}{
		{"nobody moved it: recorded and counted", false, operation.KindOutcomeUnknown, operation.OutcomeUnknown, true},
		{"the recorder settled it first: nothing recorded", true, "", operation.Succeeded, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New()
			id := s.Accept(t, "", t0)
			seen, err := s.Load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if seen, err = s.Append(ctx, seen, operation.Fact{Kind: operation.KindDispatched, At: t0, Source: operation.SourceDispatcher, Execution: "arn:exec:" + id},
				operation.Fact{Kind: operation.KindStarted, At: t0, Source: operation.SourceExecutor}); err != nil {
				t.Fatal(err)
			}
			if c.race {
				s.BeforeNextAppend(func(op operation.Operation) {
					if _, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindSucceeded, At: t0, Source: operation.SourceExecutor, Result: json.RawMessage(`{}`)}); err != nil {
						t.Errorf("the recorder's outcome: %v", err)
					}
				})
			}
			metrics := counted{}
			r := &Reconciler{Store: noDue{s}, Now: func() time.Time { return t0.Add(time.Hour) }, Metrics: metrics}
			res, err := r.record(ctx, seen, r.unknown(seen, "execution_ended", "it ended"))
			if err != nil {
				t.Fatal(err)
			}
			if res.kind != c.kind || res.state != c.state {
				t.Fatalf("result %+v; want kind %q, state %s", res, c.kind, c.state)
			}
			if counted := metrics["OutcomeUnknown"] > 0; counted != c.counts {
				t.Fatalf("metrics %v; outcome_unknown counted %v, want %v", metrics, counted, c.counts)
			}
		})
	}
}
