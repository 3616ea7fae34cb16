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
