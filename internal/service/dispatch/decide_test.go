package dispatch

import (
	"fmt"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
)

// The dispatcher's decision on each reading of an operation, without a store: cancellation
// first, then nothing past accepted, then an execution and its dispatched fact.
func TestDecidesCancelFirst(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	now := t0.Add(3 * time.Second)
	d := &Dispatcher{Registry: optype.Builtin(), Leases: operation.DefaultLeases()}
	op := func(state operation.State, change func(*operation.Operation)) operation.Operation {
		o := operation.Operation{ID: "op_1", State: state, CreatedAt: t0, Version: 2}
		o.Type, o.Deadline = "demo.task", t0.Add(time.Hour)
		if change != nil {
			change(&o)
		}
		return o
	}
	started := func(o *operation.Operation) { o.Started = true }
	dispatched := func(o *operation.Operation) { o.Execution = "arn:exec:op_1" }
	unserved := func(o *operation.Operation) { o.Type = "gone.type" }
	for _, c := range []struct {
		name    string
		op      operation.Operation
		started string // the execution this call started, if any
		facts   string // the kinds decided
		want    decision
	}{
		{"accepted: start an execution, record nothing yet", op(operation.Accepted, nil), "",
			"[]", decision{start: "demo-task"}},
		{"accepted after the start: dispatched, after its wait", op(operation.Accepted, nil), "arn:exec:op_1",
			"[dispatched]", decision{dispatched: true, lag: 3 * time.Second}},
		{"a bare cancel before anything started: canceled", op(operation.Cancelling, nil), "",
			"[canceled]", decision{}},
		{"a cancel that came after this call's start, before its fact: canceled all the same", op(operation.Cancelling, nil), "arn:exec:op_1",
			"[canceled]", decision{}},
		{"a cancel after the worker started: not the dispatcher's", op(operation.Cancelling, started), "",
			"[]", decision{}},
		{"a cancel after the dispatch: not the dispatcher's", op(operation.Cancelling, dispatched), "",
			"[]", decision{}},
		{"canceled by the API: nothing", op(operation.Canceled, nil), "",
			"[]", decision{}},
		{"dispatched already: nothing", op(operation.Dispatched, dispatched), "arn:exec:op_1",
			"[]", decision{}},
		{"this call's execution started first: dispatched, nothing to record", op(operation.Running, started), "arn:exec:op_1",
			"[]", decision{dispatched: true, lag: 3 * time.Second}},
		{"running under another dispatch: nothing", op(operation.Running, func(o *operation.Operation) { started(o); dispatched(o) }), "",
			"[]", decision{}},
		{"a type not served, before its deadline: left accepted", op(operation.Accepted, unserved), "",
			"[]", decision{unserved: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			facts, got, err := d.decide(c.op, c.started, now)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []operation.Kind
			for _, f := range facts {
				kinds = append(kinds, f.Kind)
				if !f.At.Equal(now) || f.Source != operation.SourceDispatcher {
					t.Fatalf("fact %s at %v from %s; want now, from the dispatcher", f.Kind, f.At, f.Source)
				}
				if f.Kind == operation.KindDispatched && f.Execution != c.started {
					t.Fatalf("dispatched names %q; want the execution started, %q", f.Execution, c.started)
				}
			}
			if fmt.Sprint(kinds) != c.facts {
				t.Fatalf("facts %v; want %s", kinds, c.facts)
			}
			if c.facts == "[canceled]" {
				if got.outcome == nil || got.outcome.Kind != operation.KindCanceled {
					t.Fatalf("outcome %+v; want the canceled fact, counted as an outcome", got.outcome)
				}
				got.outcome = nil
			}
			if got != c.want {
				t.Fatalf("decision %+v; want %+v", got, c.want)
			}
		})
	}
}

// Past its deadline and the cancel lease, an operation whose type nobody serves fails, and
// the failure is counted as its outcome.
func TestDecidesAnUnservedTypeFailsPastItsDeadline(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	d := &Dispatcher{Registry: optype.Builtin(), Leases: operation.DefaultLeases()}
	op := operation.Operation{ID: "op_1", State: operation.Accepted, CreatedAt: t0, Version: 1}
	op.Type, op.Deadline = "gone.type", t0.Add(time.Hour)
	now := op.Deadline.Add(d.Leases.Cancel)
	facts, got, err := d.decide(op, "", now)
	if err != nil || len(facts) != 1 || facts[0].Kind != operation.KindFailed || got.outcome == nil || got.unserved {
		t.Fatalf("facts %+v, decision %+v, %v; want one failed fact, counted", facts, got, err)
	}
	if p := facts[0].Problem; p == nil || p.Code != "unsupported_operation_type" {
		t.Fatalf("problem %+v", facts[0].Problem)
	}
}
