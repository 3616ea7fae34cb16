package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// signal sends the signal go with data {"n":n} as alice, under key.
func (f *fixture) signal(id string, n int, key string) (operation.Operation, error) {
	s := &intent.Service{Store: f.store, Now: f.clock.Now}
	data := json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))
	op, _, err := s.Signal(context.Background(), f.rec.Registry, intent.SignalRequest{ID: id, Name: "go", Data: data,
		Decoded: map[string]any{"n": json.Number(fmt.Sprint(n))}, Key: key, Sender: intent.Sender{Tenant: "acme", Principal: "alice"}})
	return op, err
}

// awaitGo is the workflow's state after step 1 asked to wait for go.
func awaitGo(d recorder.Decision) recorder.Input {
	return after(d, `{"status":"continue","state":{"s":1},"await":{"signal":"go","timeoutSeconds":60}}`)
}

// versionOf is the version of id's first fact of kind that matches (0: none).
func (f *fixture) versionOf(id string, match func(operation.Fact) bool) int {
	f.t.Helper()
	facts, err := f.store.Facts(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, fa := range facts {
		if match(fa) {
			return fa.Version
		}
	}
	return 0
}

// A signal racing the step that asks to wait for it, on both stores: either the wait is not
// taken and the next step is given the signal at once, or the wait is recorded first and
// the signal after it, so that its stream record, which the dispatcher wakes the work on,
// comes after the wait's. Never a wait recorded after the signal it waits for: nobody would
// wake it before its timeout.
func TestASignalRacingTheWaitIsNeverLost(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		for trial := range 8 {
			id := f.newOp()
			d1 := f.handle(recorder.Input{OperationID: id})
			var d recorder.Decision
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				var err error
				if d, err = f.rec.Handle(context.Background(), awaitGo(d1)); err != nil {
					t.Error(err)
				}
			}()
			go func() {
				defer wg.Done()
				if _, err := f.signal(id, trial, fmt.Sprint("k", trial)); err != nil {
					t.Error(err)
				}
			}()
			wg.Wait()
			op := f.load(id)
			awaited := f.versionOf(id, func(fa operation.Fact) bool { return fa.Awaiting != nil })
			signaled := f.versionOf(id, func(fa operation.Fact) bool { return fa.Kind == operation.KindSignaled })
			switch d.Next {
			case recorder.NextWork:
				if awaited != 0 || len(d.Request.Signals) != 1 || d.Request.Signals[0].Name != "go" || string(d.Request.State) != `{"s":1}` {
					t.Fatalf("trial %d: went on without the signal: %+v (awaiting fact %d)", trial, d.Request, awaited)
				}
			case recorder.NextAwait:
				if awaited == 0 || signaled < awaited || !op.AwaitAnswered() {
					t.Fatalf("trial %d: waits (fact %d) for a signal recorded at %d", trial, awaited, signaled)
				}
			default:
				t.Fatalf("trial %d: decision %+v", trial, d)
			}
		}
	})
}

// A cancel racing a signal on an operation that waits, on both stores: the operation ends
// canceled at once, and the signal is either recorded before the cancel or refused
// (already_terminal); never recorded after it.
func TestASignalRacingACancelNeverFollowsIt(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		for trial := range 8 {
			id := f.newOp()
			f.handle(awaitGo(f.handle(recorder.Input{OperationID: id})))
			var sigErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, sigErr = f.signal(id, trial, "k") }()
			go func() { defer wg.Done(); cancelAs(t, f, id) }()
			wg.Wait()
			op := f.load(id)
			signaled := f.versionOf(id, func(fa operation.Fact) bool { return fa.Kind == operation.KindSignaled })
			canceled := f.versionOf(id, func(fa operation.Fact) bool { return fa.Kind == operation.KindCanceled })
			switch {
			case op.State != operation.Canceled:
				t.Fatalf("trial %d: %s after a cancel of a waiting operation", trial, op.State)
			case sigErr == nil && (signaled == 0 || signaled > canceled):
				t.Fatalf("trial %d: the signal answered 202 at fact %d, the cancel at %d", trial, signaled, canceled)
			case sigErr != nil && (problem.CodeOf(sigErr) != problem.AlreadyTerminal || signaled != 0):
				t.Fatalf("trial %d: the signal: %v (fact %d)", trial, sigErr, signaled)
			}
		}
	})
}

func cancelAs(t *testing.T, f *fixture, id string) {
	s := &intent.Service{Store: f.store, Now: f.clock.Now}
	if _, _, err := s.Cancel(context.Background(), id, intent.Sender{Principal: "alice"}, func(operation.Operation) bool { return true }, nil); err != nil {
		t.Error(err)
	}
}

// Two signals at once, and the timeout racing them, on both stores: both are recorded, in
// versions of their own; the dispatcher and the reconciler, whichever reads the operation
// before or after them, start the same execution with the same input (so one runs); and
// the step after the wait is given both, in order, and hears that the wait did not time
// out.
func TestTwoSignalsAndTheTimeoutWakeTheWaitOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		f.handle(awaitGo(f.handle(recorder.Input{OperationID: id})))
		before := f.load(id)
		f.clock.Add(61 * time.Second) // the wait timed out too
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := f.signal(id, i, fmt.Sprint("key-", i)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		op := f.load(id)
		if len(op.Signals) != 2 || op.Signals[0].Version == op.Signals[1].Version || !op.AwaitAnswered() {
			t.Fatalf("signals %+v", op.Signals)
		}
		nextBefore, inBefore, err := recorder.Wake(testSealer(t), before, "test-poll")
		if err != nil {
			t.Fatal(err)
		}
		nextAfter, inAfter, err := recorder.Wake(testSealer(t), op, "test-poll")
		if err != nil {
			t.Fatal(err)
		}
		if nextBefore != nextAfter || string(inBefore) != string(inAfter) || nextAfter.Name != id+"-1" || nextAfter.Resume {
			t.Fatalf("the wakers disagree: %+v %s / %+v %s", nextBefore, inBefore, nextAfter, inAfter)
		}
		var in recorder.Input
		if err := json.Unmarshal(inAfter, &in); err != nil {
			t.Fatal(err)
		}
		d := f.handle(in)
		if d.Next != recorder.NextWork || d.Request.Step != 2 || string(d.Request.State) != `{"s":1}` {
			t.Fatalf("the step after the wait: %+v", d)
		}
		got := []string{}
		for _, s := range d.Request.Signals {
			got = append(got, string(s.Data))
		}
		want := []string{string(op.Signals[0].Data), string(op.Signals[1].Data)}
		if fmt.Sprint(got) != fmt.Sprint(want) || d.Request.Awaited == nil || d.Request.Awaited.TimedOut {
			t.Fatalf("given %v awaited %+v; want %v, not timed out", got, d.Request.Awaited, want)
		}
		if after := f.load(id); after.Awaits() || after.Represent("").Awaiting != nil {
			t.Fatalf("still awaiting after the wake: %+v", after.Awaiting)
		}
	})
}

// A third party's callback replayed at once (its retry racing its first try), on both
// stores: one signal is recorded, and both answers are the same success, the later a replay.
func TestAReplayedCallbackIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		for trial := range 6 {
			id := f.newOp()
			f.handle(awaitGo(f.handle(recorder.Input{OperationID: id})))
			s := &intent.Service{Store: f.store, Now: f.clock.Now}
			req := intent.SignalRequest{ID: id, Name: "go", Data: json.RawMessage(`{"n":7}`), Decoded: map[string]any{"n": json.Number("7")},
				Key: "callback:same-body", Sender: intent.Sender{Callback: true}}
			replays := make([]bool, 3)
			var wg sync.WaitGroup
			for i := range replays {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, replayed, err := s.Signal(context.Background(), f.rec.Registry, req)
					if err != nil {
						t.Errorf("trial %d: %v", trial, err)
					}
					replays[i] = replayed
				}()
			}
			wg.Wait()
			firsts := 0
			for _, r := range replays {
				if !r {
					firsts++
				}
			}
			if op := f.load(id); len(op.Signals) != 1 || firsts != 1 || op.Signals[0].Source != operation.SourceCallback {
				t.Fatalf("trial %d: %d signals recorded, %d answered as the first: %+v", trial, len(op.Signals), firsts, op.Signals)
			}
		}
	})
}
