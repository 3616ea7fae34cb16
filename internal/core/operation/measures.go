package operation

import "time"

// Measure is one metric value about an operation: its name, unit, value and dimensions
// (name, value pairs), for a service's Metrics port.
type Measure struct {
	Name, Unit string
	Value      float64
	Dims       []string
}

// OutcomeMeasures are what every writer that records an outcome of o reports, so that
// accept → outcome latency covers every outcome whoever recorded it (docs/observability.md):
// OperationLatency from o's acceptance to at, by type and outcome; StepsRun when the steps
// run are known (steps ≥ 0; a negative steps says they are not: a step may have been in
// flight); and OutcomeUnknown for an outcome_unknown, which waits for an operator.
func OutcomeMeasures(o Operation, kind Kind, steps int, at time.Time) []Measure {
	outcome := string(kind)
	ms := []Measure{{Name: "OperationLatency", Unit: "Milliseconds", Value: float64(max(at.Sub(o.CreatedAt), 0).Milliseconds()),
		Dims: []string{"Type", o.Type, "Outcome", outcome}}}
	if steps >= 0 {
		ms = append(ms, Measure{Name: "StepsRun", Unit: "Count", Value: float64(steps), Dims: []string{"Type", o.Type, "Outcome", outcome}})
	}
	if kind == KindOutcomeUnknown {
		ms = append(ms, Measure{Name: "OutcomeUnknown", Unit: "Count", Value: 1, Dims: []string{"Type", o.Type}})
	}
	return ms
}
