package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
)

// A type defined only in the tests' definitions file, run by a worker written against the
// public worker package (internal/e2e/pollworker): it carries state from step to step,
// waits between steps (the type's stepDelay), reports progress, and succeeds.
func TestThirdTypeRunsEndToEnd(t *testing.T) {
	c := alice(t)
	id := c.admit(`{"type":"test.poll","input":{"name":"e2e-third","steps":3,"spec":{"region":"eu-west-1"}}}`)
	var seen []float64
	deadline := time.Now().Add(60 * time.Second)
	var r response
	for time.Now().Before(deadline) {
		r = c.do(http.MethodGet, "/v1/operations/"+id, "", "")
		if p, ok := r.json["progress"].(map[string]any); ok && r.json["state"] == "running" {
			if n := p["completedSteps"].(float64); len(seen) == 0 || seen[len(seen)-1] != n {
				seen = append(seen, n)
			}
			if p["totalSteps"] != 3.0 {
				t.Fatalf("progress %v", p)
			}
		}
		if r.json["terminal"] == true {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	result, _ := r.json["result"].(map[string]any)
	if r.json["state"] != "succeeded" || fmt.Sprint(result["seen"]) != "[1 2 3]" || result["region"] != "eu-west-1" || result["maxSteps"] != 5.0 {
		t.Fatalf("%s", r.body)
	}
	// The type's stepDelay holds the workflow after step 1, long enough to see it.
	if !slices.Contains(seen, 1) {
		t.Fatalf("completedSteps while running: %v", seen)
	}
	if p, _ := r.json["progress"].(map[string]any); p["completedSteps"] != 3.0 || p["totalSteps"] != 3.0 || p["message"] != "step 3 of 3" {
		t.Fatalf("final progress %v", r.json["progress"])
	}
	// The wait after step 1 was taken in the operation's second execution, on the type's
	// resume state machine; the dispatcher's ended when the recorder handed the work on.
	resume, ok := stack.StateMachines[stepfunctions.ResumeKey("test-poll")]
	if stack.StepFunctions == nil || !ok {
		return // an external target that did not name its state machines
	}
	if n, m := executions(t, id), executions(t, id+"-1"); n != 1 || m != 1 || executions(t, id+"-2") != 0 {
		t.Fatalf("executions: %s ×%d, %s-1 ×%d", id, n, id, m)
	}
	arn := stepfunctions.ExecutionARN(resume, id+"-1")
	if out, err := stack.StepFunctions.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)}); err != nil || out.Status != "SUCCEEDED" {
		t.Fatalf("the resume execution %s: %v %v", arn, out, err)
	}
}

// Every way a worker's step can end, and every limit longrun enforces around it, ends in
// the documented state.
func TestWorkerEndsInTheDocumentedState(t *testing.T) {
	t.Parallel()
	c := alice(t)
	cases := []struct {
		name, body  string
		state, code string
		completed   float64 // steps completed as the representation says; -1: no progress
	}{
		{"failed with a typed problem", `{"type":"test.poll","input":{"name":"e2e-fail","steps":2,"outcome":"fail"}}`, "failed", "poll_failed", 1},
		{"result lost", `{"type":"test.poll","input":{"name":"e2e-lost","steps":1,"outcome":"lost"}}`, "outcome_unknown", "result_lost", -1},
		{"more steps than maxSteps", `{"type":"test.poll","input":{"name":"e2e-over","outcome":"overstep"}}`, "failed", "max_steps_exceeded", 5},
		{"never done before the deadline", `{"type":"test.brief","input":{"name":"e2e-forever","outcome":"forever"}}`, "failed", "deadline_exceeded", -2},
		{"a step longer than stepTimeout", `{"type":"test.slow","input":{"name":"e2e-hang","outcome":"hang"}}`, "outcome_unknown", "step_timeout", -1},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		ids[i] = c.admit(tc.body)
	}
	for i, tc := range cases {
		r := c.poll(ids[i], 60*time.Second)
		p, _ := r.json["problem"].(map[string]any)
		if r.json["state"] != tc.state || p["code"] != tc.code {
			t.Errorf("%s: %s", tc.name, r.body)
			continue
		}
		progress, _ := r.json["progress"].(map[string]any)
		switch {
		case tc.completed == -1 && progress != nil:
			t.Errorf("%s: progress without a completed step: %s", tc.name, r.body)
		case tc.completed == -2 && (progress == nil || progress["completedSteps"].(float64) < 2):
			t.Errorf("%s: the worker should have run several steps before its deadline: %s", tc.name, r.body)
		case tc.completed >= 0 && (progress == nil || progress["completedSteps"] != tc.completed):
			t.Errorf("%s: progress %v, want %v completed", tc.name, progress, tc.completed)
		}
	}
}

// A worker process that dies mid-step, after it may have acted, is outcome_unknown, never a
// retry; the process is replaced and the next operation runs.
func TestWorkerCrashMidStepIsUnknown(t *testing.T) {
	c := alice(t)
	r := c.poll(c.admit(`{"type":"test.poll","input":{"name":"e2e-crash","steps":1,"outcome":"crash"}}`), 60*time.Second)
	p, _ := r.json["problem"].(map[string]any)
	if r.json["state"] != "outcome_unknown" || (p["code"] != "worker_error" && p["code"] != "step_timeout") {
		t.Fatalf("%s", r.body)
	}
	if n := executions(t, r.json["operationId"].(string)); n != 1 {
		t.Fatalf("%d executions: a crashed step must not be retried by a second one", n)
	}
	if r := c.poll(c.admit(`{"type":"test.poll","input":{"name":"e2e-after-crash","steps":1}}`), 60*time.Second); r.json["state"] != "succeeded" {
		t.Fatalf("after the crash: %s", r.body)
	}
}

// Polling a 5-step demo.task shows completedSteps rising and totalSteps 5, and its events
// carry the progress. Steps of more than a second each (recorder.ProgressEvery) record
// their progress as they complete.
func TestDemoTaskProgress(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"e2e-progress","steps":5,"sleepMs":1100}}`)
	var seen []float64
	deadline := time.Now().Add(60 * time.Second)
	var r response
	for time.Now().Before(deadline) {
		r = c.do(http.MethodGet, "/v1/operations/"+id, "", "")
		if p, ok := r.json["progress"].(map[string]any); ok {
			if p["totalSteps"] != 5.0 {
				t.Fatalf("progress %v", p)
			}
			if n := p["completedSteps"].(float64); len(seen) == 0 || seen[len(seen)-1] != n {
				seen = append(seen, n)
			}
		}
		if r.json["terminal"] == true {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.json["state"] != "succeeded" || len(seen) < 3 || !slices.IsSorted(seen) || seen[len(seen)-1] != 5 {
		t.Fatalf("completedSteps seen %v; %s", seen, r.body)
	}
	if stack.EventsQueueURL == "" {
		return // an external target without an events queue: the representation is all there is
	}
	evs := bus.waitVersions(t, id, int(r.json["version"].(float64)), 30*time.Second)
	last := evs[0] // the final version's: delivery may reorder
	for _, e := range evs {
		if e.Detail.Version > last.Detail.Version {
			last = e
		}
	}
	if p := last.Detail.Progress; last.Detail.State != "succeeded" || p == nil || p.CompletedSteps != 5 || p.TotalSteps != 5 {
		t.Fatalf("the final event's progress: %v", last.Detail)
	}
}

// Discovery serves the definitions the stack was started with: the built-in types and the
// tests' own.
func TestDiscoveryServesTheDefinitions(t *testing.T) {
	t.Parallel()
	c := alice(t)
	r := c.do(http.MethodGet, "/v1/operation-types", "", "")
	items, _ := r.json["items"].([]any)
	var names []string
	for _, it := range items {
		names = append(names, it.(map[string]any)["name"].(string))
	}
	if r.status != 200 || fmt.Sprint(names) != "[demo.task export.orders test.brief test.node test.poll test.python test.slow]" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	one := c.do(http.MethodGet, "/v1/operation-types/test.slow", "", "")
	schema, _ := one.json["inputSchema"].(map[string]any)
	if one.status != 200 || one.json["deadlineSeconds"] != 60.0 || schema["type"] != "object" {
		t.Fatalf("%d %s", one.status, one.body)
	}
	if r := c.do(http.MethodGet, "/v1/operation-types/no.such", "", ""); r.status != 404 {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
