// Package logctx carries what a log line says about the work in hand (the operation, its
// correlation id, the API request) in a context.Context, so that services log with
// log.InfoContext(ctx, …) and the functions' log handler (internal/aws/lambdalog) adds the
// fields to every line, without the services knowing how lines are written.
package logctx

import (
	"context"
	"sync"
)

// Fields are the log fields of one unit of work; empty ones are left out of lines.
type Fields struct {
	CorrelationID string // correlation_id: born at admission, carried by the operation
	OperationID   string // operation_id
	RequestID     string // request_id: the API's X-Request-Id
}

// merge is f with the non-empty members of g over it.
func (f Fields) merge(g Fields) Fields {
	if g.CorrelationID != "" {
		f.CorrelationID = g.CorrelationID
	}
	if g.OperationID != "" {
		f.OperationID = g.OperationID
	}
	if g.RequestID != "" {
		f.RequestID = g.RequestID
	}
	return f
}

type key struct{}

type holder struct {
	mu sync.Mutex
	f  Fields
}

// With returns a context for a new unit of work: ctx's fields with the non-empty members
// of f over them. Set on the returned context does not change ctx's fields.
func With(ctx context.Context, f Fields) context.Context {
	return context.WithValue(ctx, key{}, &holder{f: From(ctx).merge(f)})
}

// Set adds what became known about the unit of work ctx was made for by With (the
// operation's correlation id once it is loaded, say): the non-empty members of f replace its
// fields, for every context derived from that one. Without With it does nothing.
func Set(ctx context.Context, f Fields) {
	if h, ok := ctx.Value(key{}).(*holder); ok {
		h.mu.Lock()
		h.f = h.f.merge(f)
		h.mu.Unlock()
	}
}

// From is ctx's fields (none when ctx has none).
func From(ctx context.Context) Fields {
	h, ok := ctx.Value(key{}).(*holder)
	if !ok {
		return Fields{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.f
}
