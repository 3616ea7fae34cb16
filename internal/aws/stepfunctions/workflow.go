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

// Template returns the definition with its ${…} placeholders, for CDK.
func Template() string { return template }

// Definition returns the definition with the placeholders replaced. Every placeholder must be
// given, so a missing function fails here and not at run time.
func Definition(subs map[string]string) (string, error) {
	def := template
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

// Path is the states an execution of the template enters when the recorder's Run answers,
// in turn, decisions ("continue", "wait", "done" or "unrecorded"; the last must end the
// execution): the Standard state transitions it is billed for, retries aside. It follows the template itself (its Next
// fields and the Route state's choices on the decision), so a change of the workflow's
// shape changes the figures in docs/performance.md and the cost model with it.
func Path(decisions ...string) ([]string, error) {
	var asl struct {
		StartAt string
		States  map[string]struct {
			Type    string
			Next    string
			Default string
			Choices []struct {
				Next string
				And  []struct {
					Variable     string
					StringEquals *string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(template), &asl); err != nil {
		return nil, fmt.Errorf("stepfunctions: the template: %w", err)
	}
	var path []string
	decision := ""
	for name := asl.StartAt; ; {
		st, ok := asl.States[name]
		if !ok {
			return nil, fmt.Errorf("stepfunctions: no state %q", name)
		}
		path = append(path, name)
		switch {
		case st.Type == "Succeed" || st.Type == "Fail":
			if len(decisions) > 0 {
				return path, fmt.Errorf("stepfunctions: the execution ended with decisions %v left", decisions)
			}
			return path, nil
		case st.Type == "Choice":
			next := st.Default
			for _, c := range st.Choices {
				for _, rule := range c.And {
					if rule.StringEquals != nil && *rule.StringEquals == decision {
						next = c.Next
					}
				}
				if next != st.Default {
					break
				}
			}
			name = next
		case name == "Run": // the recorder: it answers the next decision
			if len(decisions) == 0 {
				return path, fmt.Errorf("stepfunctions: the recorder was called with no decision left")
			}
			decision, decisions = decisions[0], decisions[1:]
			name = st.Next
		default:
			name = st.Next
		}
		if len(path) > 10000 {
			return path, fmt.Errorf("stepfunctions: the path does not end")
		}
	}
}
