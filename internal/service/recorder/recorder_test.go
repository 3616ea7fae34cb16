package recorder_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/service/recorder"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"

	"crypto/rand"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// A type defined only here: three steps at most, a 10-minute deadline, 30 s steps, waits
// of 20 s when the worker asks for one.
const testTypes = `
types:
  - name: test.poll
    version: 3
    description: A type for the recorder's tests.
    worker: test-poll
    deadline: 10m
    stepTimeout: 30s
    maxSteps: 3
    stepDelay: 20s
    target: "poll:{/name}"
    input:
      type: object
      additionalProperties: false
      required: [name]
      properties:
        name: {type: string}
        mode: {type: string, default: fast}
    signals:
      go:
        senders: [caller, operator]
        callback: true
        schema: {type: object, properties: {n: {type: integer}}}
  - name: test.long
    version: 1
    description: A type whose work may wait for hours.
    worker: test-poll
    deadline: 48h
    stepTimeout: 30s
    maxSteps: 3
    target: "long:{/name}"
    input:
      type: object
      additionalProperties: false
      required: [name]
      properties:
        name: {type: string}
`

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type fixture struct {
	t     *testing.T
	store *dynamo.Store
	clock *clock
	rec   *recorder.Recorder
	admit *admission.Service
	n     int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client, _ := dynamotest.NewClient(t)
	return newFixtureOn(t, client)
}

// eachStore runs test with this package's fixture on each store (dynamotest.EachStore).
func eachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	dynamotest.EachStore(t, func(t *testing.T, client *dynamodb.Client) { test(t, newFixtureOn(t, client)) })
}

func newFixtureOn(t *testing.T, client *dynamodb.Client) *fixture {
	t.Helper()
	file, err := optype.Parse("test.types.yaml", []byte(testTypes))
	if err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, dynamotest.NewTable(t, client))
	c := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	gen := &ids.Generator{Now: c.Now, Entropy: rand.Reader}
	return &fixture{t: t, store: store, clock: c,
		rec: &recorder.Recorder{Store: store, Registry: file.Registry(true), Now: c.Now, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
			Seals: testSealer(t)},
		admit: &admission.Service{Store: store, Registry: file.Registry(true), Now: c.Now, NewID: gen.Operation}}
}

func (f *fixture) newOp() string {
	f.t.Helper()
	f.n++
	out, err := f.admit.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
		Key: "k" + string(rune('a'+f.n)), MediaType: "application/json", Body: []byte(`{"type":"test.poll","input":{"name":"n` + string(rune('a'+f.n)) + `"}}`)})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.Record.OperationID
}

func (f *fixture) handle(in recorder.Input) recorder.Decision {
	f.t.Helper()
	d, err := f.rec.Handle(context.Background(), in)
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// after is the workflow's state after the worker answered report to the request d.
func after(d recorder.Decision, report string) recorder.Input {
	return recorder.Input{Gate: &recorder.Gate{Decision: &d}, Task: &recorder.Task{Report: json.RawMessage(report)}}
}

func (f *fixture) load(id string) operation.Operation { return dynamotest.Load(f.t, f.store, id) }

func TestFirstStepRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	d := f.handle(recorder.Input{OperationID: id})
	op := f.load(id)
	if d.Next != recorder.NextWork || d.StepTimeoutSeconds != 30 || op.State != operation.Running || !op.Started {
		t.Fatalf("decision %+v, state %s", d, op.State)
	}
	r := d.Request
	if r.Protocol != step.Protocol || r.OperationID != id || r.Type != "test.poll" || r.Version != 3 || r.Step != 1 || r.MaxSteps != 3 ||
		r.StepTimeoutSeconds != 30 || len(r.State) != 0 || r.Deadline != operation.FormatTime(op.CreatedAt.Add(10*time.Minute)) {
		t.Fatalf("request %+v", r)
	}
	if string(r.Input) != `{"mode":"fast","name":"nb"}` && !strings.Contains(string(r.Input), `"mode":"fast"`) {
		t.Fatalf("the schema's defaults must reach the worker: %s", r.Input)
	}
	// The workflow retries the recorder: the same input records nothing more.
	again := f.handle(recorder.Input{OperationID: id})
	if f.load(id).Version != op.Version || again.Request.Step != 1 {
		t.Fatalf("a retried first call must be idempotent: %+v v%d→v%d", again, op.Version, f.load(id).Version)
	}
}

func TestContinueCarriesStateAndRecordsProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	d1 := f.handle(recorder.Input{OperationID: id})
	d2 := f.handle(after(d1, `{"status":"continue","state":{"cursor":7},"progress":{"totalSteps":3,"message":"one"}}`))
	op := f.load(id)
	if d2.Next != recorder.NextWork || d2.Request.Step != 2 || string(d2.Request.State) != `{"cursor":7}` {
		t.Fatalf("decision %+v", d2)
	}
	if p := op.Progress; p == nil || p.CompletedSteps != 1 || p.TotalSteps != 3 || p.Message != "one" || op.State != operation.Running {
		t.Fatalf("progress %+v", op.Progress)
	}
	// A retried call after the same report records no second progress fact.
	f.handle(after(d1, `{"status":"continue","state":{"cursor":7},"progress":{"totalSteps":3,"message":"one"}}`))
	if f.load(id).Version != op.Version {
		t.Fatal("the same report was recorded twice")
	}
	d3 := f.handle(after(*f.decisionFor(d2), `{"status":"succeeded","result":{"url":"https://x"},"progress":{"totalSteps":3}}`))
	op = f.load(id)
	if d3.Next != recorder.NextDone || op.State != operation.Succeeded || string(op.Result) != `{"url":"https://x"}` || op.Progress.CompletedSteps != 2 {
		t.Fatalf("decision %+v op %s %s %+v", d3, op.State, op.Result, op.Progress)
	}
	// After the end nothing more is recorded or run, whatever arrives.
	if d := f.handle(after(d2, `{"status":"failed","problem":{"code":"late","title":"Late"}}`)); d.Next != recorder.NextDone || f.load(id).State != operation.Succeeded {
		t.Fatalf("a late report changed a settled operation: %+v", d)
	}
}

func (f *fixture) decisionFor(d recorder.Decision) *recorder.Decision { return &d }

func TestWaitsArePausesWithIntentCheckedAfterEach(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	d1 := f.handle(recorder.Input{OperationID: id})
	w := f.handle(after(d1, `{"status":"continue","wait":true}`))
	if w.Next != recorder.NextWait || w.WaitSeconds != 20 || w.Request.Step != 2 {
		t.Fatalf("wait: the type's stepDelay (20 s) applies: %+v", w)
	}
	f.clock.Add(20 * time.Second)
	if d := f.handle(recorder.Input{Gate: &recorder.Gate{Decision: &w}}); d.Next != recorder.NextWork || d.Request.Step != 2 {
		t.Fatalf("after the pause the step runs: %+v", d)
	}
	// An explicit delay longer than a pause is taken in pauses of at most step.MaxPause.
	id2 := f.newOp()
	e1 := f.handle(recorder.Input{OperationID: id2})
	long := f.handle(after(e1, `{"status":"continue","delaySeconds":420,"wait":true}`))
	if long.Next != recorder.NextWait || long.WaitSeconds != int(step.MaxPause/time.Second) {
		t.Fatalf("long wait: %+v", long)
	}
	f.clock.Add(step.MaxPause)
	rest := f.handle(recorder.Input{Gate: &recorder.Gate{Decision: &long}})
	if rest.Next != recorder.NextWait || rest.WaitSeconds != 120 || rest.ResumeAt != long.ResumeAt {
		t.Fatalf("the rest of the wait: %+v", rest)
	}
	// A cancel during the wait is honoured when the pause ends: no further step runs.
	dynamotest.Cancel(t, f.store, id2)
	f.clock.Add(2 * time.Minute)
	if d := f.handle(recorder.Input{Gate: &recorder.Gate{Decision: &rest}}); d.Next != recorder.NextDone || f.load(id2).State != operation.Canceled {
		t.Fatalf("cancel during a wait: %+v %s", d, f.load(id2).State)
	}
	// A wait that would end past the deadline fails the operation now: no step can run after it.
	id3 := f.newOp()
	g1 := f.handle(recorder.Input{OperationID: id3})
	if d := f.handle(after(g1, `{"status":"continue","delaySeconds":3600}`)); d.Next != recorder.NextDone {
		t.Fatalf("%+v", d)
	}
	if op := f.load(id3); op.State != operation.Failed || op.Problem.Code != "deadline_exceeded" {
		t.Fatalf("%s %+v", op.State, op.Problem)
	}
}

func TestGateStopsTheWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name    string
		prepare func(id string, d1 recorder.Decision) recorder.Input
		state   operation.State
		code    string
	}{
		{"cancel before the next step", func(id string, d1 recorder.Decision) recorder.Input {
			dynamotest.Cancel(t, f.store, id)
			return after(d1, `{"status":"continue"}`)
		}, operation.Canceled, ""},
		{"deadline passed", func(id string, d1 recorder.Decision) recorder.Input {
			f.clock.Add(11 * time.Minute)
			return after(d1, `{"status":"continue"}`)
		}, operation.Failed, "deadline_exceeded"},
		{"more steps than maxSteps", func(id string, d1 recorder.Decision) recorder.Input {
			d2 := f.handle(after(d1, `{"status":"continue"}`))
			d3 := f.handle(after(d2, `{"status":"continue"}`))
			return after(d3, `{"status":"continue"}`)
		}, operation.Failed, "max_steps_exceeded"},
	}
	for _, tc := range cases {
		id := f.newOp()
		d1 := f.handle(recorder.Input{OperationID: id})
		if d := f.handle(tc.prepare(id, d1)); d.Next != recorder.NextDone {
			t.Errorf("%s: the work goes on: %+v", tc.name, d)
		}
		op := f.load(id)
		if op.State != tc.state || (tc.code != "" && (op.Problem == nil || op.Problem.Code != tc.code)) {
			t.Errorf("%s: %s %+v", tc.name, op.State, op.Problem)
		}
	}
}

// How a step ended, by every way the workflow can hand it over.
func TestStepEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name  string
		in    func(d recorder.Decision) recorder.Input
		state operation.State
		code  string
	}{
		{"failed report", func(d recorder.Decision) recorder.Input {
			return after(d, `{"status":"failed","problem":{"code":"quota_exhausted","title":"Quota exhausted","detail":"no room"}}`)
		}, operation.Failed, "quota_exhausted"},
		{"result lost", func(d recorder.Decision) recorder.Input { return after(d, `{"status":"outcome_unknown"}`) }, operation.OutcomeUnknown, "result_lost"},
		{"result lost, typed", func(d recorder.Decision) recorder.Input {
			return after(d, `{"status":"outcome_unknown","problem":{"code":"conn_reset","title":"Connection reset"}}`)
		}, operation.OutcomeUnknown, "conn_reset"},
		{"not a report", func(d recorder.Decision) recorder.Input { return after(d, `{"ok":true}`) }, operation.OutcomeUnknown, "invalid_report"},
		{"a member its status forbids", func(d recorder.Decision) recorder.Input {
			return after(d, `{"status":"failed","problem":{"code":"x","title":"X"},"result":{}}`)
		}, operation.OutcomeUnknown, "invalid_report"},
		{"timeout (Catch)", func(d recorder.Decision) recorder.Input {
			return recorder.Input{Gate: &recorder.Gate{Decision: &d}, Error: &recorder.TaskError{Error: "States.Timeout"}}
		}, operation.OutcomeUnknown, "step_timeout"},
		{"crash (Catch)", func(d recorder.Decision) recorder.Input {
			return recorder.Input{Gate: &recorder.Gate{Decision: &d}, Error: &recorder.TaskError{Error: "Runtime.ExitError", Cause: "boom"}}
		}, operation.OutcomeUnknown, "worker_error"},
		{"crash (error payload)", func(d recorder.Decision) recorder.Input {
			return after(d, `{"errorType":"Runtime.ExitError","errorMessage":"boom"}`)
		}, operation.OutcomeUnknown, "worker_error"},
	}
	for _, tc := range cases {
		id := f.newOp()
		d1 := f.handle(recorder.Input{OperationID: id})
		if d := f.handle(tc.in(d1)); d.Next != recorder.NextDone {
			t.Errorf("%s: %+v", tc.name, d)
		}
		op := f.load(id)
		if op.State != tc.state || op.Problem == nil || op.Problem.Code != tc.code {
			t.Errorf("%s: %s %+v", tc.name, op.State, op.Problem)
		}
	}
}

// A report whose only fault is text longer than the protocol allows (a problem's title or
// detail, a progress message) is recorded as the worker said, the text cut to its limit
// and ending with "…": a worker that echoes a caller's input must not let the caller send
// the operation to an operator (issue #20, 3). A report with any other fault besides is
// still not a report.
func TestOverLongTextInAReportIsCut(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := strings.Repeat
	cut := func(s string, limit int) string { return string([]rune(s)[:limit-1]) + "…" }
	detail := "The provisioner has no template \"" + long("x", 2000) + "\"."
	cases := []struct {
		name   string
		report string
		state  operation.State
		code   string
		title  string // "" for any
		detail string // the problem's, or the progress message for a continue
	}{
		{"failed, long detail", `{"status":"failed","problem":{"code":"unknown_template","title":"Unknown template","detail":` + quote(detail) + `}}`,
			operation.Failed, "unknown_template", "Unknown template", cut(detail, 2000)},
		{"failed, long title", `{"status":"failed","problem":{"code":"unknown_template","title":"` + long("é", 201) + `"}}`,
			operation.Failed, "unknown_template", cut(long("é", 201), 200), ""},
		{"failed, long progress message", `{"status":"failed","problem":{"code":"gone","title":"Gone"},"progress":{"message":"` + long("m", 500) + `"}}`,
			operation.Failed, "gone", "Gone", ""},
		{"result lost, long detail", `{"status":"outcome_unknown","problem":{"code":"conn_reset","title":"Connection reset","detail":"` + long("😀", 2001) + `"}}`,
			operation.OutcomeUnknown, "conn_reset", "Connection reset", cut(long("😀", 2001), 2000)},
		{"succeeded, long progress message", `{"status":"succeeded","result":{"ok":true},"progress":{"message":"` + long("m", 201) + `"}}`,
			operation.Succeeded, "", "", ""},
		{"continue, long progress message", `{"status":"continue","progress":{"message":"` + long("m", 201) + `"}}`,
			operation.Running, "", "", cut(long("m", 201), 200)},
		// Another fault as well: not a report.
		{"long detail and a bad code", `{"status":"failed","problem":{"code":"Unknown","title":"Unknown template","detail":"` + long("d", 2001) + `"}}`,
			operation.OutcomeUnknown, "invalid_report", "", ""},
		{"long detail and no title", `{"status":"failed","problem":{"code":"unknown_template","title":"","detail":"` + long("d", 2001) + `"}}`,
			operation.OutcomeUnknown, "invalid_report", "", ""},
		{"long detail and a member its status forbids", `{"status":"failed","problem":{"code":"unknown_template","title":"Unknown template","detail":"` + long("d", 2001) + `"},"result":{}}`,
			operation.OutcomeUnknown, "invalid_report", "", ""},
		{"long message and a percent out of range", `{"status":"succeeded","progress":{"percent":101,"message":"` + long("m", 201) + `"}}`,
			operation.OutcomeUnknown, "invalid_report", "", ""},
		{"long message that is not a string", `{"status":"continue","progress":{"message":[` + long(`"m",`, 300) + `"m"]}}`,
			operation.OutcomeUnknown, "invalid_report", "", ""},
	}
	for _, tc := range cases {
		id := f.newOp()
		d1 := f.handle(recorder.Input{OperationID: id})
		f.handle(after(d1, tc.report))
		op := f.load(id)
		if op.State != tc.state {
			t.Errorf("%s: %s %+v, want %s", tc.name, op.State, op.Problem, tc.state)
			continue
		}
		if tc.state == operation.Running {
			if op.Progress == nil || op.Progress.Message != tc.detail {
				t.Errorf("%s: progress %+v", tc.name, op.Progress)
			}
			continue
		}
		if tc.code == "" {
			continue
		}
		if p := op.Problem; p == nil || p.Code != tc.code || tc.title != "" && p.Title != tc.title || tc.detail != "" && p.Detail != tc.detail {
			t.Errorf("%s: problem %.300v", tc.name, p)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A step Lambda refused to invoke (the workflow's Catch names it as Step Functions does)
// never ran: nothing is recorded, and the same step is offered again after a wait.
func TestARefusedStepIsOfferedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.newOp()
	d1 := f.handle(recorder.Input{OperationID: id})
	before := f.load(id).Version
	in := recorder.Input{Gate: &recorder.Gate{Decision: &d1}, Error: &recorder.TaskError{Error: "Lambda.TooManyRequestsException", Cause: "Rate Exceeded."}}
	d := f.handle(in)
	if d.Next != recorder.NextWait || d.Request == nil || d.Request.Step != 1 || d.Refusals != 1 || d.WaitSeconds != 2 {
		t.Fatalf("%+v; want a 2 s wait before step 1 again", d)
	}
	if op := f.load(id); op.State != operation.Running || op.Version != before {
		t.Fatalf("a refusal recorded something: %s v%d → v%d", op.State, before, op.Version)
	}
	// The reconciler, reading an execution that ended there, records nothing (the step never
	// ran) and carries the work on in the next execution, which offers the step again; a
	// cancel asked for meanwhile ends it canceled at once.
	in.RecordError = &recorder.TaskError{Error: "States.TaskFailed", Cause: "table unavailable"}
	if fact, ok := recorder.Unrecorded(in, false); ok {
		t.Fatalf("a refusal has no outcome: %+v", fact)
	}
	if fact, ok := recorder.Unrecorded(in, true); !ok || fact.Kind != operation.KindCanceled {
		t.Fatalf("a refusal with a cancel asked for: %v %+v", ok, fact)
	}
	next, resume, ok := recorder.Resumption(in)
	if !ok || resume || next.Continuation != 1 || next.Error == nil {
		t.Fatalf("resumption %+v %v %v", next, resume, ok)
	}
	if d := f.handle(next); d.Next != recorder.NextWait || d.Request.Step != 1 || d.Refusals != 1 {
		t.Fatalf("the carried-on execution: %+v", d)
	}
}

// The same worker failure must give the same fact whether it arrived through a Catch (AWS)
// or as an error payload in the task result (kumo); the reconciler reads an Unrecorded
// execution's output the same way.
func TestOutcomeIsTheSameOnBothPaths(t *testing.T) {
	t.Parallel()
	d := recorder.Decision{Next: recorder.NextWork, Request: &step.Request{OperationID: "op_1", Step: 2}}
	viaCatch := recorder.Input{Gate: &recorder.Gate{Decision: &d}, Error: &recorder.TaskError{Error: "Runtime.ExitError", Cause: `{"errorMessage":"boom"}`}}
	viaPayload := after(d, `{"errorType":"Runtime.ExitError","errorMessage":"boom"}`)
	a, okA := recorder.Outcome(viaCatch)
	b, okB := recorder.Outcome(viaPayload)
	if !okA || !okB || a.Kind != operation.KindOutcomeUnknown {
		t.Fatalf("%+v %+v", a, b)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("paths differ:\n%s\n%s", ja, jb)
	}
	if _, ok := recorder.Outcome(after(d, `{"status":"continue"}`)); ok {
		t.Fatal("a continue is not an outcome")
	}
	if _, ok := recorder.Outcome(recorder.Input{OperationID: "op_1"}); ok {
		t.Fatal("no step ran: no outcome")
	}
	if f, ok := recorder.Outcome(after(d, `{"status":"succeeded"}`)); !ok || f.Kind != operation.KindSucceeded || string(f.Result) != `{}` {
		t.Fatalf("%+v", f)
	}
}

// The workflow retries the Gate state, and a retry may overlap the call it repeats (a
// timeout on an answer that was on its way). Racing calls with one input record each fact
// once and answer the same decision; a cancel racing the gate before the next step ends
// the work canceled, never with a step sent after the intent committed unnoticed. On plain
// DynamoDB Local and behind the conflict proxy.
func TestRacingGateCallsRecordOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, f *fixture) {
		race := func(n int, in recorder.Input) []recorder.Decision {
			out := make([]recorder.Decision, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := f.rec.Handle(context.Background(), in)
					if err != nil {
						t.Errorf("racer %d: %v", i, err)
					}
					out[i] = d
				}()
			}
			wg.Wait()
			return out
		}
		kinds := func(id string) map[operation.Kind]int {
			facts, err := f.store.Facts(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			n := map[operation.Kind]int{}
			for _, fa := range facts {
				n[fa.Kind]++
			}
			return n
		}
		id := f.newOp()
		firsts := race(6, recorder.Input{OperationID: id})
		for _, d := range firsts {
			if d.Next != recorder.NextWork || d.Request.Step != 1 {
				t.Fatalf("first step: %+v", d)
			}
		}
		if k := kinds(id); k[operation.KindStarted] != 1 {
			t.Fatalf("started %d times", k[operation.KindStarted])
		}
		seconds := race(6, after(firsts[0], `{"status":"continue","state":{"n":1}}`))
		for _, d := range seconds {
			if d.Next != recorder.NextWork || d.Request.Step != 2 || string(d.Request.State) != `{"n":1}` {
				t.Fatalf("second step: %+v", d)
			}
		}
		if k := kinds(id); k[operation.KindProgress] != 1 {
			t.Fatalf("step 1's progress recorded %d times", k[operation.KindProgress])
		}
		race(6, after(seconds[0], `{"status":"succeeded","result":{"ok":true}}`))
		if k, op := kinds(id), f.load(id); k[operation.KindSucceeded] != 1 || op.State != operation.Succeeded {
			t.Fatalf("succeeded %d times, state %s", k[operation.KindSucceeded], op.State)
		}

		// A cancel racing the gate after step 1.
		id2 := f.newOp()
		d1 := f.handle(recorder.Input{OperationID: id2})
		var wg sync.WaitGroup
		var d2 recorder.Decision
		wg.Add(2)
		go func() { defer wg.Done(); dynamotest.Cancel(t, f.store, id2) }()
		go func() {
			defer wg.Done()
			d, err := f.rec.Handle(context.Background(), after(d1, `{"status":"continue"}`))
			if err != nil {
				t.Error(err)
			}
			d2 = d
		}()
		wg.Wait()
		switch op := f.load(id2); {
		case d2.Next == recorder.NextDone && op.State == operation.Canceled:
		case d2.Next == recorder.NextWork && op.State == operation.Cancelling:
			// The gate committed first and sent step 2; the next gate ends it.
			if d := f.handle(after(d2, `{"status":"continue"}`)); d.Next != recorder.NextDone || f.load(id2).State != operation.Canceled {
				t.Fatalf("after the raced step: %+v %s", d, f.load(id2).State)
			}
		default:
			t.Fatalf("decision %+v with state %s", d2, op.State)
		}
	})
}

// A step's real end that comes after outcome_unknown was recorded (the reconciler stopped
// the execution while the step was in flight, say) is recorded: the fold lets succeeded
// and failed settle an unknown outcome. A step that asks to continue goes no further.
func TestARealEndAfterAnUnknownOutcomeIsRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	unknown := func(id string) {
		t.Helper()
		if _, err := f.store.Append(context.Background(), f.load(id), operation.Fact{Kind: operation.KindOutcomeUnknown,
			Source: operation.SourceReconciler, At: f.clock.Now(),
			Problem: operation.NewProblem("deadline_exceeded", "Outcome unknown", "stopped")}); err != nil {
			t.Fatal(err)
		}
	}
	id := f.newOp()
	d := f.handle(recorder.Input{OperationID: id})
	unknown(id)
	if next := f.handle(after(d, `{"status":"succeeded","result":{"rows":7}}`)); next.Next != recorder.NextDone {
		t.Fatalf("%+v", next)
	}
	if op := f.load(id); op.State != operation.Succeeded || string(op.Result) != `{"rows":7}` {
		t.Fatalf("%s %s; want the real end, succeeded", op.State, op.Result)
	}
	id2 := f.newOp()
	d2 := f.handle(recorder.Input{OperationID: id2})
	unknown(id2)
	v := f.load(id2).Version
	if next := f.handle(after(d2, `{"status":"continue"}`)); next.Next != recorder.NextDone || f.load(id2).Version != v {
		t.Fatalf("a continue after outcome_unknown went on: %+v, v%d → v%d", next, v, f.load(id2).Version)
	}
}
