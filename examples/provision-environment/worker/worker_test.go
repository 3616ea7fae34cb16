package main

import (
	"context"
	"encoding/json"
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
