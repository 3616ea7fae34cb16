// Package tracelink carries trace context across the places where a span cannot be a
// parent: the table's stream (a batch holds several operations' records) and the workflow
// (an execution outlives the call that started it). What crosses is a W3C traceparent
// string, recorded with the operation or passed in an execution's input; the span on the
// far side starts with a link to it. It uses the OpenTelemetry API only, and a nil tracer
// traces nothing, so services take a tracer without caring whether tracing is on.
package tracelink

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Attribute keys longrun's own spans carry.
const (
	AttrOperationID   = attribute.Key("longrun.operation.id")
	AttrOperationType = attribute.Key("longrun.operation.type")
)

const header = "traceparent"

// Start starts a span called name as a child of ctx's span, linked to the span traceparent
// names when it is a valid W3C traceparent (an empty or invalid one adds no link). A nil
// tracer starts a span that records nothing.
func Start(ctx context.Context, tracer trace.Tracer, name, traceparent string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer("")
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
	if sc, ok := Parse(traceparent); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return tracer.Start(ctx, name, opts...)
}

// AddLink links span to the span traceparent names, for a span that learns where its work
// came from only after it started (the dispatcher reads the operation inside its span). It
// reports whether traceparent was valid.
func AddLink(span trace.Span, traceparent string) bool {
	sc, ok := Parse(traceparent)
	if ok {
		span.AddLink(trace.Link{SpanContext: sc})
	}
	return ok
}

// Traceparent is the W3C traceparent of ctx's span, "" when ctx has no valid span (tracing
// is off, say): what a service records or passes on for the next span to link to.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier[header]
}

// Parse reads a W3C traceparent into the span context it names; ok is false when it is
// empty or invalid.
func Parse(traceparent string) (trace.SpanContext, bool) {
	if traceparent == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{header: traceparent})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}
