package stepfunctions

import (
	"time"

	"encoding/json"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefinition(t *testing.T) {
	def, err := Definition(map[string]string{WorkerFunctionArn: "arn:w", RecorderFunctionArn: "arn:r"})
	if err != nil {
		t.Fatal(err)
	}
	var asl struct {
		StartAt string
		States  map[string]struct {
			Type       string
			Next       string
			OutputPath string
			Catch      []struct{ Next string }
			Parameters map[string]any
		}
	}
	if err := json.Unmarshal([]byte(def), &asl); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if asl.States[asl.StartAt].Type != "Task" || !strings.Contains(def, `"arn:w"`) || !strings.Contains(def, `"arn:r"`) {
		t.Fatal("substitution")
	}
	for name, s := range asl.States {
		if s.Next != "" && asl.States[s.Next].Type == "" {
			t.Errorf("%s: Next %q does not exist", name, s.Next)
		}
		// A Task with a Catch must not use OutputPath: emulators apply it to the Catch output.
		if len(s.Catch) > 0 && s.OutputPath != "" {
			t.Errorf("%s: OutputPath on a Task with a Catch", name)
		}
	}
	// The definition may not rely on the context object or intrinsic functions, which the
	// local emulator does not implement.
	for _, banned := range []string{"$$.", "States.Format", "States.MathAdd", "States.Array"} {
		if strings.Contains(def, banned) {
			t.Errorf("definition uses %s", banned)
		}
	}
	if _, err := Definition(map[string]string{WorkerFunctionArn: "arn:w"}); err == nil {
		t.Fatal("a missing substitution must fail")
	}
}

// A worker's failure must reach the recorder, never a retry: a retried step could act
// twice. Only invocation failures where the function did not run are retried.
func TestStepsAreNeverRetriedOnFunctionErrors(t *testing.T) {
	var asl struct {
		States map[string]struct {
			Retry []struct{ ErrorEquals []string }
		}
	}
	if err := json.Unmarshal([]byte(Template()), &asl); err != nil {
		t.Fatal(err)
	}
	for _, r := range asl.States["Work"].Retry {
		for _, e := range r.ErrorEquals {
			switch e {
			case "States.ALL", "States.TaskFailed", "Lambda.Unknown", "States.Timeout":
				t.Errorf("the Work task retries %s", e)
			}
		}
	}
}

// `make asl-lint` runs this with LONGRUN_ASL_OUT set, then asl-validator (npm) on the file:
// the definition as CDK deploys it for stage dev, with realistic ARNs.
func TestRenderDefinition(t *testing.T) {
	def, err := Definition(map[string]string{
		WorkerFunctionArn:   "arn:aws:lambda:us-east-1:123456789012:function:longrun-dev-" + FunctionName("demo-task"),
		RecorderFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:longrun-dev-recorder",
	})
	if err != nil {
		t.Fatal(err)
	}
	var asl map[string]any
	if err := json.Unmarshal([]byte(def), &asl); err != nil || strings.Contains(def, "${") {
		t.Fatalf("the rendered definition is not a complete JSON document: %v", err)
	}
	out := os.Getenv("LONGRUN_ASL_OUT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "operation.asl.json") // rendered and checked all the same
	}
	if err := os.WriteFile(out, []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue #12, defect 2: the default cancel lease outlasts what a workflow may rightly take
// after a cancel (the step in flight or the pause in progress, then the Gate state, retries
// included), so the reconciler never stops work that was about to end by itself. Work with a
// 60 s step timeout: 4 × 60 s + 1 + 2 + 4 s; a pause: 300 s; Gate: 6 × 60 s + 1 + 2 + 4 + 8 + 16 s.
func TestCancelLeaseOutlastsTheWorkflow(t *testing.T) {
	work, err := TaskBudget("Work", time.Minute)
	if err != nil || work != 247*time.Second {
		t.Fatalf("work budget %v %v, want 247s", work, err)
	}
	if w5, _ := TaskBudget("Work", 5*time.Minute); w5 != 1207*time.Second {
		t.Fatalf("the step timeout must reach the budget: %v", w5)
	}
	gate, err := TaskBudget("Gate", 0)
	if err != nil || gate != 391*time.Second {
		t.Fatalf("gate budget %v %v, want 391s", gate, err)
	}
	if got := CancelBudget(time.Minute); got != 691*time.Second {
		t.Fatalf("cancel budget %v, want the pause (300 s) + gate", got)
	}
	if lease := operation.DefaultLeases().Cancel; lease <= CancelBudget(time.Minute) {
		t.Fatalf("the default cancel lease %v does not outlast the workflow's %v", lease, CancelBudget(time.Minute))
	}
	if _, err := TaskBudget("Route", 0); err == nil {
		t.Fatal("a Choice state has a task budget")
	}
	if _, err := TaskBudget("Work", 0); err == nil {
		t.Fatal("the Work state's timeout comes from the data: without one there is no budget")
	}
}

// The figures of docs/performance.md ("State transitions and invocations"): a step is three
// transitions (Gate, Route, Work) and two invocations (recorder, worker); the end is three
// more (Gate, Route, Done) and one invocation; a wait adds Pause, Gate and Route and one
// recorder invocation.
func TestPathFigures(t *testing.T) {
	count := func(steps, waits int) (transitions, invocations int) {
		var decisions []string
		for i := range steps {
			if i > 0 && i <= waits {
				decisions = append(decisions, "wait")
			}
			decisions = append(decisions, "work")
		}
		path, err := Path(append(decisions, "done")...)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range path {
			if s == "Gate" || s == "Work" {
				invocations++
			}
		}
		return len(path), invocations
	}
	for _, tc := range []struct{ steps, waits, transitions, invocations int }{
		{1, 0, 6, 3},
		{5, 0, 18, 11},
		{3, 1, 15, 8},
		{20, 0, 63, 41},
	} {
		if tr, inv := count(tc.steps, tc.waits); tr != tc.transitions || inv != tc.invocations {
			t.Errorf("%d steps, %d waits: %d transitions, %d invocations; want %d and %d", tc.steps, tc.waits, tr, inv, tc.transitions, tc.invocations)
		}
	}
	if p, err := Path("done"); err != nil || strings.Join(p, " ") != "Gate Route Done" {
		t.Fatalf("settled before the first step: %v %v", p, err)
	}
	if _, err := Path("work"); err == nil {
		t.Fatal("a path without an end must be an error")
	}
}
