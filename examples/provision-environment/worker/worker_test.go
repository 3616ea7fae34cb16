package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/worker"

	"example.com/provision-environment/provisioner"
)

// run drives the step function as longrun does, with worker.Run: one step at a time, each
// given the state the last one carried, until a step does not continue.
func run(t *testing.T, p provisioner.Provisioner, in Input) ([]worker.Report, worker.Report) {
	t.Helper()
	input, _ := json.Marshal(in)
	req := worker.Request{Protocol: worker.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Type: "provision.environment",
		Version: 1, Input: input, MaxSteps: 200, Deadline: time.Now().Add(2 * time.Hour), StepTimeoutSeconds: 300}
	var steps []worker.Report
	for n := 1; n <= 20; n++ {
		req.Step = n
		rep, err := worker.Run(context.Background(), Steps(p), req)
		if err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		if rep.Status() != worker.StatusContinue {
			return steps, rep
		}
		steps = append(steps, rep)
		req.State = rep.State()
	}
	t.Fatal("never ended")
	return nil, worker.Report{}
}

func TestProvisionsWithProgressAndPolling(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 3}
	steps, last := run(t, fake, Input{Project: "shop", Environment: "qa-1", Template: "small"})
	if last.Status() != worker.StatusSucceeded || string(last.Result()) != `{"url":"https://qa-1.shop.example.test"}` {
		t.Fatalf("%s %s", last.Status(), last.Result())
	}
	// Request, three polls (the first two not ready yet, each asking to wait), then done.
	if len(steps) != 4 {
		t.Fatalf("%d steps before the last, want 4", len(steps))
	}
	for i, rep := range steps {
		if p := rep.Progress(); p == nil || p.Percent == nil || p.Message == "" {
			t.Errorf("step %d reports no progress", i+1)
		}
		if want := i == 1 || i == 2; rep.WaitsStepDelay() != want {
			t.Errorf("step %d waits %v, want %v: polls wait the type's stepDelay, never sleep", i+1, rep.WaitsStepDelay(), want)
		}
	}
	// The operation id is the provisioner's deduplication key: one environment.
	if fake.Creates() != 1 || len(fake.Keys()) != 1 || fake.Keys()[0] != "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3" {
		t.Fatalf("creates %d, keys %v", fake.Creates(), fake.Keys())
	}
}

// A step delivered twice (longrun's delivery is at least once) creates one environment.
func TestTheFirstStepTwiceCreatesOne(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 1}
	in := Input{Project: "shop", Environment: "qa-2", Template: "small"}
	run(t, fake, in)
	run(t, fake, in)
	if fake.Creates() != 1 {
		t.Fatalf("%d environments", fake.Creates())
	}
}

// An unknown template fails the operation with a typed problem that does not repeat the
// template: the caller chose it, and the operation shows its input anyway. (A template of
// any length: run fails the test if the report is not one longrun records.)
func TestAnUnknownTemplateFailsWithATypedProblem(t *testing.T) {
	for _, template := range []string{"huge", strings.Repeat("x", 2000), "Run <this> now"} {
		fake := &provisioner.Fake{ReadyAfter: 1, Templates: []string{"small"}}
		_, last := run(t, fake, Input{Project: "shop", Environment: "qa-3", Template: template})
		p := last.Problem()
		if last.Status() != worker.StatusFailed || p.Code != "unknown_template" || fake.Creates() != 0 {
			t.Fatalf("%s %+v", last.Status(), p)
		}
		if strings.Contains(p.Title+p.Detail, template) {
			t.Errorf("the problem repeats the caller's template: %.200q", p.Detail)
		}
	}
}

// closedURL is the URL of a port nobody listens on: a request to it is refused before any
// byte is written.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// A create that never left (the provisioner is down: connection refused) is tried again,
// waiting longer each time, and after MaxUnsent tries the operation fails with a typed
// problem, nothing created; it is never an unknown outcome.
func TestACreateNeverSentIsTriedAgainThenFails(t *testing.T) {
	steps, last := run(t, provisioner.Client{URL: closedURL(t)}, Input{Project: "shop", Environment: "qa-4", Template: "small"})
	if last.Status() != worker.StatusFailed || last.Problem().Code != "provisioner_unreachable" {
		t.Fatalf("%s %+v", last.Status(), last.Problem())
	}
	if len(steps) != MaxUnsent-1 {
		t.Fatalf("%d tries before failing, want %d", len(steps), MaxUnsent-1)
	}
	want := 2 * time.Second
	for i, rep := range steps {
		if d, ok := rep.Delay(); !ok || d != want {
			t.Errorf("try %d waits %v (%v), want %v", i+1, d, ok, want)
		}
		want *= 2
	}
}

// Once the provisioner answers, the tries before it leave no trace: one environment, made
// by the create that got through, and the operation goes on as usual.
func TestACreateNeverSentSucceedsWhenTheProvisionerComesBack(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 1}
	down := closedURL(t)
	up := httptest.NewServer(provisioner.Handler(fake))
	defer up.Close()
	var c flaky
	c.urls = []string{down, down, up.URL}
	_, last := run(t, &c, Input{Project: "shop", Environment: "qa-5", Template: "small"})
	if last.Status() != worker.StatusSucceeded || fake.Creates() != 1 {
		t.Fatalf("%s, %d environments", last.Status(), fake.Creates())
	}
}

// A create whose request was written and whose answer never came (the connection closed
// after the provisioner read it) may have created the environment: the step's error
// escapes, and longrun records outcome_unknown.
func TestACreateThatMayHaveBeenSentIsNotTriedAgain(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 1}
	lossy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		provisioner.Handler(fake).ServeHTTP(httptest.NewRecorder(), r) // created …
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // … and the answer is lost
		}
	}))
	defer lossy.Close()
	input, _ := json.Marshal(Input{Project: "shop", Environment: "qa-6", Template: "small"})
	req := worker.Request{Protocol: worker.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Type: "provision.environment",
		Version: 1, Input: input, Step: 1, MaxSteps: 200, Deadline: time.Now().Add(2 * time.Hour), StepTimeoutSeconds: 300}
	_, err := worker.Run(context.Background(), Steps(provisioner.Client{URL: lossy.URL}), req)
	if err == nil || errors.Is(err, provisioner.ErrNotSent) || fake.Creates() != 1 {
		t.Fatalf("error %v, %d environments: a lost answer must escape as an error, not be retried", err, fake.Creates())
	}
}

// flaky is a provisioner client whose URL changes with each create: the provisioner is
// down, then up.
type flaky struct {
	urls []string
	used int
}

func (f *flaky) client() provisioner.Client {
	return provisioner.Client{URL: f.urls[min(f.used, len(f.urls)-1)]}
}

func (f *flaky) Create(ctx context.Context, key string, req provisioner.Request) (provisioner.Environment, error) {
	c := f.client()
	f.used++
	return c.Create(ctx, key, req)
}

func (f *flaky) Get(ctx context.Context, id string) (provisioner.Environment, error) {
	return f.client().Get(ctx, id)
}

// at runs step n of the operation opID once, as longrun sends it: the state the step before
// carried, the signals given to it, what its wait came to, and the type's callback URLs.
func at(t *testing.T, p provisioner.Provisioner, in Input, n int, state json.RawMessage, awaited *worker.Awaited, signals ...worker.Signal) worker.Report {
	t.Helper()
	input, _ := json.Marshal(in)
	req := worker.Request{Protocol: worker.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C4", Type: "provision.environment",
		Version: 1, Input: input, Step: n, MaxSteps: 200, State: state, Deadline: time.Now().Add(2 * time.Hour), StepTimeoutSeconds: 300,
		Signals: signals, Awaited: awaited, Callbacks: map[string]string{SignalProvisioned: callbackURL}}
	rep, err := worker.Run(context.Background(), Steps(p), req)
	if err != nil {
		t.Fatalf("step %d: %v", n, err)
	}
	return rep
}

const callbackURL = "https://longrun.example.test/v1/callbacks/cb-test"

func approvalSignal(approved bool, reason string) worker.Signal {
	data, _ := json.Marshal(Approval{Approved: approved, By: "Olga", Reason: reason})
	return worker.Signal{Name: SignalApproval, Data: data, ReceivedAt: time.Now(), Sender: "ops", Via: worker.ViaAPI}
}

func provisionedSignal(env provisioner.Environment) worker.Signal {
	data, _ := json.Marshal(env)
	return worker.Signal{Name: SignalProvisioned, Data: data, ReceivedAt: time.Now(), Via: worker.ViaCallback}
}

var (
	approvalCame     = &worker.Awaited{Signal: SignalApproval}
	approvalTimedOut = &worker.Awaited{Signal: SignalApproval, TimedOut: true}
	callbackCame     = &worker.Awaited{Signal: SignalProvisioned}
	callbackTimedOut = &worker.Awaited{Signal: SignalProvisioned, TimedOut: true}
)

func awaits(t *testing.T, rep worker.Report, signal string, timeout time.Duration) {
	t.Helper()
	name, d, ok := rep.AwaitsSignal()
	if rep.Status() != worker.StatusContinue || !ok || name != signal || d != timeout {
		t.Fatalf("%s, awaits %q %v (%v); want a wait for %q of %v", rep.Status(), name, d, ok, signal, timeout)
	}
}

// A production environment: step 1 provisions nothing and waits for the approval, as long
// as the input says; the approval wakes step 2, which asks for the environment with the
// callback URL and waits for the callback; the callback wakes step 3, which returns the URL
// and who approved it. The provisioner is never polled.
func TestProductionWaitsForTheApprovalThenForTheCallback(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 1, CallbackAfter: time.Hour} // the test sends the callback
	in := Input{Project: "shop", Environment: "prod", Template: "small", Production: true, ApprovalTimeoutSeconds: 600}
	first := at(t, fake, in, 1, nil, nil)
	awaits(t, first, SignalApproval, 10*time.Minute)
	if fake.Creates() != 0 {
		t.Fatal("provisioned before the approval")
	}
	second := at(t, fake, in, 2, first.State(), approvalCame, approvalSignal(true, ""))
	awaits(t, second, SignalProvisioned, CallbackTimeout)
	env, ok := fake.ByKey("op_01JDY3Q4W5E6R7T8Y9V0A1B2C4")
	if !ok || fake.CallbackURL(env.ID) != callbackURL {
		t.Fatalf("environment %+v (%v), callback URL %q", env, ok, fake.CallbackURL(env.ID))
	}
	env.Status = "ready"
	last := at(t, fake, in, 3, second.State(), callbackCame, provisionedSignal(env))
	if last.Status() != worker.StatusSucceeded || string(last.Result()) != `{"approvedBy":"ops","url":"https://prod.shop.example.test"}` {
		t.Fatalf("%s %s", last.Status(), last.Result())
	}
	if _, gets := fake.Calls(); gets != 0 {
		t.Fatalf("%d polls: a production environment waits for the callback", gets)
	}
}

// An approval sent before any step waited for it is kept by longrun and given to step 1:
// step 1 provisions at once. The timeout defaults to an hour.
func TestAnApprovalBeforeTheWaitCounts(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 1, CallbackAfter: time.Hour}
	in := Input{Project: "shop", Environment: "prod", Template: "small", Production: true}
	awaits(t, at(t, fake, in, 1, nil, nil), SignalApproval, DefaultApprovalTimeout)
	awaits(t, at(t, fake, in, 1, nil, nil, approvalSignal(true, "")), SignalProvisioned, CallbackTimeout)
	if fake.Creates() != 1 {
		t.Fatalf("%d environments", fake.Creates())
	}
}

// A rejection, the last approval signal standing, and a wait that timed out each fail the
// operation with its code, nothing provisioned.
func TestARejectionOrNoApprovalInTimeFails(t *testing.T) {
	in := Input{Project: "shop", Environment: "prod", Template: "small", Production: true}
	for _, tc := range []struct {
		name    string
		awaited *worker.Awaited
		signals []worker.Signal
		code    string
	}{
		{"rejected", approvalCame, []worker.Signal{approvalSignal(false, "change freeze")}, "not_approved"},
		{"approved, then rejected", approvalCame, []worker.Signal{approvalSignal(true, ""), approvalSignal(false, "")}, "not_approved"},
		{"timed out", approvalTimedOut, nil, "approval_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &provisioner.Fake{ReadyAfter: 1}
			rep := at(t, fake, in, 2, nil, tc.awaited, tc.signals...)
			if p := rep.Problem(); rep.Status() != worker.StatusFailed || p.Code != tc.code || fake.Creates() != 0 {
				t.Fatalf("%s %+v, %d environments", rep.Status(), p, fake.Creates())
			}
			if tc.name == "rejected" && !strings.Contains(rep.Problem().Detail, "change freeze") {
				t.Errorf("the detail leaves out the operator's reason: %q", rep.Problem().Detail)
			}
		})
	}
}

// After the approval: a callback saying the environment failed fails the operation; one
// about another environment is not this one's news, and the step waits on; no callback in
// CallbackTimeout makes the steps poll the provisioner, which still knows.
func TestTheCallbackAndItsFallback(t *testing.T) {
	in := Input{Project: "shop", Environment: "prod", Template: "small", Production: true}
	start := func(t *testing.T, fake *provisioner.Fake) (json.RawMessage, provisioner.Environment) {
		rep := at(t, fake, in, 2, nil, approvalCame, approvalSignal(true, ""))
		env, _ := fake.ByKey("op_01JDY3Q4W5E6R7T8Y9V0A1B2C4")
		return rep.State(), env
	}
	t.Run("failed", func(t *testing.T) {
		fake := &provisioner.Fake{ReadyAfter: 1, CallbackAfter: time.Hour}
		st, env := start(t, fake)
		env.Status, env.Reason = "failed", "quota"
		rep := at(t, fake, in, 3, st, callbackCame, provisionedSignal(env))
		if p := rep.Problem(); rep.Status() != worker.StatusFailed || p.Code != "provisioning_failed" || !strings.Contains(p.Detail, "quota") {
			t.Fatalf("%s %+v", rep.Status(), p)
		}
	})
	t.Run("another environment", func(t *testing.T) {
		fake := &provisioner.Fake{ReadyAfter: 1, CallbackAfter: time.Hour}
		st, env := start(t, fake)
		env.ID, env.Status = "env-999", "ready"
		awaits(t, at(t, fake, in, 3, st, callbackCame, provisionedSignal(env)), SignalProvisioned, CallbackTimeout)
	})
	t.Run("no callback in time", func(t *testing.T) {
		lost := &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) { return nil, errors.New("lost") })}
		fake := &provisioner.Fake{ReadyAfter: 1, CallbackAfter: 0, HTTP: lost}
		st, env := start(t, fake)
		for fake.Deliveries() == nil { // the fake made it, and its webhook was lost
			time.Sleep(10 * time.Millisecond)
		}
		rep := at(t, fake, in, 3, st, callbackTimedOut)
		if rep.Status() != worker.StatusContinue || fake.Polls(env.ID) != 1 {
			t.Fatalf("%s, %d polls", rep.Status(), fake.Polls(env.ID))
		}
		last := at(t, fake, in, 4, rep.State(), nil)
		if last.Status() != worker.StatusSucceeded {
			t.Fatalf("%s", last.Status())
		}
	})
}

// An environment that is not production waits for nothing: step 1 asks for it, and it is
// polled, whatever callback URLs the step has.
func TestOtherEnvironmentsDoNotWait(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 1}
	rep := at(t, fake, Input{Project: "shop", Environment: "qa-7", Template: "small"}, 1, nil, nil)
	if _, _, ok := rep.AwaitsSignal(); ok || fake.Creates() != 1 {
		t.Fatalf("awaits %v, %d environments", ok, fake.Creates())
	}
	env, _ := fake.ByKey("op_01JDY3Q4W5E6R7T8Y9V0A1B2C4")
	if fake.CallbackURL(env.ID) != "" {
		t.Fatal("handed a callback URL")
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
