package reconcile_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// Each repair is counted by its action, and each run reports the operations waiting for an
// operator.
func TestRepairsAreCountedByAction(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	f := newFixture(t)
	var buf bytes.Buffer
	enc, err := emf.New(&buf, "longrun-reconciler")
	if err != nil {
		t.Fatal(err)
	}
	enc.Now, enc.OnError = f.clock.Now, func(err error) { t.Errorf("metric not written: %v", err) }
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
