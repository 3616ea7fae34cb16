package reconcile_test

import (
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// Each repair is counted by its action, and each run reports the operations waiting for an
// operator.
func TestRepairsAreCountedByAction(t *testing.T) {
	f := newFixture(t)
	enc, buf := emftest.Encoder(t, "longrun-reconciler", f.clock.Now)
	f.r.Metrics = enc

	f.accepted()
	f.started(true)
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Dispatched != 1 || sum.Rescheduled != 1 {
		t.Fatalf("%+v", sum)
	}
	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	repairs, waiting := map[string]float64{}, []float64{}
	for _, p := range points {
		switch p.Name {
		case "Repairs":
			repairs[p.Dims["Action"]] += p.Value
		case "OutcomeUnknownWaiting":
			waiting = append(waiting, p.Value)
		default:
			t.Errorf("unexpected %+v", p)
		}
	}
	if len(repairs) != 2 || repairs["dispatched"] != 1 || repairs["rescheduled"] != 1 || len(waiting) != 1 || waiting[0] != 0 {
		t.Fatalf("repairs %v, waiting %v\n%s", repairs, waiting, buf.String())
	}
}

// Every outcome the reconciler records reports accept → outcome latency as the recorder's
// do, by type and outcome; the steps run only when no step had started (after a start, a
// step may have been in flight); outcome_unknown is counted on its own. A later run that
// finds nothing to record reports no outcome again.
func TestReconciledOutcomesAreMeasured(t *testing.T) {
	f := newFixture(t)
	enc, buf := emftest.Encoder(t, "longrun-reconciler", f.clock.Now)
	f.r.Metrics = enc

	notStarted := f.started(false) // aborted before any step: failed
	f.exec.Finish(notStarted, reconcile.Aborted, nil)
	f.clock.Advance(time.Second)
	inProgress := f.started(true) // aborted mid-way: outcome_unknown
	f.exec.Finish(inProgress, reconcile.Aborted, nil)
	f.clock.Advance(time.Second)
	unrecorded := f.started(true) // succeeded, the outcome never recorded: succeeded
	f.finish(unrecorded, reconcile.Succeeded, []byte(`{"operationId":"`+unrecorded+`","gate":{"decision":`+firstStep(unrecorded)+
		`},"task":{"report":{"status":"succeeded","result":{}}}}`))
	f.clock.Advance(time.Second)
	cancelling := f.started(false) // cancelled, never stopping, nothing started: stopped as canceled
	f.cancel(cancelling)
	f.clock.Advance(leases.Check + time.Second)
	if sum := f.run(); sum.Recorded != 3 || sum.Stopped != 1 {
		t.Fatalf("%+v", sum)
	}
	for id, want := range map[string]operation.State{notStarted: operation.Failed, inProgress: operation.OutcomeUnknown,
		unrecorded: operation.Succeeded, cancelling: operation.Canceled} {
		if got := f.load(id).State; got != want {
			t.Fatalf("%s: %s, want %s", id, got, want)
		}
	}
	f.clock.Advance(time.Hour)
	f.run()

	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	emftest.Expect(t, points, "Outcome",
		func(p emftest.Point) bool { return p.Name == "Repairs" || p.Name == "OutcomeUnknownWaiting" },
		func(p emftest.Point) {
			if p.Dims["Type"] != "demo.task" || p.Dims["Service"] != "longrun-reconciler" {
				t.Errorf("dimensions %+v", p)
			}
		}, map[emftest.Key]emftest.Want{
			{Name: "OperationLatency", Dim: "failed"}:          {Unit: "Milliseconds", Value: 24000},
			{Name: "StepsRun", Dim: "failed"}:                  {Unit: "Count", Value: 0},
			{Name: "OperationLatency", Dim: "outcome_unknown"}: {Unit: "Milliseconds", Value: 23000},
			{Name: "OutcomeUnknown", Dim: ""}:                  {Unit: "Count", Value: 1},
			{Name: "OperationLatency", Dim: "succeeded"}:       {Unit: "Milliseconds", Value: 22000},
			{Name: "OperationLatency", Dim: "canceled"}:        {Unit: "Milliseconds", Value: 21000},
			{Name: "StepsRun", Dim: "canceled"}:                {Unit: "Count", Value: 0},
		})
}
