// The Step Functions definition every operation type runs, one source for the local stack
// and the CDK stack. Each type gets its own state machine from this template, with its
// worker function substituted.
package stepfunctions

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/internal/core/step"
)

//go:embed operation.asl.json
var template string

// Substitution names, in CDK's DefinitionSubstitutions syntax (${Name}).
const (
	WorkerFunctionArn   = "WorkerFunctionArn"
	RecorderFunctionArn = "RecorderFunctionArn"
)

// Template returns the definition with its ${…} placeholders, for CDK: the type's state
// machine, which the dispatcher starts and a Run that had no room for another step
// continues on.
func Template() string { return template }

// Pause is the resume state machine's first state: the wait a worker asked for, until the
// decision's resumeAt, then Run.
const Pause = "Pause"

// ResumeTemplate is the type's resume state machine, on which the recorder continues an
// operation after a wait: the same definition with Pause before Run. One source, so the two
// cannot drift apart.
func ResumeTemplate() string {
	var asl map[string]any
	if err := json.Unmarshal([]byte(template), &asl); err != nil {
		panic(fmt.Sprintf("stepfunctions: the embedded template: %v", err)) // a test proves it parses
	}
	states := asl["States"].(map[string]any)
	states[Pause] = map[string]any{
		"Type":          "Wait",
		"Comment":       "The worker asked to wait before its next step: one wait until then, whatever its length, so a wait costs the same few transitions however long it is. A cancel during it is the reconciler's: nothing is in flight, so it stops this execution and records the cancel.",
		"TimestampPath": "$.gate.decision.resumeAt",
		"Next":          asl["StartAt"],
	}
	asl["StartAt"] = Pause
	out, _ := json.MarshalIndent(asl, "", "  ")
	return string(out)
}

// ResumeKey is the key of a workflow's resume state machine in LONGRUN_STATE_MACHINES (the
// workflow's own key is its worker's name).
func ResumeKey(workflow string) string { return workflow + "/resume" }

// Definition returns the definition with the placeholders replaced. Every placeholder must be
// given, so a missing function fails here and not at run time.
func Definition(subs map[string]string) (string, error) { return substitute(template, subs) }

// ResumeDefinition is ResumeTemplate with the placeholders replaced.
func ResumeDefinition(subs map[string]string) (string, error) {
	return substitute(ResumeTemplate(), subs)
}

func substitute(def string, subs map[string]string) (string, error) {
	for k, v := range subs {
		def = strings.ReplaceAll(def, "${"+k+"}", v)
	}
	if i := strings.Index(def, "${"); i >= 0 {
		return "", fmt.Errorf("workflow: unsubstituted placeholder at %q", def[i:min(len(def), i+40)])
	}
	return def, nil
}

// FunctionName is the worker function of a type's workflow (optype.Type.Executor), as in
// functions/worker-<executor>.
func FunctionName(executor string) string { return "worker-" + executor }

// Throttled is the error of a Lambda task that Lambda refused before the function ran.
const Throttled = "Lambda.TooManyRequestsException"

// Retries is how a Task state of the template is retried: the attempts it may take in all
// (the first and each retrier's MaxAttempts, since different errors retry separately),
// those of them that may run the function (a throttled attempt does not), and the waits
// between them.
func Retries(state string) (attempts, running int, waits time.Duration, err error) {
	var asl struct {
		States map[string]struct {
			Type  string
			Retry []struct {
				ErrorEquals                                   []string
				IntervalSeconds, BackoffRate, MaxDelaySeconds float64
				MaxAttempts                                   int
			}
		}
	}
	if err := json.Unmarshal([]byte(template), &asl); err != nil {
		return 0, 0, 0, fmt.Errorf("stepfunctions: the template: %w", err)
	}
	st, ok := asl.States[state]
	if !ok || st.Type != "Task" {
		return 0, 0, 0, fmt.Errorf("stepfunctions: %q is not a Task state", state)
	}
	attempts, running = 1, 1
	seconds := 0.0
	for _, r := range st.Retry {
		attempts += r.MaxAttempts
		if len(r.ErrorEquals) != 1 || r.ErrorEquals[0] != Throttled {
			running += r.MaxAttempts
		}
		interval, rate := r.IntervalSeconds, r.BackoffRate
		if interval == 0 {
			interval = 1 // the States Language defaults
		}
		if rate == 0 {
			rate = 2
		}
		for i := range r.MaxAttempts {
			wait := interval * math.Pow(rate, float64(i))
			if r.MaxDelaySeconds > 0 {
				wait = min(wait, r.MaxDelaySeconds)
			}
			seconds += wait
		}
	}
	return attempts, running, time.Duration(seconds * float64(time.Second)), nil
}

// RecordTimeout bounds a recorder attempt that runs no step: it reads the operation and
// appends at most one fact, and the store's calls give up within their own budgets.
const RecordTimeout = 30 * time.Second

// CancelBudget is how long a workflow whose steps may take stepTimeout may rightly go on
// after a cancel: the step in flight runs to its end (intent is checked only between steps)
// or the pause in progress ends (step.MaxPause); then a Run records the outcome, with its
// retries (a throttled attempt runs nothing; the others take at most RecordTimeout each). A reconciler that stops the execution sooner stops work that was about to end
// by itself, so the cancel lease must exceed this for every type.
func CancelBudget(stepTimeout time.Duration) time.Duration {
	_, running, waits, err := Retries("Run")
	if err != nil {
		panic(fmt.Sprintf("stepfunctions: the embedded template: %v", err)) // a test proves it parses
	}
	return max(stepTimeout, step.MaxPause) + waits + time.Duration(running)*RecordTimeout
}

// What the recorder's Run answers (its decision's next) and where the operation goes on:
// Done and Unrecorded end it; Continue goes on in a new execution of the type's state
// machine, Wait in one of its resume state machine. Await ends the execution with nothing
// running: the work goes on, when its signal comes or its timeout passes, in a new execution
// of the type's state machine (recorder.Wake), or never (a cancel during the wait).
const (
	Continue = "continue"
	Wait     = "wait"
	Await    = "await"
)

// Path is the states an operation's executions enter when the recorder's Run answers, in
// turn, decisions ("continue", "wait", "await", then "done" or "unrecorded" last; an
// operation may also end while it awaits a signal, its last decision "await"): the Standard
// state transitions it is billed for, retries aside. It follows the templates themselves
// (StartAt and the Next fields: Template for the first execution and after a continue or an
// await, ResumeTemplate after a wait), so a change of the workflow's shape changes the
// figures in docs/performance.md and the cost model with it. However long a wait for a
// signal lasts, no state is entered while it waits.
func Path(decisions ...string) ([]string, error) {
	type machine struct {
		StartAt string
		States  map[string]struct {
			Type string
			Next string
			End  bool
		}
	}
	var run, resume machine
	if err := json.Unmarshal([]byte(template), &run); err != nil {
		return nil, fmt.Errorf("stepfunctions: the template: %w", err)
	}
	if err := json.Unmarshal([]byte(ResumeTemplate()), &resume); err != nil {
		return nil, fmt.Errorf("stepfunctions: the resume template: %w", err)
	}
	var path []string
	m := run
	for {
		name, decision := m.StartAt, ""
		for {
			st, ok := m.States[name]
			if !ok {
				return nil, fmt.Errorf("stepfunctions: no state %q", name)
			}
			path = append(path, name)
			if st.Type == "Task" { // the recorder's Run: it answers the next decision
				if len(decisions) == 0 {
					return path, fmt.Errorf("stepfunctions: the recorder was called with no decision left")
				}
				decision, decisions = decisions[0], decisions[1:]
			}
			if st.End || st.Type == "Succeed" || st.Type == "Fail" {
				break
			}
			name = st.Next
			if len(path) > 10000 {
				return path, fmt.Errorf("stepfunctions: the path does not end")
			}
		}
		switch decision {
		case Continue:
			m = run
		case Wait:
			m = resume
		case Await:
			if len(decisions) == 0 { // canceled while it waited, or waiting still
				return path, nil
			}
			m = run
		default: // done, unrecorded: the operation's last execution ended
			if len(decisions) > 0 {
				return path, fmt.Errorf("stepfunctions: the execution ended with decisions %v left", decisions)
			}
			return path, nil
		}
		if len(decisions) == 0 {
			return path, fmt.Errorf("stepfunctions: the operation goes on with no decision left")
		}
	}
}
