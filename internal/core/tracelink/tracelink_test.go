package tracelink_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/longrun-dev/longrun/internal/core/tracelink"
)

const admitted = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func recorder() (*tracetest.SpanRecorder, trace.Tracer) {
	rec := tracetest.NewSpanRecorder()
	return rec, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
}

// A span started from a traceparent is linked to it, and stays the child of the span in
// hand: the stream and the workflow join traces by links, never by re-parenting.
func TestStartLinksToTheTraceparent(t *testing.T) {
	rec, tracer := recorder()
	ctx, parent := tracer.Start(context.Background(), "invocation")
	ctx, span := tracelink.Start(ctx, tracer, "dispatch", admitted, tracelink.AttrOperationID.String("op_1"))
	span.End()
	parent.End()
	got := rec.Ended()[0]
	if got.Name() != "dispatch" || got.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("span %q with parent %s, want dispatch under %s", got.Name(), got.Parent().SpanID(), parent.SpanContext().SpanID())
	}
	links := got.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		links[0].SpanContext.SpanID().String() != "00f067aa0ba902b7" || !links[0].SpanContext.IsSampled() {
		t.Fatalf("links %+v", links)
	}
	if a := got.Attributes(); len(a) != 1 || a[0].Value.AsString() != "op_1" {
		t.Errorf("attributes %v", a)
	}
	if tracelink.Traceparent(ctx) != "00-"+span.SpanContext().TraceID().String()+"-"+span.SpanContext().SpanID().String()+"-01" {
		t.Errorf("Traceparent(ctx) = %q, not the new span's", tracelink.Traceparent(ctx))
	}
}

// Empty and malformed traceparents add no link; they are never an error (an operation
// admitted before tracing, or with tracing off, has none).
func TestStartWithoutAValidTraceparent(t *testing.T) {
	for _, tp := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		rec, tracer := recorder()
		_, span := tracelink.Start(context.Background(), tracer, "x", tp)
		span.End()
		if l := rec.Ended()[0].Links(); len(l) != 0 {
			t.Errorf("%q: links %v", tp, l)
		}
		if _, ok := tracelink.Parse(tp); ok {
			t.Errorf("%q parsed as valid", tp)
		}
	}
}

// A nil tracer traces nothing: no span context, so nothing is recorded or passed on.
func TestNilTracerTracesNothing(t *testing.T) {
	ctx, span := tracelink.Start(context.Background(), nil, "x", admitted)
	span.End()
	if span.IsRecording() || tracelink.Traceparent(ctx) != "" {
		t.Fatalf("recording %v, traceparent %q", span.IsRecording(), tracelink.Traceparent(ctx))
	}
	if tracelink.Traceparent(context.Background()) != "" {
		t.Fatal("a context without a span has a traceparent")
	}
}

func TestTraceparentRoundTrips(t *testing.T) {
	sc, ok := tracelink.Parse(admitted)
	if !ok {
		t.Fatal("a valid traceparent did not parse")
	}
	if got := tracelink.Traceparent(trace.ContextWithRemoteSpanContext(context.Background(), sc)); got != admitted {
		t.Fatalf("%q, want %q", got, admitted)
	}
}

func TestAddLink(t *testing.T) {
	rec, tracer := recorder()
	_, span := tracer.Start(context.Background(), "dispatch")
	if tracelink.AddLink(span, "") || !tracelink.AddLink(span, admitted) {
		t.Fatal("AddLink's answer is wrong")
	}
	span.End()
	if l := rec.Ended()[0].Links(); len(l) != 1 || l[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("links %v", l)
	}
}
