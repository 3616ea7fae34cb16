package recorder

import (
	"encoding/json"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/worker"
)

// The same worker failure must give the same fact whether it arrived through a Catch (AWS)
// or as an error payload in the task result (kumo).
func TestOutcomeIsTheSameOnBothPaths(t *testing.T) {
	viaCatch := Input{OperationID: "op_1", Error: &TaskError{Error: "Runtime.ExitError", Cause: `{"errorMessage":"boom"}`}}
	viaPayload := Input{OperationID: "op_1", Task: &Task{Report: &worker.Report{ErrorType: "Runtime.ExitError", ErrorMessage: "boom"}}}
	a, okA := Outcome(viaCatch)
	b, okB := Outcome(viaPayload)
	if !okA || !okB || a.Kind != operation.KindOutcomeUnknown {
		t.Fatalf("%+v %+v", a, b)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("paths differ:\n%s\n%s", ja, jb)
	}
}

func TestOutcomeTable(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		kind operation.Kind
		ok   bool
	}{
		{"succeeded", Input{Task: &Task{Report: &worker.Report{Done: true, Outcome: operation.KindSucceeded, Result: json.RawMessage(`{}`)}}}, operation.KindSucceeded, true},
		{"failed", Input{Task: &Task{Report: &worker.Report{Done: true, Outcome: operation.KindFailed}}}, operation.KindFailed, true},
		{"unknown", Input{Task: &Task{Report: &worker.Report{Done: true, Outcome: operation.KindOutcomeUnknown}}}, operation.KindOutcomeUnknown, true},
		{"canceled", Input{Task: &Task{Report: &worker.Report{Done: true, Outcome: operation.KindCanceled}}}, operation.KindCanceled, true},
		{"settled elsewhere", Input{Task: &Task{Report: &worker.Report{Done: true}}}, "", false},
		{"no report", Input{}, operation.KindOutcomeUnknown, true},
		{"a worker error after the step began", Input{Error: &TaskError{Error: "wrapError"}}, operation.KindOutcomeUnknown, true},
		{"the worker failed before the step began (Catch)", Input{Error: &TaskError{Error: worker.NotStartedErrorType}}, operation.KindFailed, true},
		{"the worker failed before the step began (payload)", Input{Task: &Task{Report: &worker.Report{ErrorType: worker.NotStartedErrorType}}}, operation.KindFailed, true},
		{"a non-terminal outcome is not trusted", Input{Task: &Task{Report: &worker.Report{Done: true, Outcome: operation.KindStarted}}}, "", false},
	}
	for _, tc := range tests {
		f, ok := Outcome(tc.in)
		if ok != tc.ok || f.Kind != tc.kind {
			t.Errorf("%s: %v %s", tc.name, ok, f.Kind)
		}
	}
}
