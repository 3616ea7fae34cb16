package operation

import (
	"testing"
	"time"
)

func TestOutcomeMeasures(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	o := Operation{Admission: Admission{Type: "demo.task"}, CreatedAt: at.Add(-2500 * time.Millisecond)}
	for _, tc := range []struct {
		kind  Kind
		steps int
		want  []Measure
	}{
		{KindSucceeded, 3, []Measure{
			{"OperationLatency", "Milliseconds", 2500, []string{"Type", "demo.task", "Outcome", "succeeded"}},
			{"StepsRun", "Count", 3, []string{"Type", "demo.task", "Outcome", "succeeded"}},
		}},
		{KindOutcomeUnknown, -1, []Measure{
			{"OperationLatency", "Milliseconds", 2500, []string{"Type", "demo.task", "Outcome", "outcome_unknown"}},
			{"OutcomeUnknown", "Count", 1, []string{"Type", "demo.task"}},
		}},
	} {
		got := OutcomeMeasures(o, tc.kind, tc.steps, at)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %+v", tc.kind, got)
		}
		for i := range got {
			if got[i].Name != tc.want[i].Name || got[i].Unit != tc.want[i].Unit || got[i].Value != tc.want[i].Value ||
				len(got[i].Dims) != len(tc.want[i].Dims) {
				t.Errorf("%s: %+v, want %+v", tc.kind, got[i], tc.want[i])
				continue
			}
			for j := range got[i].Dims {
				if got[i].Dims[j] != tc.want[i].Dims[j] {
					t.Errorf("%s: dims %v, want %v", tc.kind, got[i].Dims, tc.want[i].Dims)
				}
			}
		}
	}
	// A clock behind the acceptance is no negative latency.
	if m := OutcomeMeasures(o, KindFailed, 0, o.CreatedAt.Add(-time.Second)); m[0].Value != 0 {
		t.Fatalf("%+v", m)
	}
}
