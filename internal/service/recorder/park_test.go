package recorder_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// lambdaQueue is Lambda's asynchronous invocation for parked Runs' tests: Send keeps each
// step sent; next runs the oldest on the script and says how it ended, as the worker's
// destination would hear it.
type lambdaQueue struct {
	mu       sync.Mutex
	sent     [][]byte
	function string
	// refuse, when set, refuses the n-th send (from 1) with its error.
	refuse func(n int) error
	sends  int
}

func (q *lambdaQueue) Send(_ context.Context, function string, payload []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sends++
	if q.refuse != nil {
		if err := q.refuse(q.sends); err != nil {
			return err
		}
	}
	q.sent = append(q.sent, payload)
	q.function = function
	return nil
}

func (q *lambdaQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.sent)
}

// next takes the oldest step sent and runs it on s: the Delivery of how it ended.
func (q *lambdaQueue) next(t *testing.T, s *script) recorder.Delivery {
	t.Helper()
	q.mu.Lock()
	if len(q.sent) == 0 {
		q.mu.Unlock()
		t.Fatal("no step was sent")
	}
	payload := q.sent[0]
	q.sent = q.sent[1:]
	fn := q.function
	q.mu.Unlock()
	d := recorder.Delivery{Function: fn, Request: payload}
	out, err := s.Invoke(context.Background(), fn, payload, time.Minute)
	var ie *step.InvokeError
	switch {
	case errors.As(err, &ie):
		d.Error = &recorder.TaskError{Error: ie.Name, Cause: ie.Cause}
	case err != nil:
		t.Fatal(err)
	default:
		d.Task = &recorder.Task{Report: out}
	}
	return d
}

// callbacks is Step Functions' side of a task token: every answer by token.
type callbacks struct {
	mu      sync.Mutex
	answers map[string][]recorder.Decision
	stopped map[string]bool // tokens whose execution was stopped
	beats   int
}

func (c *callbacks) Alive(_ context.Context, token string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats++
	return !c.stopped[token] && len(c.answers[token]) == 0, nil
}

func (c *callbacks) Answer(_ context.Context, token string, output []byte) error {
	var d recorder.Decision
	if err := json.Unmarshal(output, &d); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped[token] {
		return recorder.ErrCallbackGone
	}
	if c.answers == nil {
		c.answers = map[string][]recorder.Decision{}
	}
	if len(c.answers[token]) > 0 {
		return recorder.ErrCallbackGone // a token is answered once
	}
	c.answers[token] = append(c.answers[token], d)
	return nil
}

func (c *callbacks) of(token string) []recorder.Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers[token]
}

const worker = "arn:aws:lambda:us-east-1:123456789012:function:worker-test-poll"

// parked gives f's recorder an asynchronous Lambda and Step Functions' callbacks.
func (f *fixture) parked(s *script) (*lambdaQueue, *callbacks) {
	s.clock = f.clock
	q, c := &lambdaQueue{}, &callbacks{}
	f.rec.Sender, f.rec.Callbacks, f.rec.Claims = q, c, f.store
	f.rec.Invoker = s // for the steps a parked Run runs in its own invocation (SyncBelow)
	if f.rec.Executions == nil {
		f.rec.Executions = &executions{}
	}
	return q, c
}

func (f *fixture) runWith(token string, state recorder.Input) recorder.Decision {
	f.t.Helper()
	d, err := f.rec.Run(context.Background(), recorder.Call{State: state, Worker: worker, Token: token})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) deliver(d recorder.Delivery) {
	f.t.Helper()
	if _, err := f.rec.Deliver(context.Background(), d); err != nil {
		f.t.Fatal(err)
	}
}

// A parked Run sends each step and returns: nothing waits for the worker in an invocation
// of the recorder. Each step's end, delivered, is recorded and the next step sent, with the
// state carried on; the workflow hears one answer, through its token, when the work is
// done. While a step is out, the Run's lease keeps the token and lasts as long as the Run
// may; fast steps write no fact of their own.
func TestParkedRunSendsEachStepAndAnswersOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		s := &script{answers: []any{
			`{"status":"continue","state":{"cursor":1},"progress":{"totalSteps":3}}`,
			`{"status":"continue","state":{"cursor":2}}`,
			`{"status":"succeeded","result":{"rows":3}}`,
		}, takes: time.Second} // too slow to run in the recorder's invocation (SyncBelow)
		q, c := f.parked(s)
		if d := f.runWith("tok-1", recorder.Input{OperationID: id}); d.Next != recorder.NextParked {
			t.Fatalf("the Run returns once step 1 is sent: %+v", d)
		}
		for n := 1; n <= 3; n++ {
			if q.pending() != 1 {
				t.Fatalf("before step %d's end, %d steps are out; want 1", n, q.pending())
			}
			op := f.load(id)
			l := op.InFlight(f.clock.Now())
			if l == nil || op.LeaseVersion == 0 {
				t.Fatalf("step %d is out without a parked lease: %+v", n, op.Lease)
			}
			cb, err := f.store.Callback(context.Background(), id, op.LeaseVersion)
			if err != nil || !json.Valid([]byte(cb)) {
				t.Fatalf("step %d: the lease's callback %q, %v", n, cb, err)
			}
			var pk struct {
				Token string `json:"t"`
				First int    `json:"f"`
			}
			_ = json.Unmarshal([]byte(cb), &pk)
			if pk.Token != "tok-1" || pk.First != 1 || l.Until.Before(f.clock.Now().Add(time.Hour)) {
				t.Fatalf("step %d: the Run's lease keeps %+v until %s", n, pk, l.Until)
			}
			if len(c.of("tok-1")) != 0 {
				t.Fatalf("answered before the work was done: %+v", c.of("tok-1"))
			}
			f.deliver(q.next(t, s))
		}
		answers := c.of("tok-1")
		if len(answers) != 1 || answers[0].Next != recorder.NextDone {
			t.Fatalf("answers %+v; want one done", answers)
		}
		op := f.load(id)
		if op.State != operation.Succeeded || string(op.Result) != `{"rows":3}` || op.Lease != nil {
			t.Fatalf("state %s result %s lease %+v", op.State, op.Result, op.Lease)
		}
		if len(s.requests) != 3 || string(s.requests[1].State) != `{"cursor":1}` || string(s.requests[2].State) != `{"cursor":2}` {
			t.Fatalf("the worker got %+v", s.requests)
		}
		if q.function != worker {
			t.Fatalf("sent to %q", q.function)
		}
	})
}

// Lambda delivers at least once: a second delivery of a step's end, after the first or at
// the same time, records nothing and sends nothing.
func TestADeliveryTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		s := &script{answers: []any{`{"status":"continue","state":{"cursor":1}}`, `{"status":"succeeded"}`}, takes: time.Second}
		q, _ := f.parked(s)
		f.runWith("tok-1", recorder.Input{OperationID: id})
		d := q.next(t, s)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := f.rec.Deliver(context.Background(), d); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		version := f.load(id).Version
		f.deliver(d) // and once more, late
		if q.pending() != 1 {
			t.Fatalf("step 2 was sent %d times; want once", q.pending())
		}
		if v := f.load(id).Version; v != version {
			t.Fatalf("a late duplicate changed the operation: version %d → %d", version, v)
		}
	})
}

// The workflow retries a Run whose task failed after it sent its step (the recorder was
// killed before it returned): the retried Run takes the step over with its own token and
// sends nothing, and the step's end answers the task that now waits.
func TestARetriedRunTakesTheStepOver(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		s := &script{answers: []any{`{"status":"succeeded","result":{"ok":true}}`}}
		q, c := f.parked(s)
		f.runWith("tok-1", recorder.Input{OperationID: id})
		if d := f.runWith("tok-2", recorder.Input{OperationID: id}); d.Next != recorder.NextParked {
			t.Fatalf("the retried Run: %+v", d)
		}
		if q.sends != 1 {
			t.Fatalf("the step was sent %d times", q.sends)
		}
		f.deliver(q.next(t, s))
		if len(c.of("tok-1")) != 0 || len(c.of("tok-2")) != 1 || c.of("tok-2")[0].Next != recorder.NextDone {
			t.Fatalf("answers: tok-1 %+v, tok-2 %+v", c.of("tok-1"), c.of("tok-2"))
		}
		if op := f.load(id); op.State != operation.Succeeded {
			t.Fatalf("state %s", op.State)
		}
	})
}

// A step Lambda never ran (refused when sent, or kept queued until it expired) records
// nothing: the step is offered again after a wait, in the operation's next execution, and
// the workflow hears that through its token.
func TestAStepNeverRunIsOfferedAgain(t *testing.T) {
	t.Parallel()
	for name, refuse := range map[string]bool{"refused when sent": true, "expired in the queue": false} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			id := f.newOp()
			s := &script{answers: []any{`{"status":"succeeded"}`}}
			q, c := f.parked(s)
			ex := f.rec.Executions.(*executions)
			if refuse {
				q.refuse = func(int) error {
					return &step.InvokeError{Name: step.ErrNotInvoked, Cause: "TooManyRequestsException: Rate exceeded"}
				}
				f.runWith("tok-1", recorder.Input{OperationID: id})
			} else {
				f.runWith("tok-1", recorder.Input{OperationID: id})
				d := recorder.Delivery{Function: worker, Request: q.sent[0],
					Error: &recorder.TaskError{Error: step.ErrNotInvoked, Cause: "EventAgeExceeded"}}
				q.sent = nil
				f.deliver(d)
			}
			answers := c.of("tok-1")
			if len(answers) != 1 || answers[0].Next != recorder.NextWait || answers[0].Refusals != 1 || answers[0].ContinuedIn != id+"-1" {
				t.Fatalf("answers %+v; want one wait after a refusal, handed on", answers)
			}
			if next := ex.last(t); !next.resume || next.input.Gate.Decision.Request.Step != 1 {
				t.Fatalf("the next execution: %+v", next)
			}
			op := f.load(id)
			if op.State != operation.Running || op.Progress != nil && op.Progress.CompletedSteps != 0 || op.InFlight(f.clock.Now()) != nil {
				t.Fatalf("state %s progress %+v lease %+v", op.State, op.Progress, op.Lease)
			}
		})
	}
}

// A sent step may wait in Lambda's queue as long as an event may live, then run for its
// stepTimeout: its lease lasts that long, so nobody records a stop while it may still land.
func TestAParkedLeaseCoversTheQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.rec.MaxEventAge = 15 * time.Minute
	id := f.newOp()
	f.parked(&script{})
	start := f.clock.Now()
	f.runWith("tok-1", recorder.Input{OperationID: id})
	l := f.load(id).Lease
	if l == nil || l.Until.Before(start.Add(15*time.Minute+30*time.Second)) {
		t.Fatalf("lease %+v; want one past the queue's 15 minutes and the step's 30 s", l)
	}
}

// A cancel asked for while a step is out is recorded once the step's end is: the workflow
// hears done, and the step's end stands recorded before it.
func TestACancelDuringAParkedStepEndsAtTheNextGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	s := &script{answers: []any{`{"status":"continue","progress":{"message":"half"}}`}}
	q, c := f.parked(s)
	f.runWith("tok-1", recorder.Input{OperationID: id})
	dynamotest.Cancel(t, f.store, id)
	f.deliver(q.next(t, s))
	if a := c.of("tok-1"); len(a) != 1 || a[0].Next != recorder.NextDone {
		t.Fatalf("answers %+v", a)
	}
	op := f.load(id)
	if op.State != operation.Canceled || op.Progress == nil || op.Progress.CompletedSteps != 1 || q.pending() != 0 {
		t.Fatalf("state %s progress %+v pending %d", op.State, op.Progress, q.pending())
	}
}

// An execution stopped behind the recorder's back goes no further: the step out ends and is
// recorded, no next step is sent, and no lease is left for the reconciler to wait out.
func TestAStoppedExecutionSendsNoMoreSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	s := &script{answers: []any{`{"status":"continue","progress":{"message":"one"}}`, `{"status":"succeeded"}`}}
	q, c := f.parked(s)
	f.runWith("tok-1", recorder.Input{OperationID: id})
	c.stopped = map[string]bool{"tok-1": true}
	f.deliver(q.next(t, s))
	op := f.load(id)
	if q.pending() != 0 || op.State != operation.Running || op.Progress == nil || op.Progress.CompletedSteps != 1 || op.Lease != nil {
		t.Fatalf("pending %d, state %s, progress %+v, lease %+v", q.pending(), op.State, op.Progress, op.Lease)
	}
	if c.beats != 1 {
		t.Fatalf("%d heartbeats; want one before the second step", c.beats)
	}
}

// A parked Run asks its task token whether its execution still runs before it hands the
// work on (a heartbeat, not DescribeExecution, whose bucket the reconciler needs): one
// stopped behind its back starts no next execution.
func TestAStoppedExecutionHandsNothingOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	s := &script{answers: []any{`{"status":"continue","delaySeconds":60}`}}
	q, c := f.parked(s)
	f.runWith("tok-1", recorder.Input{OperationID: id})
	ex := f.rec.Executions.(*executions) // DescribeExecution would call it running
	c.stopped = map[string]bool{"tok-1": true}
	f.deliver(q.next(t, s))
	if len(ex.started) != 0 {
		t.Fatalf("a stopped execution handed on to %+v", ex.started)
	}
	if a := c.of("tok-1"); len(a) != 0 {
		t.Fatalf("answered %+v", a)
	}
}

// Steps that end within SyncBelow of going out are not worth a send, a delivery and a claim
// each: the delivery of a fast step invokes the next ones itself, as a waiting Run does,
// until one is slow, which sends the step after it asynchronously again. Either way each
// step runs once, and a late second delivery of a step already taken sends nothing.
func TestFastStepsRunInTheDeliverysInvocation(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		id := f.newOp()
		s := &script{answers: []any{
			`{"status":"continue","state":{"n":1}}`,
			`{"status":"continue","state":{"n":2}}`,
			`{"status":"continue","state":{"n":3}}`,
		}, slow: map[int]bool{2: true}}
		q, c := f.parked(s)
		f.runWith("tok-1", recorder.Input{OperationID: id})
		first := q.next(t, s) // step 1, fast
		f.deliver(first)
		// Step 2 ran in the delivery's invocation and was slow: step 3 went out.
		if len(s.requests) != 2 || q.pending() != 1 || len(c.of("tok-1")) != 0 {
			t.Fatalf("requests %d, pending %d, answers %v", len(s.requests), q.pending(), c.of("tok-1"))
		}
		f.deliver(first) // late: taken already
		if q.pending() != 1 || len(s.requests) != 2 {
			t.Fatalf("a late delivery ran or sent more: requests %d, pending %d", len(s.requests), q.pending())
		}
		f.deliver(q.next(t, s))
		if len(s.requests) != 3 || string(s.requests[2].State) != `{"n":2}` || len(c.of("tok-1")) != 1 {
			t.Fatalf("requests %+v, answers %v", s.requests, c.of("tok-1"))
		}
	})
}
