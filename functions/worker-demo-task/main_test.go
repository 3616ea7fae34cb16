package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/longrun-dev/longrun/worker"
)

var handler = worker.Handler(demoTask)

// reportSchema is api/worker/step-report.schema.json: every report this worker sends must
// pass it.
func reportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "api", "worker", "step-report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const id = "https://longrun.dev/schemas/worker/step-report.json"
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func request(step int, input string, state string) json.RawMessage {
	req := worker.Request{
		Protocol: worker.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Type: "demo.task", Version: 1,
		Input: json.RawMessage(input), Step: step, MaxSteps: 20,
		Deadline: time.Now().Add(time.Hour), StepTimeoutSeconds: 60,
	}
	if state != "" {
		req.State = json.RawMessage(state)
	}
	b, _ := json.Marshal(req)
	return b
}

// step invokes the handler as Lambda does and checks the report against the schema.
func step(t *testing.T, s *jsonschema.Schema, payload json.RawMessage) (string, error) {
	t.Helper()
	out, err := handler(context.Background(), payload)
	if err != nil {
		return "", err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(doc); err != nil {
		t.Fatalf("report %s: %v", out, err)
	}
	return string(out), nil
}

// longrun's loop: each continue report's state goes into the next step's request.
func TestStepsCarryTheirCountThenSucceed(t *testing.T) {
	s := reportSchema(t)
	in := `{"target":"demo:w","steps":3,"sleepMs":0,"outcome":"succeed"}`
	want := []string{
		`{"status":"continue","state":{"done":1},"progress":{"totalSteps":3,"message":"step 1 of 3 done"}}`,
		`{"status":"continue","state":{"done":2},"progress":{"totalSteps":3,"message":"step 2 of 3 done"}}`,
		`{"status":"succeeded","result":{"steps":3,"target":"demo:w"},"progress":{"totalSteps":3}}`,
	}
	state := ""
	for i, w := range want {
		got, err := step(t, s, request(i+1, in, state))
		if err != nil || got != w {
			t.Fatalf("step %d: %s %v, want %s", i+1, got, err, w)
		}
		var rep worker.Report
		_ = json.Unmarshal([]byte(got), &rep)
		state = string(rep.State())
	}
}

// The sample requests are demo.task's first and last step.
func TestTheSampleRequests(t *testing.T) {
	s := reportSchema(t)
	for name, want := range map[string]string{
		"step-request-first": `{"status":"continue","state":{"done":1},"progress":{"totalSteps":3,"message":"step 1 of 3 done"}}`,
		"step-request-later": `{"status":"succeeded","result":{"steps":3,"target":"demo:alpha"},"progress":{"totalSteps":3}}`,
	} {
		payload, err := os.ReadFile(filepath.Join("..", "..", "events", "samples", "worker", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := step(t, s, payload); err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", name, got, err, want)
		}
	}
}

func TestDefaultsAreOneStepThatSucceeds(t *testing.T) {
	s := reportSchema(t)
	for _, in := range []string{`{"target":"demo:d"}`, `{"target":"demo:d","steps":0}`, `{"target":"demo:d","steps":1,"outcome":"succeed"}`} {
		got, err := step(t, s, request(1, in, ""))
		if want := `{"status":"succeeded","result":{"steps":1,"target":"demo:d"},"progress":{"totalSteps":1}}`; err != nil || got != want {
			t.Errorf("%s: %s %v", in, got, err)
		}
	}
}

func TestFailFailsTheLastStep(t *testing.T) {
	s := reportSchema(t)
	in := `{"target":"demo:f","steps":2,"outcome":"fail"}`
	if got, err := step(t, s, request(1, in, "")); err != nil || !strings.Contains(got, `"status":"continue"`) {
		t.Fatalf("first step: %s %v", got, err)
	}
	got, err := step(t, s, request(2, in, `{"done":1}`))
	if want := `{"status":"failed","problem":{"code":"demo_failed","title":"Demo task failed","detail":"The demo task was asked to fail."}}`; err != nil || got != want {
		t.Fatalf("last step: %s %v", got, err)
	}
}

// "unknown" acts and then loses its result: the last step's invocation fails (longrun
// records outcome_unknown, worker_error), the earlier ones do not.
func TestUnknownLosesTheResultAfterTheEffect(t *testing.T) {
	s := reportSchema(t)
	in := `{"target":"demo:u","steps":2,"outcome":"unknown"}`
	if got, err := step(t, s, request(1, in, "")); err != nil || !strings.Contains(got, `"state":{"done":1}`) {
		t.Fatalf("first step: %s %v", got, err)
	}
	_, err := step(t, s, request(2, in, `{"done":1}`))
	if !errors.Is(err, errResultLost) || err.Error() != "the connection dropped after the effect; the result is lost" {
		t.Fatalf("last step: %v", err)
	}
}

// A later step must carry the previous step's count; anything else is a bug, and the
// invocation fails rather than guess.
func TestAWrongCarriedStateIsAnError(t *testing.T) {
	s := reportSchema(t)
	in := `{"target":"demo:s","steps":5}`
	for _, state := range []string{"", "null", `{"done":1}`, `{"done":3}`, `{"done":"two"}`, `[2]`} {
		_, err := step(t, s, request(3, in, state))
		var p *worker.Problem
		if err == nil || errors.As(err, &p) {
			t.Errorf("step 3 with state %q: %v", state, err)
		}
	}
	if got, err := step(t, s, request(3, in, `{"done":2}`)); err != nil || !strings.Contains(got, `"state":{"done":3}`) {
		t.Fatalf("the right state: %s %v", got, err)
	}
}

func TestEachStepSleepsAndRespectsTheContext(t *testing.T) {
	start := time.Now()
	if _, err := handler(context.Background(), request(1, `{"target":"demo:z","sleepMs":60}`, "")); err != nil || time.Since(start) < 60*time.Millisecond {
		t.Fatalf("slept %v: %v", time.Since(start), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err := handler(ctx, request(1, `{"target":"demo:z","sleepMs":5000}`, ""))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
}

// An outcome it does not know is refused before anything runs: a failed report.
func TestAnUnknownOutcomeFailsBeforeAnyWork(t *testing.T) {
	s := reportSchema(t)
	start := time.Now()
	got, err := step(t, s, request(1, `{"target":"demo:x","outcome":"explode","sleepMs":5000}`, ""))
	if err != nil || !strings.Contains(got, `"status":"failed"`) || !strings.Contains(got, `"code":"invalid_input"`) ||
		!strings.Contains(got, `outcome \"explode\"`) || time.Since(start) > 2*time.Second {
		t.Fatalf("%s %v after %v", got, err, time.Since(start))
	}
}
