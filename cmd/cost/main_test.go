package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/stepfunctions"
	"github.com/longrun-dev/longrun/internal/local/cost"
)

func TestPlan(t *testing.T) {
	for _, tc := range []struct{ n, replays int }{{60, 26}, {2, 1}, {7, 3}, {100, 43}} {
		ops := plan(config{operations: tc.n, mix: mixDefault})
		replays, five := 0, 0
		for i, op := range ops {
			if op.index != i || op.typ != "demo.task" {
				t.Fatalf("index %d at %d, %s", op.index, i, op.typ)
			}
			if op.replay {
				replays++
			}
			if op.input["steps"] == 5 {
				five++
			} else if op.input["steps"] != 1 {
				t.Fatalf("%v steps", op.input["steps"])
			}
		}
		// r replays of n + r admissions: 30% of them.
		if replays != tc.replays || five != tc.n/2 {
			t.Errorf("n=%d: %d replays, %d of 5 steps; want %d and %d", tc.n, replays, five, tc.replays, tc.n/2)
		}
	}
	long := plan(config{operations: 4, mix: mixSteps30})
	wait := plan(config{operations: 4, mix: mixWait, wait: 6 * time.Hour})
	signal := plan(config{operations: 4, mix: mixSignal, wait: 10 * time.Second})
	for i := range 4 {
		if signal[i].typ != "cost.signal" || signal[i].input["await"] != "approval" || signal[i].input["awaitSeconds"] != 86400 ||
			signal[i].signalAfter != 10*time.Second || wait[i].signalAfter != 0 {
			t.Errorf("signal: %+v", signal[i])
		}
		if long[i].typ != "cost.task" || long[i].input["steps"] != 5 || long[i].input["sleepMs"] != 30000 {
			t.Errorf("steps30: %+v", long[i])
		}
		if wait[i].typ != "cost.task" || wait[i].input["steps"] != 2 || wait[i].input["waitSeconds"] != 21600 {
			t.Errorf("wait: %+v", wait[i])
		}
	}
}

// childEnv names the test a process of its own runs (TestSignalMixOnTheLocalStack).
const childEnv = "LONGRUN_COST_TEST_CHILD"

var summaryLine = regexp.MustCompile(`^cost: \$\d+\.\d\d per million operations \(Step Functions \$\d+\.\d\d, DynamoDB \$\d+\.\d\d, API Gateway \$\d+\.\d\d, Lambda \$\d+\.\d\d, other \$\d+\.\d\d\)$`)

// The pipeline on the real local stack, two operations: every component counts something,
// and the bus's deliveries to the stack's own test queue are not priced. The stack takes
// free ports.
func TestTwoOperationsOnTheLocalStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	m, err := measure(ctx, config{operations: 2, concurrency: 2, mix: mixDefault}, logFile, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	model, err := cost.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	r, err := model.Compute(m.runs[0].mix)
	if err != nil {
		t.Fatal(err)
	}
	u := r.PerOperation
	if r.Admissions != 3 || r.Replays != 1 || u.APIRequests < 2.5 {
		t.Errorf("%d admissions, %d replays, %v requests per operation", r.Admissions, r.Replays, u.APIRequests)
	}
	invoked := map[string]bool{}
	for _, f := range r.Functions {
		invoked[f.Name] = f.Invocations > 0 && f.GBSeconds > 0
	}
	for _, fn := range []string{"api", "dispatcher", "notifier", "recorder", "worker-demo-task"} {
		if !invoked[fn] {
			t.Errorf("%s: no invocations priced (%+v)", fn, r.Functions)
		}
	}
	if invoked["reconciler"] {
		t.Error("the reconciler's schedule is in the mix")
	}
	// A 1-step and a 5-step operation: each the path of one Run that ends the work, as the
	// template has it (retries aside).
	done, err := stepfunctions.Path("done")
	if err != nil {
		t.Fatal(err)
	}
	if u.Transitions-u.Retries != float64(len(done)) || u.WRU <= 0 || u.IndexWRU <= 0 || u.RRU <= 0 || u.Events <= 0 || u.AppLogBytes <= 0 {
		t.Errorf("units %+v", u)
	}
	if u.SQSRequests != 0 || len(m.runs[0].mix.SQS) != 0 {
		t.Errorf("SQS %v: the events queue's deliveries are local plumbing", m.runs[0].mix.SQS)
	}
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, "Lambda is priced at the durations measured locally") {
			t.Errorf("note: %s", n) // a path not followed, a call not priced
		}
	}
	if m.runs[0].mix.DynamoDB.Unpriced != 0 || m.runs[0].mix.DynamoDB.Overhead <= 0 {
		t.Errorf("%d calls unpriced, meter overhead %v", m.runs[0].mix.DynamoDB.Unpriced, m.runs[0].mix.DynamoDB.Overhead)
	}
	if !summaryLine.MatchString(r.Summary()) || r.PerMillion.StepFunctions <= 0 || r.PerMillion.Other <= 0 {
		t.Errorf("%s", r.Summary())
	}
	rec := m.reconciler
	if len(rec.Invocations) != 1 || rec.Invocations[0].Function != "reconciler" || rec.DynamoDB.Usage.RRU <= 0 {
		t.Errorf("the reconciler's run: %+v", rec)
	}
}

// The signal mix on the real local stack, two operations: each waits for its approval with
// its execution ended, the client sends it once the operation says so, and the signal's
// record starts the next execution. Two Runs, each the whole of its execution, and one
// signaled fact an operation. It runs in a process of its own: the stack's emulators
// (kumo) are the process's, so a second stack in the one that ran the test above would
// find its event bus, queues and tables there already.
func TestSignalMixOnTheLocalStack(t *testing.T) {
	if os.Getenv(childEnv) != t.Name() {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("%v in the test's own process:\n%s", err, out)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	m, err := measure(ctx, config{operations: 2, concurrency: 2, mix: mixSignal, wait: time.Second}, logFile, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	model, err := cost.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	r, err := model.Compute(m.runs[0].mix)
	if err != nil {
		t.Fatal(err)
	}
	path, err := stepfunctions.Path("await", "done")
	if err != nil {
		t.Fatal(err)
	}
	u := r.PerOperation
	if u.Transitions-u.Retries != float64(len(path)) || u.Executions != 2 {
		t.Errorf("%v transitions (%v retries) in %v executions; want %d in 2", u.Transitions, u.Retries, u.Executions, len(path))
	}
	if m.runs[0].facts.ByKind["signaled"] != 1 || m.runs[0].facts.ByKind["accepted"] != 1 || m.runs[0].facts.ByKind["succeeded"] != 1 {
		t.Errorf("facts %s", m.runs[0].facts)
	}
	for _, f := range r.Functions {
		// The dispatcher: once for the accepted record, once for the signaled one (fewer
		// when a batch held both operations').
		if f.Name == "dispatcher" && (f.Invocations <= 0 || f.Invocations > 2) {
			t.Errorf("%v dispatcher invocations per operation", f.Invocations)
		}
	}
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, "Lambda is priced at the durations measured locally") {
			t.Errorf("note: %s", n)
		}
	}
}
