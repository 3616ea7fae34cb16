package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/longrun-dev/longrun/internal/core/tracelink"
)

// traceTo gives the handler a tracer whose spans rec keeps.
func traceTo(rec *tracetest.SpanRecorder) option {
	return func(e *env) {
		e.handler.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	}
}

const callerTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// An admission is one span, linked to the caller's trace, that says how it ended and holds
// no key, input or token; the operation records that span's traceparent for the dispatcher
// to link to, and a replay leaves it as it was.
func TestAdmissionSpanIsRecordedWithTheOperation(t *testing.T) {
	t.Parallel()
	const marker = "marker-3f9a0c"
	rec := tracetest.NewSpanRecorder()
	e := newEnv(t, traceTo(rec))
	header := map[string]string{"traceparent": callerTraceparent, "Authorization": "Bearer secret-token-9d1e"}
	first := e.do(req{caller: "alice", keys: []string{"k-trace-" + marker}, body: demo(marker), header: header})
	if first.status != http.StatusAccepted {
		t.Fatalf("%d %s", first.status, first.body)
	}
	id := first.json["operationId"].(string)

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	span := spans[0]
	if span.Name() != "POST /v1/operations" {
		t.Errorf("span name %q", span.Name())
	}
	links := span.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		links[0].SpanContext.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("links %+v, want the caller's span", links)
	}
	attrs := map[string]string{}
	for _, kv := range span.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
		for _, secret := range []string{marker, "secret-token", "k-trace"} {
			if strings.Contains(kv.Value.Emit(), secret) {
				t.Errorf("attribute %s holds %q", kv.Key, secret)
			}
		}
	}
	for k, want := range map[string]string{"http.response.status_code": "202", "longrun.admission.outcome": "created",
		"longrun.operation.id": id, "http.request.method": "POST", "http.route": "/v1/operations"} {
		if attrs[k] != want {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}

	op, err := e.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if op.Traceparent != want {
		t.Fatalf("the operation records traceparent %q, want the admission span's %q", op.Traceparent, want)
	}
	if op.CorrelationID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("correlation id %q", op.CorrelationID)
	}

	replay := e.do(req{caller: "alice", keys: []string{"k-trace-" + marker}, body: demo(marker)})
	if replay.status != http.StatusAccepted || replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %v", replay.status, replay.header)
	}
	if got := rec.Ended(); len(got) != 2 || len(got[1].Links()) != 0 {
		t.Fatalf("the replay's span: %d spans", len(got))
	}
	for _, kv := range rec.Ended()[1].Attributes() {
		if kv.Key == "longrun.admission.outcome" && kv.Value.AsString() != "replayed" {
			t.Errorf("replay outcome %q", kv.Value.AsString())
		}
	}
	if op, _ := e.store.Load(context.Background(), id); op.Traceparent != want {
		t.Errorf("the replay changed the recorded traceparent to %q", op.Traceparent)
	}

	// A status read is a span of its route, with no id in its name.
	e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, caller: "alice"})
	if got := rec.Ended(); len(got) != 3 || got[2].Name() != "GET /v1/operations/{operationId}" {
		t.Fatalf("the status read's span: %v", got[len(got)-1].Name())
	}
}

// A 5xx marks the span as an error, a 4xx does not (it is the caller's).
func TestRequestSpanStatus(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	e := newEnv(t, traceTo(rec))
	e.handler.Types = nil // discovery answers 500 internal without its registry
	e.do(req{method: http.MethodGet, path: "/v1/operation-types", caller: "alice"})
	e.do(req{caller: "alice", keys: []string{"k-bad"}, body: `{"type":"no.such"}`})
	got := rec.Ended()
	if len(got) != 2 || got[0].Status().Code.String() != "Error" || got[1].Status().Code.String() == "Error" {
		t.Fatalf("statuses %v", got)
	}
}

// Without a tracer nothing is recorded, whatever the caller sent: the operation has no
// traceparent (the caller's is not ours to pass on as the admission's).
func TestNoTracerRecordsNoTraceparent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(req{caller: "alice", keys: []string{"k-untraced"}, body: demo("untraced"), header: map[string]string{"traceparent": callerTraceparent}})
	op, err := e.store.Load(context.Background(), r.json["operationId"].(string))
	if err != nil || op.Traceparent != "" || op.CorrelationID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("traceparent %q correlation %q %v", op.Traceparent, op.CorrelationID, err)
	}
	if _, ok := tracelink.Parse(callerTraceparent); !ok {
		t.Fatal("the test's traceparent is invalid")
	}
}
