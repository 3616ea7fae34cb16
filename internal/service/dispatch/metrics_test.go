package dispatch_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

func withMetrics(t *testing.T, f *fixture) *bytes.Buffer {
	t.Helper()
	enc, buf := emftest.Encoder(t, "longrun-dispatcher", nil)
	f.d.Metrics = enc
	return buf
}

func points(t *testing.T, buf *bytes.Buffer, name string) []emftest.Point {
	t.Helper()
	all, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var out []emftest.Point
	for _, p := range all {
		if p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// The dispatch that records dispatched reports accepted → dispatched, once: a redelivery
// that changes nothing reports nothing.
func TestDispatchLagIsReportedOnce(t *testing.T) {
	f := newFixture(t)
	buf := withMetrics(t, f)
	f.d.Now = func() time.Time { return time.Now().Add(1500 * time.Millisecond) }
	id := f.accepted()
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Dispatch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if f.load(id).State != operation.Dispatched {
		t.Fatal(f.history(id))
	}
	lag := points(t, buf, "DispatchLag")
	if len(lag) != 1 || lag[0].Unit != "Milliseconds" || lag[0].Value < 1500 || lag[0].Value > 60_000 ||
		lag[0].Dims["Type"] != f.load(id).Type || lag[0].Dims["Service"] != "longrun-dispatcher" {
		t.Fatalf("DispatchLag %+v\n%s", lag, buf)
	}
}

func TestDeadLettersAreCounted(t *testing.T) {
	f := newFixture(t)
	buf := withMetrics(t, f)
	id := f.accepted()
	f.putFact(id, 2, operation.KindAccepted) // an illegal history: poison
	f.redeliver(id, "100")
	dl := points(t, buf, "DeadLetters")
	if len(f.dlq.got) != 1 || len(dl) != 1 || dl[0].Value != 1 || dl[0].Unit != "Count" || dl[0].Dims["Source"] != "dispatcher" {
		t.Fatalf("dead letters %+v, metric %+v", f.dlq.got, dl)
	}
	if n := len(points(t, buf, "DispatchLag")); n != 0 {
		t.Fatalf("%d DispatchLag points for a poison record", n)
	}
}

// Work canceled before it was dispatched is an outcome: it reports accept → outcome latency
// and no steps, as every writer of an outcome does, once.
func TestCancelFirstIsMeasuredAsAnOutcome(t *testing.T) {
	f := newFixture(t)
	buf := withMetrics(t, f)
	id := f.accepted()
	if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindCancelRequested, At: time.Now(), Source: operation.SourceClient}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.d.Dispatch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	lat, steps := points(t, buf, "OperationLatency"), points(t, buf, "StepsRun")
	if f.load(id).State != operation.Canceled || len(lat) != 1 || lat[0].Dims["Outcome"] != "canceled" || lat[0].Unit != "Milliseconds" ||
		len(steps) != 1 || steps[0].Value != 0 || len(points(t, buf, "DispatchLag")) != 0 {
		t.Fatalf("latency %+v, steps %+v\n%s", lat, steps, buf)
	}
}
