package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/time/rate"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// AdvanceTo moves the clock to t, never back: goroutines that wait for later tokens each
// move it to their own time, and the latest wins, as on a real clock.
func (c *clock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}

// pace gives the reconciler a budget, a concurrency and a StartExecution limiter of perSecond
// (burst 1, as the function makes it), and a sleep that moves the fixture's clock: pacing
// costs the test no time, and the clock says how long the run would have taken.
func (f *fixture) pace(perSecond float64, budget time.Duration, concurrency int) {
	f.r.Budget, f.r.Concurrency = budget, concurrency
	f.r.Starts = rate.NewLimiter(rate.Limit(perSecond), 1)
	f.r.SleepUntil = func(_ context.Context, t time.Time) error { f.clock.AdvanceTo(t); return nil }
}

// acceptedMany admits n operations, eight at a time, and returns their ids.
func (f *fixture) acceptedMany(n int) []string {
	f.t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				ids[i] = f.accepted()
			}
		})
	}
	wg.Wait()
	return ids
}

// states counts ids by state.
func (f *fixture) states(ids []string) map[operation.State]int {
	f.t.Helper()
	out := map[operation.State]int{}
	for _, id := range ids {
		out[f.load(id).State]++
	}
	return out
}

// due is what the due index holds now, by id.
func (f *fixture) due() map[string]reconcile.DueItem {
	f.t.Helper()
	items, err := f.store.Due(context.Background(), f.clock.Now(), 10_000)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]reconcile.DueItem{}
	for _, item := range items {
		out[item.ID] = item
	}
	return out
}

// A backlog of 300 accepted operations drains in one run when the budget and the rate allow
// it: page after page, paced, ten pages of 30 and a last one that finds nothing. The clock
// says the run took what the rate makes of 300 dispatches, within its budget. (docs/capacity.md
// quotes the same arithmetic for 1,000: 6.7 s at 150/s.)
func TestABacklogDrainsInOneRun(t *testing.T) {
	t.Parallel()
	const backlog = 300
	f := newFixture(t)
	f.r.MaxPerRun = 30
	ids := f.acceptedMany(backlog)
	f.clock.Advance(leases.Dispatch + time.Second)
	f.pace(150, 45*time.Second, 8)
	start := f.clock.Now()
	sum := f.run()
	if sum.Dispatched != backlog || sum.Examined != backlog || sum.Errors != 0 || sum.Deferred != 0 || sum.End != reconcile.EndDrained || sum.Pages != 11 {
		t.Fatalf("%+v; want all %d dispatched in 11 pages", sum, backlog)
	}
	if got := f.states(ids); got[operation.Dispatched] != backlog || len(f.exec.Executions()) != backlog || f.exec.Starts() != backlog {
		t.Fatalf("states %v, %d executions from %d starts", got, len(f.exec.Executions()), f.exec.Starts())
	}
	// 300 tokens at 150/s, the first at once: 299/150 s (to a millisecond: the limiter counts
	// in floating point).
	if took := f.clock.since(start); took < 1993*time.Millisecond || took > 1994*time.Millisecond {
		t.Fatalf("the run took %s by its clock; want 1.993 s", took)
	}
}

// Only budget × rate dispatches fit in a run when the backlog is bigger: the run stops at its
// budget (reconcile.Drain's arithmetic, which docs/capacity.md quotes), leaves the rest due as
// they were, and the next run goes on with them. Four at a time changes nothing in the count.
func TestARunDispatchesWhatItsBudgetAndRateAllow(t *testing.T) {
	t.Parallel()
	const backlog = 120 // more than a run's 50
	f := newFixture(t)
	f.r.MaxPerRun = 100
	ids := f.acceptedMany(backlog)
	f.clock.Advance(leases.Dispatch + time.Second)
	f.pace(20, 2500*time.Millisecond, 4)
	want := reconcile.Drain{Rate: 20, Budget: 2500 * time.Millisecond, Period: time.Minute}.PerRun()
	if want != 50 {
		t.Fatalf("Drain says %d a run; want 50", want)
	}
	start := f.clock.Now()
	sum := f.run()
	if sum.Dispatched != want || sum.End != reconcile.EndBudget || sum.Errors != 0 || sum.Pages != 1 {
		t.Fatalf("%+v; want %d dispatched, the budget spent", sum, want)
	}
	// Each worker holding an operation when the budget ran out leaves it due, untouched.
	if sum.Deferred < 1 || sum.Deferred > 4 || sum.Examined != sum.Dispatched+sum.Deferred {
		t.Fatalf("%+v; want 1 to 4 deferred, every examined one dispatched or deferred", sum)
	}
	if took := f.clock.since(start); took >= 2500*time.Millisecond {
		t.Fatalf("dispatching took %s by the clock, past the budget", took)
	}
	due := f.due()
	if got := f.states(ids); got[operation.Dispatched] != want || got[operation.Accepted] != backlog-want || len(due) != backlog-want {
		t.Fatalf("states %v, %d due; want the rest accepted and due", got, len(due))
	}
	for id, item := range due {
		if item.Attempts != 0 {
			t.Fatalf("%s was left with %d attempts; the budget is not the operation's failure", id, item.Attempts)
		}
	}
	f.clock.Advance(time.Minute)
	if sum := f.run(); sum.Dispatched != want {
		t.Fatalf("the next run: %+v; want %d more", sum, want)
	}
	if n := len(f.exec.Executions()); n != 2*want {
		t.Fatalf("%d executions after two runs", n)
	}
}

// Pacing asks the StartExecution limiter for exactly one token per execution a run starts
// (a dispatch, a continuation) and none for a look; the DescribeExecution limiter for one per
// look and none for a start. Limiters that never refill show the count.
func TestPacingTakesOneTokenPerCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range 10 {
		f.accepted()
	}
	for range 4 {
		f.started(true) // running, looked at and left alone
	}
	continued := f.started(true) // ended handing on to its next execution: looked at, then continued
	f.finish(continued, reconcile.Succeeded, []byte(`{"operationId":"`+continued+`","recordError":{"Error":"Lambda.TooManyRequestsException"}}`))
	f.clock.Advance(leases.Check + time.Second)
	f.r.Starts, f.r.Looks = rate.NewLimiter(0, 1000), rate.NewLimiter(0, 1000)
	f.r.Budget = 45 * time.Second
	sum := f.run()
	if sum.Dispatched != 10 || sum.Rescheduled != 4 || sum.Continued != 1 || sum.Errors != 0 {
		t.Fatalf("%+v", sum)
	}
	now := f.clock.Now()
	if starts, looks := f.r.Starts.TokensAt(now), f.r.Looks.TokensAt(now); starts != 1000-11 || looks != 1000-5 {
		t.Fatalf("tokens taken: %v starts, %v looks; want 11 (10 dispatches, 1 continuation) and 5 (the running ones)", 1000-starts, 1000-looks)
	}
}

// throttleAfter makes the fake executor's starts succeed n times and then answer as Step
// Functions does when its bucket is empty (after the SDK's retries): dispatch.ErrThrottled.
// Later starts would succeed again: a run that tried once more would be seen. It returns the
// count of start calls.
func (f *fixture) throttleAfter(n int64) *atomic.Int64 {
	var calls atomic.Int64
	f.exec.BeforeStart = func(string) error {
		if calls.Add(1) == n+1 {
			return fmt.Errorf("start execution: %w: ThrottlingException: Rate exceeded", dispatch.ErrThrottled)
		}
		return nil
	}
	return &calls
}

// A throttled dispatch stops the run's dispatching: the operations it would have dispatched
// are left due now, their attempts as they were (an error would back them off), the running
// ones are still looked at, and the run says so in its summary, its log line and its metrics.
// The next run dispatches what was left.
func TestAThrottledDispatchStopsTheRunsDispatching(t *testing.T) {
	f := newFixture(t)
	var logs bytes.Buffer
	f.r.Log = slog.New(lambdalog.New(&logs, "longrun-reconciler", slog.LevelInfo))
	enc, metrics := emftest.Encoder(t, "longrun-reconciler", f.clock.Now)
	f.r.Metrics = enc
	f.r.MaxPerRun = 100
	accepted := f.acceptedMany(30)
	var running []string
	for range 3 {
		running = append(running, f.started(true))
	}
	f.clock.Advance(leases.Check + time.Second)
	f.pace(150, 45*time.Second, 1)
	calls := f.throttleAfter(5)

	sum := f.run()
	if sum.Dispatched != 5 || sum.Deferred != 25 || sum.Rescheduled != 3 || sum.Errors != 0 || sum.Examined != 33 ||
		sum.End != reconcile.EndThrottled || !slices.Equal(sum.Throttled, []string{"StartExecution"}) {
		t.Fatalf("%+v; want 5 dispatched, 25 deferred, the 3 running looked at", sum)
	}
	if calls.Load() != 6 {
		t.Fatalf("%d start calls; want none after the throttled sixth", calls.Load())
	}
	due := f.due()
	left := 0
	for _, id := range accepted {
		if f.load(id).State != operation.Accepted {
			continue
		}
		left++
		if item, ok := due[id]; !ok || item.Attempts != 0 {
			t.Fatalf("%s: due %v, %+v; want it due now with its attempts untouched", id, ok, item)
		}
	}
	for _, id := range running {
		if _, ok := due[id]; ok || f.load(id).State != operation.Running {
			t.Fatalf("%s: still due %v; want it looked at and rescheduled", id, ok)
		}
	}
	if left != 25 {
		t.Fatalf("%d left accepted; want 25", left)
	}

	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		if m["message"] == "run" {
			line = m
		}
	}
	if line == nil || line["deferred"] != float64(25) || line["end"] != "throttled" || fmt.Sprint(line["throttled"]) != "[StartExecution]" || line["pages"] != float64(1) {
		t.Fatalf("the run's line: %v", line)
	}
	points, err := emftest.Parse(metrics.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	repairs := map[string]float64{}
	for _, p := range points {
		if p.Name == "Repairs" {
			repairs[p.Dims["Action"]] += p.Value
		}
	}
	if repairs["deferred"] != 25 || repairs["dispatched"] != 5 || repairs["error"] != 0 {
		t.Fatalf("Repairs %v", repairs)
	}

	// The bucket refilled by the next run.
	f.exec.BeforeStart = nil
	f.clock.Advance(time.Minute)
	if sum := f.run(); sum.Dispatched != 25 || sum.End != reconcile.EndDrained {
		t.Fatalf("the next run: %+v", sum)
	}
	if got := f.states(accepted); got[operation.Dispatched] != 30 {
		t.Fatalf("states %v", got)
	}
}

// After a throttle the run reads no further page: the rest of the index is, oldest first,
// more of the backlog, which it would only leave due again.
func TestAThrottledRunReadsNoFurtherPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.r.MaxPerRun = 10
	f.acceptedMany(30)
	f.clock.Advance(leases.Dispatch + time.Second)
	f.pace(150, 45*time.Second, 1)
	calls := f.throttleAfter(0)
	sum := f.run()
	if sum.Pages != 1 || sum.Examined != 10 || sum.Deferred != 10 || sum.Dispatched != 0 || calls.Load() != 1 || sum.End != reconcile.EndThrottled {
		t.Fatalf("%+v after %d start calls; want one page, one call", sum, calls.Load())
	}
	if len(f.due()) != 30 {
		t.Fatal("operations left the index")
	}
}

// throttledLooks is the fake executor whose looks (DescribeExecution) are throttled.
type throttledLooks struct {
	reconcile.Executions
	calls atomic.Int64
}

func (e *throttledLooks) Describe(context.Context, string, string) (reconcile.Execution, error) {
	e.calls.Add(1)
	return reconcile.Execution{}, fmt.Errorf("describe execution: %w", dispatch.ErrThrottled)
}

func (e *throttledLooks) DescribeRef(context.Context, string) (reconcile.Execution, error) {
	e.calls.Add(1)
	return reconcile.Execution{}, fmt.Errorf("describe execution: %w", dispatch.ErrThrottled)
}

// A throttled look stops the run's looks, not its dispatches: DescribeExecution is another
// bucket. The running operations are left due, their attempts untouched.
func TestAThrottledLookStopsOnlyTheLooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	looks := &throttledLooks{Executions: f.exec}
	f.r.Executions = looks
	for range 3 {
		f.started(true)
	}
	for range 4 {
		f.accepted()
	}
	f.clock.Advance(leases.Check + time.Second)
	f.pace(150, 45*time.Second, 1)
	sum := f.run()
	if sum.Dispatched != 4 || sum.Deferred != 3 || sum.Rescheduled != 0 || sum.Errors != 0 || looks.calls.Load() != 1 ||
		!slices.Equal(sum.Throttled, []string{"DescribeExecution"}) {
		t.Fatalf("%+v after %d looks; want the dispatches made, one look, the running deferred", sum, looks.calls.Load())
	}
	for id, item := range f.due() {
		if item.Attempts != 0 {
			t.Fatalf("%s has %d attempts", id, item.Attempts)
		}
	}
}

// Issue: a stream batch whose StartExecution stays throttled is retried by the mapping and
// then given up on (its description goes to the dead-letter queue). Nothing is lost: the
// function never dead-letters the record itself, the operation stays accepted, and it is due
// for the reconciler at its dispatch lease after admission, which dispatches it in the next
// run once Step Functions has tokens again.
func TestAStreamRecordThrottledUntilTheMappingGivesUpIsDispatchedByTheReconciler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	letters := &recordedLetters{}
	d, err := dispatch.New(dispatch.Dispatcher{Store: f.store, Executor: f.exec, Registry: optype.Builtin(), DeadLetters: letters,
		Now: f.clock.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Accepted: dynamo.OutboxOperation})
	if err != nil {
		t.Fatal(err)
	}
	id := f.accepted()
	created := f.load(id).CreatedAt
	f.exec.BeforeStart = func(string) error {
		return fmt.Errorf("start execution: %w: ThrottlingException: Rate exceeded", dispatch.ErrThrottled)
	}
	for attempt := 0; attempt <= eventsource.Dispatcher().MaxRetries; attempt++ {
		resp := f.redeliver(d, id)
		if len(resp.BatchItemFailures) != 1 {
			t.Fatalf("attempt %d: %+v; want the record retried", attempt, resp)
		}
	}
	if n := letters.count(); n != 0 || f.load(id).State != operation.Accepted {
		t.Fatalf("%d dead letters, %s; want none, still accepted", n, f.load(id).State)
	}
	f.exec.BeforeStart = nil
	f.clock.Set(created.Add(leases.Dispatch - time.Second))
	if _, ok := f.due()[id]; ok {
		t.Fatal("due before its dispatch lease")
	}
	f.clock.Set(created.Add(leases.Dispatch))
	if _, ok := f.due()[id]; !ok {
		t.Fatal("not due at its dispatch lease")
	}
	f.pace(150, 45*time.Second, 1)
	if sum := f.run(); sum.Dispatched != 1 || f.load(id).State != operation.Dispatched || len(f.exec.Executions()) != 1 {
		t.Fatalf("%+v, %s", sum, f.load(id).State)
	}
}

// redeliver hands d the stream record of id's accepted fact, as the mapping does.
func (f *fixture) redeliver(d *dispatch.Dispatcher, id string) (resp struct {
	BatchItemFailures []string
}) {
	f.t.Helper()
	out, err := d.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{dynamotest.FactRecord(id, "accepted", "100")}})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, failure := range out.BatchItemFailures {
		resp.BatchItemFailures = append(resp.BatchItemFailures, failure.ItemIdentifier)
	}
	return resp
}

// recordedLetters keeps the dead letters sent.
type recordedLetters struct {
	mu  sync.Mutex
	got []dispatch.DeadLetter
}

func (l *recordedLetters) Send(_ context.Context, letter dispatch.DeadLetter) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, letter)
	return nil
}

func (l *recordedLetters) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.got)
}

// A wait for a token that the invocation's end cuts short is no operation's failure either:
// the run ends there, and what it did not dispatch stays due, its attempts untouched.
func TestAWaitCutShortEndsTheRunWithoutFailingWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := f.acceptedMany(3)
	f.clock.Advance(leases.Dispatch + time.Second)
	f.pace(1, 45*time.Second, 1)
	f.r.SleepUntil = func(context.Context, time.Time) error { return context.DeadlineExceeded }
	sum := f.run()
	if sum.Dispatched != 1 || sum.Deferred != 1 || sum.Examined != 2 || sum.Errors != 0 || sum.End != reconcile.EndBudget {
		t.Fatalf("%+v; want one dispatched at once, the next deferred when its wait was cut short", sum)
	}
	due := f.due()
	for _, id := range ids {
		if f.load(id).State == operation.Dispatched {
			continue
		}
		if item, ok := due[id]; !ok || item.Attempts != 0 {
			t.Fatalf("%s: due %v %+v; want it due, attempts untouched", id, ok, item)
		}
	}
}
