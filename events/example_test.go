package events_test

import (
	"fmt"

	"github.com/longrun-dev/longrun/events"
)

// A subscriber's test checks the events it is written against with the published schema:
// the sample "Operation State Changed" event passes, and one whose state is not a state of
// the contract does not.
func ExampleValidator() {
	v, err := events.NewValidator(events.StateChangedSchema)
	if err != nil {
		panic(err)
	}
	fmt.Println("sample:", v.Validate(events.Sample("operation-state-changed")) == nil)
	bad := []byte(`{"source":"longrun","detail-type":"Operation State Changed","detail":{"state":"almost"}}`)
	fmt.Println("made up:", v.Validate(bad) == nil)
	// Output:
	// sample: true
	// made up: false
}

// The worker protocol's samples: a step request for every kind of step and a report for
// every status, as a worker in any language sends and receives them.
func ExampleSamples() {
	for _, name := range events.Samples("worker") {
		fmt.Println(name)
	}
	// Output:
	// worker/step-report-continue
	// worker/step-report-failed
	// worker/step-report-outcome-unknown
	// worker/step-report-succeeded
	// worker/step-request-first
	// worker/step-request-later
}
