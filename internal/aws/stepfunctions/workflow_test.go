package stepfunctions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/recorder"
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
	// local emulator does not implement: only the task token, which it does.
	for _, banned := range []string{"$$.", "States.Format", "States.MathAdd", "States.Array"} {
		if strings.Contains(strings.ReplaceAll(def, `"$$.Task.Token"`, ""), banned) {
			t.Errorf("definition uses %s", banned)
		}
	}
	if _, err := Definition(map[string]string{WorkerFunctionArn: "arn:w"}); err == nil {
		t.Fatal("a missing substitution must fail")
	}
}

// The recorder is the workflow's only task: it sends the worker its steps itself (the
// worker's ARN comes in its payload), so a state machine needs no permission on the worker,
// and a worker's failure reaches the recorder (the worker's destination), never a retry of
// the step by the workflow. The task waits on a token, which the recorder answers when the
// work is done, stopped or handed on: no Lambda slot is held while it waits.
func TestTheRecorderIsTheOnlyTask(t *testing.T) {
	var asl struct {
		States map[string]struct {
			Type       string
			Resource   string
			Parameters struct {
				FunctionName string
				Payload      map[string]string
			}
		}
	}
	if err := json.Unmarshal([]byte(Template()), &asl); err != nil {
		t.Fatal(err)
	}
	tasks := 0
	for name, st := range asl.States {
		if st.Type != "Task" {
			continue
		}
		tasks++
		if st.Parameters.FunctionName != "${"+RecorderFunctionArn+"}" || st.Parameters.Payload["worker"] != "${"+WorkerFunctionArn+"}" ||
			st.Parameters.Payload["state.$"] != "$" || st.Parameters.Payload["token.$"] != "$$.Task.Token" ||
			!strings.HasSuffix(st.Resource, ".waitForTaskToken") {
			t.Errorf("%s: invokes %q with %v; want the recorder with the state and the worker's ARN", name, st.Parameters.FunctionName, st.Parameters.Payload)
		}
	}
	if tasks != 1 {
		t.Fatalf("%d Task states, want the one Run", tasks)
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
// after a cancel (the step in flight or the pause in progress, then a Run recording the
// outcome, retries included), so the reconciler never stops work that was about to end by
// itself. Run: a throttled recorder is tried 6 more times, 1 + 2 + 4 + 8 + 16 + 30 s apart
// (it ran nothing); any other failure 5 more times, 1 + 2 + 4 + 8 + 16 s apart, each
// attempt at most RecordTimeout.
func TestCancelLeaseOutlastsTheWorkflow(t *testing.T) {
	attempts, running, waits, err := Retries("Run")
	if err != nil || attempts != 12 || running != 6 || waits != 92*time.Second {
		t.Fatalf("Run retries: %d attempts (%d running), %v waits, %v; want 12 (6), 92s", attempts, running, waits, err)
	}
	if got := CancelBudget(time.Minute); got != 300*time.Second+92*time.Second+6*RecordTimeout {
		t.Fatalf("cancel budget %v, want the pause (300 s) + Run's retries", got)
	}
	if got := CancelBudget(10 * time.Minute); got != 600*time.Second+92*time.Second+6*RecordTimeout {
		t.Fatalf("a step longer than a pause must set the budget: %v", got)
	}
	if lease := operation.DefaultLeases().Cancel; lease <= CancelBudget(time.Minute) {
		t.Fatalf("the default cancel lease %v does not outlast the workflow's %v", lease, CancelBudget(time.Minute))
	}
	if _, _, _, err := Retries("Route"); err == nil {
		t.Fatal("a Choice state has retries")
	}
}

// The figures of docs/performance.md and docs/cost.md ("State transitions and
// invocations"): an operation whose steps run in one Run is one transition (Run) and one
// recorder invocation, whatever its steps; a wait adds an execution of the resume state
// machine (Pause, Run: two, and one recorder invocation); a Run that had no room for another
// step (continue) adds an execution of Run alone. Each step is one worker invocation, made by
// the recorder.
func TestPathFigures(t *testing.T) {
	count := func(waits, continues int) (transitions, runs int) {
		var decisions []string
		for range waits {
			decisions = append(decisions, "wait")
		}
		for range continues {
			decisions = append(decisions, "continue")
		}
		path, err := Path(append(decisions, "done")...)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range path {
			if s == "Run" {
				runs++
			}
		}
		return len(path), runs
	}
	for _, tc := range []struct{ waits, continues, transitions, runs int }{
		{0, 0, 1, 1},
		{1, 0, 3, 2},
		{0, 1, 2, 2},
		{4, 0, 9, 5},
	} {
		if tr, runs := count(tc.waits, tc.continues); tr != tc.transitions || runs != tc.runs {
			t.Errorf("%d waits, %d continues: %d transitions, %d recorder invocations; want %d and %d", tc.waits, tc.continues, tr, runs, tc.transitions, tc.runs)
		}
	}
	if p, err := Path("wait", "unrecorded"); err != nil || strings.Join(p, " ") != "Run Pause Run" {
		t.Fatalf("unrecorded after a wait: %v %v", p, err)
	}
	// A wait for a signal ends the execution and enters no state while it lasts: the work
	// goes on in a new execution of the type's own state machine (one Run), however long
	// it waited. An operation canceled while it waits ends with the await.
	if p, err := Path("await", "done"); err != nil || strings.Join(p, " ") != "Run Run" {
		t.Fatalf("a wait for a signal: %v %v", p, err)
	}
	if p, err := Path("await", "await", "done"); err != nil || strings.Join(p, " ") != "Run Run Run" {
		t.Fatalf("two waits for a signal: %v %v", p, err)
	}
	if p, err := Path("await"); err != nil || strings.Join(p, " ") != "Run" {
		t.Fatalf("canceled while it awaits a signal: %v %v", p, err)
	}
	if _, err := Path("continue"); err == nil {
		t.Fatal("a path without an end must be an error")
	}
	if _, err := Path("done", "done"); err == nil {
		t.Fatal("decisions after the end must be an error")
	}
}

// The resume state machine is the type's with a Pause before Run, and nothing else: every
// state reachable (AWS refuses a definition with a state it cannot reach), the wait read from
// the recorder's decision.
func TestResumeDefinition(t *testing.T) {
	type state struct {
		Type, Next, TimestampPath string
		End                       bool
	}
	var run, resume struct {
		StartAt string
		States  map[string]state
	}
	subs := map[string]string{WorkerFunctionArn: "arn:w", RecorderFunctionArn: "arn:r"}
	for _, c := range []struct {
		def  func(map[string]string) (string, error)
		into any
	}{{Definition, &run}, {ResumeDefinition, &resume}} {
		def, err := c.def(subs)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(def), c.into); err != nil {
			t.Fatal(err)
		}
	}
	p := resume.States[resume.StartAt]
	if resume.StartAt != Pause || p.Type != "Wait" || p.Next != run.StartAt || p.TimestampPath != "$.gate.decision.resumeAt" ||
		len(resume.States) != len(run.States)+1 {
		t.Fatalf("resume: %+v", resume)
	}
	for _, m := range []struct {
		StartAt string
		States  map[string]state
	}{run, resume} {
		reached := map[string]bool{m.StartAt: true}
		for _, st := range m.States {
			reached[st.Next] = true
		}
		reached["Unrecorded"] = true // the Catch's
		for name := range m.States {
			if !reached[name] {
				t.Errorf("state %s is unreachable", name)
			}
		}
	}
}

// A Run waits on its token while the steps it sends run: its heartbeat (one before each
// step after the first) outlasts the longest a step may wait in Lambda's queue and run,
// and its timeout the longest a parked Run starts steps and its last step, so that only a
// Run whose step's end was lost times out.
func TestTheRunWaitsLongEnough(t *testing.T) {
	var asl struct {
		States map[string]struct {
			TimeoutSeconds, HeartbeatSeconds float64
			Retry                            []struct {
				ErrorEquals []string
				MaxAttempts *int
			}
		}
	}
	if err := json.Unmarshal([]byte(Template()), &asl); err != nil {
		t.Fatal(err)
	}
	run := asl.States["Run"]
	step := sizing.WorkerMaxEventAge + 15*time.Minute + time.Minute // queued, the longest Lambda runs, recorded
	if hb := time.Duration(run.HeartbeatSeconds) * time.Second; hb < step {
		t.Errorf("HeartbeatSeconds %v; a step may take %v", hb, step)
	}
	if to := time.Duration(run.TimeoutSeconds) * time.Second; to < recorder.DefaultParkBudget+step || run.TimeoutSeconds <= run.HeartbeatSeconds {
		t.Errorf("TimeoutSeconds %v; a Run may take %v", to, recorder.DefaultParkBudget+step)
	}
	if r := run.Retry[0]; !slices.Equal(r.ErrorEquals, []string{"States.Timeout", "States.HeartbeatTimeout"}) || r.MaxAttempts == nil || *r.MaxAttempts != 0 {
		t.Errorf("a Run that timed out is retried: %+v", run.Retry)
	}
}
