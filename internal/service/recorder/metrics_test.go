package recorder_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// Each outcome recorded reports accept → outcome latency and the steps run, by type and
// outcome; outcome_unknown is counted on its own; a retried call reports nothing more.
func TestOutcomesAreMeasured(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	f := newFixture(t)
	var buf bytes.Buffer
	enc, err := emf.New(&buf, "longrun-recorder")
	if err != nil {
		t.Fatal(err)
	}
	enc.Now, enc.OnError = f.clock.Now, func(err error) { t.Errorf("metric not written: %v", err) }
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
	type key struct{ name, outcome string }
	got := map[key]emftest.Point{}
	for _, p := range points {
		if p.Dims["Type"] != "test.poll" || p.Dims["Service"] != "longrun-recorder" {
			t.Errorf("dimensions %+v", p)
		}
		k := key{p.Name, p.Dims["Outcome"]}
		if _, dup := got[k]; dup {
			t.Errorf("%v reported twice", k)
		}
		got[k] = p
	}
	want := map[key]struct {
		unit  string
		value float64
	}{
		{"OperationLatency", "succeeded"}:       {"Milliseconds", 2000},
		{"StepsRun", "succeeded"}:               {"Count", 2},
		{"OperationLatency", "outcome_unknown"}: {"Milliseconds", 300},
		{"StepsRun", "outcome_unknown"}:         {"Count", 1},
		{"OutcomeUnknown", ""}:                  {"Count", 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v\n%s", got, buf.String())
	}
	for k, w := range want {
		if p, ok := got[k]; !ok || p.Unit != w.unit || p.Value != w.value {
			t.Errorf("%v = %+v, want %v %v", k, p, w.value, w.unit)
		}
	}
}
