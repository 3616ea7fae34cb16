package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/step"
	"github.com/longrun-dev/longrun/internal/local/eventfilter"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
	"github.com/longrun-dev/longrun/internal/service/notify"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// strict decodes a sample into a function's input type, refusing unknown fields, so a
// sample cannot drift from what the function reads.
func strict(t *testing.T, name string, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(Sample(name)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("sample %s: %v", name, err)
	}
}

func TestSamplesAreWhatTheFunctionsRead(t *testing.T) {
	var api lambdaevents.APIGatewayProxyRequest
	strict(t, "api", &api)
	if scope, err := (httpapi.Callers{}).Scope(api.RequestContext); err != nil || scope.Tenant != "acme" {
		t.Fatalf("api sample: %v %v", scope, err)
	}

	var dispatcher lambdaevents.DynamoDBEvent
	strict(t, "dispatcher", &dispatcher)
	if id, ok := dynamo.OutboxOperation(dispatcher.Records[0]); !ok || id != "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3" {
		t.Fatalf("dispatcher sample: %q %v", id, ok)
	}

	var notifier lambdaevents.DynamoDBEvent
	strict(t, "notifier", &notifier)
	c, ok, err := dynamo.ProjectionChange(notifier.Records[0])
	if err != nil || !ok || c.State != "succeeded" || c.PreviousState != "running" || c.Version != 4 {
		t.Fatalf("notifier sample: %+v %v %v", c, ok, err)
	}

	// The worker protocol's samples (the public worker package checks them against the
	// protocol's schemas) are what longrun's side sends and reads.
	samples := Samples("worker")
	if len(samples) < 6 {
		t.Fatalf("worker protocol samples: %v", samples)
	}
	for _, name := range samples {
		switch {
		case strings.Contains(name, "request"):
			var req step.Request
			strict(t, name, &req)
			if req.Protocol != step.Protocol || req.OperationID == "" || req.Step < 1 {
				t.Fatalf("%s: %+v", name, req)
			}
		case strings.Contains(name, "report"):
			if _, err := step.ParseReport(Sample(name)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		default:
			t.Fatalf("%s: neither a request nor a report", name)
		}
	}
	var first, ok1, caught recorder.Input
	strict(t, "recorder-first", &first)
	strict(t, "recorder", &ok1)
	strict(t, "recorder-caught-error", &caught)
	if first.OperationID == "" {
		t.Fatal("the recorder's first input names the operation")
	}
	if f, ok := recorder.Outcome(ok1); !ok || f.Kind != "succeeded" {
		t.Fatalf("recorder sample: %+v", f)
	}
	if f, ok := recorder.Outcome(caught); !ok || f.Kind != "outcome_unknown" {
		t.Fatalf("recorder caught-error sample: %+v", f)
	}
	var scheduled lambdaevents.EventBridgeEvent
	strict(t, "reconciler", &scheduled)
}

// The stream samples pass their mapping's filter; the other mapping's filter rejects them.
func TestStreamSamplesMatchTheirFilters(t *testing.T) {
	for _, m := range eventsource.Mappings() {
		p, err := eventfilter.Compile(m.Filter)
		if err != nil {
			t.Fatal(err)
		}
		for _, sample := range []string{"dispatcher", "notifier"} {
			var ev struct{ Records []json.RawMessage }
			if err := json.Unmarshal(Sample(sample), &ev); err != nil {
				t.Fatal(err)
			}
			if got, want := p.Match(ev.Records[0]), sample == m.Function; got != want {
				t.Errorf("%s filter on the %s sample: %v", m.Function, sample, got)
			}
		}
	}
}

func TestStateChangedSchema(t *testing.T) {
	v, err := NewValidator(StateChangedSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, sample := range []string{"operation-state-changed", "operation-state-changed-result-omitted", "operation-state-changed-awaiting"} {
		if err := v.Validate(Sample(sample)); err != nil {
			t.Fatalf("the sample event %s: %v", sample, err)
		}
	}
	// What the notifier builds from the notifier sample validates too.
	var ev lambdaevents.DynamoDBEvent
	_ = json.Unmarshal(Sample("notifier"), &ev)
	c, _, _ := dynamo.ProjectionChange(ev.Records[0])
	detail := notify.Encode(c)
	event := []byte(`{"source":"longrun","detail-type":"Operation State Changed","detail":` + string(detail) + `}`)
	if err := v.Validate(event); err != nil {
		t.Fatalf("the notifier's detail: %v\n%s", err, event)
	}
	if c.CorrelationID != "4bf92f3577b34da6a3ce929d0e0e4736" || !bytes.Contains(event, []byte(`"correlationId":"4bf92f3577b34da6a3ce929d0e0e4736"`)) {
		t.Fatalf("the detail lost the projection's correlation id: %s", event)
	}
	// And so does what it builds for a result too large for an event (a reference), or a
	// problem.
	c.Rep.Result = json.RawMessage(`{"blob":"` + strings.Repeat("x", notify.MaxDetailBytes) + `"}`)
	omitted := []byte(`{"source":"longrun","detail-type":"Operation State Changed","detail":` + string(notify.Encode(c)) + `}`)
	if err := v.Validate(omitted); err != nil || !bytes.Contains(omitted, []byte(`"resultOmitted":true`)) {
		t.Fatalf("the notifier's detail without its result: %v\n%.300s", err, omitted)
	}
	failed := c
	failed.State, failed.Rep.Result = "failed", nil
	failed.Rep.Problem = &operation.Problem{Type: "https://longrun.dev/problems/resolved_failed", Title: "Resolved as failed",
		Code: "resolved_failed", Detail: strings.Repeat("p", notify.MaxDetailBytes)}
	noProblem := []byte(`{"source":"longrun","detail-type":"Operation State Changed","detail":` + string(notify.Encode(failed)) + `}`)
	if err := v.Validate(noProblem); err != nil || !bytes.Contains(noProblem, []byte(`"problemOmitted":true`)) {
		t.Fatalf("the notifier's detail without its problem: %v\n%.300s", err, noProblem)
	}
	// And so does what it builds while the work waits for a signal: the representation's
	// awaiting.
	waits := c
	waits.State, waits.PreviousState, waits.Rep.Result = "running", "running", nil
	waits.Rep.Awaiting = &operation.AwaitingView{Signal: "approval", Since: "2026-11-30T10:00:03.000Z", Until: "2026-12-01T10:00:03.000Z"}
	awaiting := []byte(`{"source":"longrun","detail-type":"Operation State Changed","detail":` + string(notify.Encode(waits)) + `}`)
	if err := v.Validate(awaiting); err != nil ||
		!bytes.Contains(awaiting, []byte(`"awaiting":{"signal":"approval","since":"2026-11-30T10:00:03.000Z","until":"2026-12-01T10:00:03.000Z"}`)) {
		t.Fatalf("the notifier's detail while the work waits: %v\n%s", err, awaiting)
	}
	// And what it builds for the change an operator's retry made: the representation's
	// retried.
	retry := c
	retry.State, retry.PreviousState, retry.Rep.Result = "running", "outcome_unknown", nil
	retry.Rep.Retried = &operation.RetriedView{Step: 2, Attempt: 2, At: "2026-11-30T10:05:00.000Z", Reason: "not applied downstream"}
	retried := []byte(`{"source":"longrun","detail-type":"Operation State Changed","detail":` + string(notify.Encode(retry)) + `}`)
	if err := v.Validate(retried); err != nil ||
		!bytes.Contains(retried, []byte(`"retried":{"step":2,"attempt":2,"at":"2026-11-30T10:05:00.000Z","reason":"not applied downstream"}`)) {
		t.Fatalf("the notifier's detail after a retry: %v\n%s", err, retried)
	}
	// And the schema can fail.
	for _, bad := range []string{
		strings.Replace(string(retried), `"attempt":2`, `"attempt":1`, 1),              // a first run is no retry
		strings.Replace(string(retried), `,"reason":"not applied downstream"`, ``, 1),  // a retry without why
		strings.Replace(string(retried), `"reason"`, `"state":{},"reason"`, 1),         // the worker's state
		strings.Replace(string(retried), `"reason"`, `"by":"longrun/ops","reason"`, 1), // the operator
		strings.Replace(string(event), `"version":4`, `"version":0`, 1),
		strings.Replace(string(event), `"state":"succeeded"`, `"state":"done"`, 1),
		strings.Replace(string(event), `"previousState":"running"`, `"previousState":null`, 1),
		strings.Replace(string(event), `"tenant":"acme",`, ``, 1),
		strings.Replace(string(event), `"state":"succeeded"`, `"state":"failed"`, 1), // a result with failed
		strings.Replace(string(event), `"source":"longrun"`, `"source":"other"`, 1),
		strings.Replace(string(event), `"correlationId":"4bf92f3577b34da6a3ce929d0e0e4736"`, `"correlationId":""`, 1),
		strings.Replace(string(event), `"version":4`, `"version":4,"resultOmitted":true`, 1),                // and the result
		strings.Replace(string(omitted), `"state":"succeeded"`, `"state":"failed"`, 1),                      // omitted from a failure
		strings.Replace(string(omitted), `"resultOmitted":true`, `"resultOmitted":false`, 1),                // only ever true
		strings.Replace(string(noProblem), `"problemOmitted":true`, `"problemOmitted":true,"result":{}`, 1), // a result with failed
		strings.Replace(string(noProblem), `"state":"failed"`, `"state":"succeeded"`, 1),                    // a problem omitted from a success
		strings.Replace(string(awaiting), `"state":"running"`, `"state":"cancelling"`, 1),                   // a wait once cancelling
		strings.Replace(string(awaiting), `"signal":"approval"`, `"signal":"Approval"`, 1),                  // not a signal's name
		strings.Replace(string(awaiting), `,"until":"2026-12-01T10:00:03.000Z"`, ``, 1),                     // a wait without its end
		strings.Replace(string(awaiting), `"until"`, `"step":1,"until"`, 1),                                 // more than the representation's
	} {
		if v.Validate([]byte(bad)) == nil {
			t.Errorf("accepted: %s", bad)
		}
	}
}
