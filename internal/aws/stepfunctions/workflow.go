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

// TaskBudget is the longest the template's Task state can run, retries included: every
// attempt to its timeout (the first, and each retrier's MaxAttempts, since different errors
// retry separately) and the waits between them. timeout is the attempt's timeout for a state
// that reads it from the workflow's data (TimeoutSecondsPath: the type's stepTimeout).
func TaskBudget(state string, timeout time.Duration) (time.Duration, error) {
	var asl struct {
		States map[string]struct {
			Type               string
			TimeoutSeconds     float64
			TimeoutSecondsPath string
			Retry              []struct {
				IntervalSeconds, BackoffRate, MaxDelaySeconds float64
				MaxAttempts                                   int
			}
		}
	}
	if err := json.Unmarshal([]byte(template), &asl); err != nil {
		return 0, fmt.Errorf("stepfunctions: the template: %w", err)
	}
	st, ok := asl.States[state]
	if ok && st.TimeoutSecondsPath != "" && timeout > 0 {
		st.TimeoutSeconds = timeout.Seconds()
	}
	if !ok || st.Type != "Task" || st.TimeoutSeconds <= 0 {
		return 0, fmt.Errorf("stepfunctions: %q is not a Task state with a timeout", state)
	}
	attempts, waits := 1, 0.0
	for _, r := range st.Retry {
		attempts += r.MaxAttempts
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
			waits += wait
		}
	}
	return time.Duration((float64(attempts)*st.TimeoutSeconds + waits) * float64(time.Second)), nil
}

// CancelBudget is how long a workflow whose steps may take stepTimeout may rightly go on
// after a cancel: the step in flight runs to its end (with its retries; intent is checked
// only between steps) or the pause in progress ends (step.MaxPause), then the Gate state
// records the outcome (with its retries). A reconciler that stops the execution sooner stops
// work that was about to end by itself, so the cancel lease must exceed this for every type.
func CancelBudget(stepTimeout time.Duration) time.Duration {
	work, err1 := TaskBudget("Work", stepTimeout)
	gate, err2 := TaskBudget("Gate", 0)
	if err1 != nil || err2 != nil {
		panic(fmt.Sprintf("stepfunctions: the embedded template: %v %v", err1, err2)) // a test proves it parses
	}
	return max(work, step.MaxPause) + gate
}

// Path is the states an execution of the template enters when the recorder decides, in
// turn, decisions ("work", "wait" or "done"; the last must be "done"): the Standard state
// transitions it is billed for, retries aside. It follows the template itself (its Next
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
		case name == "Gate": // the recorder: it answers the next decision
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
