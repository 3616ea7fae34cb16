package main

import (
	"context"
	"os"
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
		ops := plan(tc.n)
		replays, five := 0, 0
		for i, op := range ops {
			if op.index != i {
				t.Fatalf("index %d at %d", op.index, i)
			}
			if op.replay {
				replays++
			}
			if op.steps == 5 {
				five++
			} else if op.steps != 1 {
				t.Fatalf("%d steps", op.steps)
			}
		}
		// r replays of n + r admissions: 30% of them.
		if replays != tc.replays || five != tc.n/2 {
			t.Errorf("n=%d: %d replays, %d of 5 steps; want %d and %d", tc.n, replays, five, tc.replays, tc.n/2)
		}
	}
}

var summaryLine = regexp.MustCompile(`^cost: \$\d+\.\d\d per million operations \(Step Functions \$\d+\.\d\d, DynamoDB \$\d+\.\d\d, API Gateway \$\d+\.\d\d, Lambda \$\d+\.\d\d, other \$\d+\.\d\d\)$`)

// The pipeline on the real local stack, two operations: every component counts something,
// and the bus's deliveries to the stack's own test queue are not priced. It owns
// 127.0.0.1:4566 while it runs (it waits for it first).
func TestTwoOperationsOnTheLocalStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stack.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	m, err := measure(ctx, config{operations: 2, concurrency: 2}, logFile, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	model, err := cost.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	r, err := model.Compute(m.mix)
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
	if u.SQSRequests != 0 || len(m.mix.SQS) != 0 {
		t.Errorf("SQS %v: the events queue's deliveries are local plumbing", m.mix.SQS)
	}
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, "Lambda is priced at the durations measured locally") {
			t.Errorf("note: %s", n) // a path not followed, a call not priced
		}
	}
	if m.mix.DynamoDB.Unpriced != 0 || m.mix.DynamoDB.Overhead <= 0 {
		t.Errorf("%d calls unpriced, meter overhead %v", m.mix.DynamoDB.Unpriced, m.mix.DynamoDB.Overhead)
	}
	if !summaryLine.MatchString(r.Summary()) || r.PerMillion.StepFunctions <= 0 || r.PerMillion.Other <= 0 {
		t.Errorf("%s", r.Summary())
	}
	rec := m.reconciler
	if len(rec.Invocations) != 1 || rec.Invocations[0].Function != "reconciler" || rec.DynamoDB.Usage.RRU <= 0 {
		t.Errorf("the reconciler's run: %+v", rec)
	}
}
