package recorder_test

import (
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// Each outcome recorded reports accept → outcome latency and the steps run, by type and
// outcome; outcome_unknown is counted on its own; a retried call reports nothing more.
func TestOutcomesAreMeasured(t *testing.T) {
	f := newFixture(t)
	enc, buf := emftest.Encoder(t, "longrun-recorder", f.clock.Now)
	f.rec.Metrics = enc

	ok := f.newOp()
	d1 := f.handle(recorder.Input{OperationID: ok})
	f.clock.Add(1200 * time.Millisecond)
	d2 := f.handle(after(d1, `{"status":"continue"}`))
	f.clock.Add(800 * time.Millisecond)
	f.handle(after(d2, `{"status":"succeeded","result":{}}`))
	f.handle(after(d2, `{"status":"succeeded","result":{}}`)) // the workflow's retry

	lost := f.newOp()
	d := f.handle(recorder.Input{OperationID: lost})
	f.clock.Add(300 * time.Millisecond)
	f.handle(after(d, `{"status":"outcome_unknown"}`))
	if f.load(ok).State != operation.Succeeded || f.load(lost).State != operation.OutcomeUnknown {
		t.Fatal(f.load(ok).State, f.load(lost).State)
	}

	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	emftest.Expect(t, points, "Outcome", nil, func(p emftest.Point) {
		if p.Dims["Type"] != "test.poll" || p.Dims["Service"] != "longrun-recorder" {
			t.Errorf("dimensions %+v", p)
		}
	}, map[emftest.Key]emftest.Want{
		{Name: "OperationLatency", Dim: "succeeded"}:       {Unit: "Milliseconds", Value: 2000},
		{Name: "StepsRun", Dim: "succeeded"}:               {Unit: "Count", Value: 2},
		{Name: "OperationLatency", Dim: "outcome_unknown"}: {Unit: "Milliseconds", Value: 300},
		{Name: "StepsRun", Dim: "outcome_unknown"}:         {Unit: "Count", Value: 1},
		{Name: "OutcomeUnknown", Dim: ""}:                  {Unit: "Count", Value: 1},
	})
}
