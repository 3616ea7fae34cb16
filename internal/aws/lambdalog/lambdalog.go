// Package lambdalog is the log handler every longrun function writes with: JSON lines with
// the field names of Powertools for AWS Lambda (docs/observability.md), so that one Logs
// Insights query follows an operation through every function by its correlation_id.
//
// A line has level ("INFO"), message, timestamp (RFC 3339, UTC, milliseconds) and service
// always; function_name where AWS_LAMBDA_FUNCTION_NAME is set; cold_start and
// function_request_id inside an invocation (Invocations marks them); xray_trace_id when the
// invocation is traced; and correlation_id, operation_id and request_id from the context's
// internal/core/logctx fields, which services set. Attributes a call logs itself win over
// the context's of the same name.
package lambdalog

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/longrun-dev/longrun/internal/core/logctx"
)

// The field names (Powertools for AWS Lambda's).
const (
	KeyLevel             = "level"
	KeyMessage           = "message"
	KeyTimestamp         = "timestamp"
	KeyService           = "service"
	KeyColdStart         = "cold_start"
	KeyFunctionName      = "function_name"
	KeyFunctionRequestID = "function_request_id"
	KeyXRayTraceID       = "xray_trace_id"
	KeyCorrelationID     = "correlation_id"
	KeyOperationID       = "operation_id"
	KeyRequestID         = "request_id"
)

// TimestampLayout is how timestamp is written: RFC 3339 in UTC with milliseconds.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// Handler is a slog.Handler writing Powertools-shaped JSON lines. Make one with New.
type Handler struct {
	inner slog.Handler
	// attached are the top-level keys WithAttrs added, so context fields do not repeat them.
	attached map[string]bool
	grouped  bool
}

// ServiceName is the service a function logs as: POWERTOOLS_SERVICE_NAME when it is set,
// else name (longrun's functions pass "longrun-" and their own name).
func ServiceName(name string) string {
	if s := os.Getenv("POWERTOOLS_SERVICE_NAME"); s != "" {
		return s
	}
	return name
}

// New writes to w lines of level and above, with service and, where
// AWS_LAMBDA_FUNCTION_NAME is set, function_name on every line.
func New(w io.Writer, service string, level slog.Leveler) *Handler {
	h := &Handler{inner: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replace}),
		attached: map[string]bool{}}
	attrs := []slog.Attr{slog.String(KeyService, service)}
	if name := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); name != "" {
		attrs = append(attrs, slog.String(KeyFunctionName, name))
	}
	return h.WithAttrs(attrs).(*Handler)
}

// replace renames slog's built-in keys to Powertools' and writes the time as
// TimestampLayout.
func replace(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		return slog.String(KeyTimestamp, a.Value.Time().UTC().Format(TimestampLayout))
	case slog.MessageKey:
		return slog.Attr{Key: KeyMessage, Value: a.Value}
	case slog.LevelKey:
		return slog.String(KeyLevel, strings.ToUpper(a.Value.String()))
	}
	return a
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	next := &Handler{inner: h.inner.WithAttrs(attrs), attached: h.attached, grouped: h.grouped}
	if !h.grouped {
		next.attached = make(map[string]bool, len(h.attached)+len(attrs))
		for k := range h.attached {
			next.attached[k] = true
		}
		for _, a := range attrs {
			next.attached[a.Key] = true
		}
	}
	return next
}

// WithGroup implements slog.Handler. Context fields of lines logged through a group are
// written inside it.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{inner: h.inner.WithGroup(name), attached: h.attached, grouped: true}
}

// Handle implements slog.Handler: r's attributes after the invocation's and the context's
// fields, those r or WithAttrs already has left out.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	has := func(key string) bool {
		if h.attached[key] {
			return true
		}
		found := false
		r.Attrs(func(a slog.Attr) bool {
			found = a.Key == key
			return !found
		})
		return found
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	add := func(key, value string) {
		if value != "" && !has(key) {
			out.AddAttrs(slog.String(key, value))
		}
	}
	if cold, ok := ctx.Value(invocationKey{}).(bool); ok && !has(KeyColdStart) {
		out.AddAttrs(slog.Bool(KeyColdStart, cold))
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		add(KeyFunctionRequestID, lc.AwsRequestID)
	}
	add(KeyXRayTraceID, TraceID(ctx))
	f := logctx.From(ctx)
	add(KeyCorrelationID, f.CorrelationID)
	add(KeyOperationID, f.OperationID)
	add(KeyRequestID, f.RequestID)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.inner.Handle(ctx, out)
}

// TraceID is the X-Ray trace id of the invocation ctx belongs to ("1-5759e988-…", the Root
// of the trace header), from the context the Lambda runtime passes or from _X_AMZN_TRACE_ID;
// "" when there is none.
func TraceID(ctx context.Context) string {
	header, _ := ctx.Value("x-amzn-trace-id").(string) // the key aws-lambda-go sets
	if header == "" {
		header = os.Getenv("_X_AMZN_TRACE_ID")
	}
	for part := range strings.SplitSeq(header, ";") {
		if root, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return root
		}
	}
	return ""
}

type invocationKey struct{}

// invocations marks each invocation's context with whether it is the process's first.
type invocations struct {
	next lambda.Handler
	seen atomic.Bool
}

// Invocations wraps a Lambda handler so that each invocation's lines say cold_start: true
// for the first invocation of the process, false after it. lambda.Start(Invocations(h))
// runs it.
func Invocations(next lambda.Handler) lambda.Handler { return &invocations{next: next} }

func (i *invocations) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return i.next.Invoke(context.WithValue(ctx, invocationKey{}, !i.seen.Swap(true)), payload)
}
