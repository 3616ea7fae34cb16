// Package tracing is the functions' OpenTelemetry wiring (docs/observability.md#tracing):
// the tracer provider LONGRUN_TRACING chooses (off, OTLP/HTTP to the ADOT collector layer
// that sends to X-Ray, or JSON lines in a file locally), the Lambda instrumentation of each
// invocation (flushed before Lambda freezes the process) and the AWS SDK's. Services never
// see it: they take a trace.Tracer, and internal/core/tracelink joins their spans across
// the stream and the workflow.
package tracing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-lambda-go/otellambda"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Mode is what LONGRUN_TRACING says to do with spans.
type Mode string

const (
	// Off traces nothing: a no-op tracer provider, no instrumentation, no cost. The default.
	Off Mode = "off"
	// OTLP sends spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (on Lambda the ADOT
	// collector layer, which sends them to X-Ray), with X-Ray trace ids.
	OTLP Mode = "otlp"
	// File appends spans as JSON lines to LONGRUN_TRACE_FILE (the local stack).
	File Mode = "file"
)

// DefaultEndpoint is where the ADOT collector Lambda layer listens for OTLP/HTTP.
const DefaultEndpoint = "http://localhost:4318"

// Scope is the instrumentation scope of longrun's own spans.
const Scope = "github.com/longrun-dev/longrun"

// FlushTimeout bounds the flush at the end of an invocation. The collector layer is on
// localhost and answers in milliseconds; an absent or stuck one (the exporter retries for up
// to a minute) must not hold every invocation until its deadline. Spans it could not send
// stay queued for the next flush.
const FlushTimeout = time.Second

// Config is the tracing a function's environment asks for.
type Config struct {
	Mode Mode
	// Endpoint is the OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT, default
	// DefaultEndpoint); spans go to its /v1/traces. OTLP only.
	Endpoint string
	// File is LONGRUN_TRACE_FILE, the file spans are appended to. File only.
	File string
}

// FromEnv reads the tracing settings with getenv (os.Getenv): LONGRUN_TRACING off (or
// empty), otlp or file; OTEL_EXPORTER_OTLP_ENDPOINT; LONGRUN_TRACE_FILE.
func FromEnv(getenv func(string) string) (Config, error) {
	switch mode := Mode(strings.TrimSpace(getenv("LONGRUN_TRACING"))); mode {
	case "", Off:
		return Config{Mode: Off}, nil
	case OTLP:
		endpoint := strings.TrimRight(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), "/")
		if endpoint == "" {
			endpoint = DefaultEndpoint
		}
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_ENDPOINT=%q is not an http:// or https:// URL", endpoint)
		}
		return Config{Mode: OTLP, Endpoint: endpoint}, nil
	case File:
		file := strings.TrimSpace(getenv("LONGRUN_TRACE_FILE"))
		if file == "" {
			return Config{}, errors.New("tracing: LONGRUN_TRACING=file needs LONGRUN_TRACE_FILE, the file to append spans to")
		}
		return Config{Mode: File, File: file}, nil
	default:
		return Config{}, fmt.Errorf("tracing: LONGRUN_TRACING=%q is none of off, otlp, file", string(mode))
	}
}

// Tracing is one function's tracer provider and instrumentation. A nil *Tracing is off.
type Tracing struct {
	sdk        *sdktrace.TracerProvider // nil when off
	propagator propagation.TextMapPropagator
	closeFile  func() error
}

// New builds the tracing cfg asks for; service names the function's spans (service.name,
// "longrun-api"). Off builds nothing.
func New(ctx context.Context, cfg Config, service string) (*Tracing, error) {
	var opts []sdktrace.TracerProviderOption
	t := &Tracing{propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, xray.Propagator{})}
	switch cfg.Mode {
	case "", Off:
		return &Tracing{}, nil
	case OTLP:
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint+"/v1/traces"))
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
		// X-Ray reads its trace ids' first 8 hex digits as the start time.
		opts = append(opts, sdktrace.WithBatcher(exp), sdktrace.WithIDGenerator(xray.NewIDGenerator()))
	case File:
		f, err := os.OpenFile(cfg.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("tracing: trace file: %w", err)
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(&lines{w: f}))
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("tracing: file exporter: %w", err)
		}
		// Written as each span ends: the file is local, and a killed process loses nothing.
		opts = append(opts, sdktrace.WithSyncer(exp))
		t.closeFile = f.Close
	default:
		return nil, fmt.Errorf("tracing: unknown mode %q", string(cfg.Mode))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	// Parent-based: on Lambda the invocation's X-Ray header carries X-Ray's sampling
	// decision, and every span of the invocation follows it.
	t.sdk = sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))...)
	return t, nil
}

// Enabled reports whether spans go anywhere.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// TracerProvider is the provider spans come from: a no-op one when off.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return noop.NewTracerProvider()
	}
	return t.sdk
}

// Tracer is the tracer of longrun's own spans, for the services.
func (t *Tracing) Tracer() trace.Tracer { return t.TracerProvider().Tracer(Scope) }

// ForceFlush exports every ended span now: Lambda may freeze the process as soon as an
// invocation returns, with spans still in the batch.
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, FlushTimeout)
	defer cancel()
	return t.sdk.ForceFlush(ctx)
}

// Shutdown flushes and stops the provider, closing the trace file.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	err := t.sdk.Shutdown(ctx)
	if t.closeFile != nil {
		err = errors.Join(err, t.closeFile())
	}
	return err
}

// InstrumentAWS adds a span to every AWS SDK call made with cfg (clients made from it
// after this call), passing the trace on in the X-Ray header (Step Functions, with tracing
// on, continues it) and W3C traceparent. Off leaves cfg alone.
func (t *Tracing) InstrumentAWS(cfg *aws.Config) {
	if !t.Enabled() {
		return
	}
	otelaws.AppendMiddlewares(&cfg.APIOptions, otelaws.WithTracerProvider(t.sdk), otelaws.WithTextMapPropagator(t.propagator))
}

// WrapHandler gives every invocation of h a span (the parent of the handler's own), a
// child of the trace Lambda started for it when there is one (the X-Ray header), and
// flushes the spans before the invocation returns. service names the span where
// AWS_LAMBDA_FUNCTION_NAME does not (the local stack). Off returns h.
func (t *Tracing) WrapHandler(h lambda.Handler, service string) lambda.Handler {
	if !t.Enabled() {
		return h
	}
	name := ""
	if os.Getenv("AWS_LAMBDA_FUNCTION_NAME") == "" { // a function without a name: say whose span it is
		name = service
	}
	return otellambda.WrapHandler(invocation{h, name}, otellambda.WithTracerProvider(t.sdk),
		otellambda.WithFlusher(t), otellambda.WithPropagator(lambdaTrace{}))
}

// invocation marks the invocation span as failed when the handler fails, and renames it
// when name is set.
type invocation struct {
	lambda.Handler
	name string
}

func (h invocation) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	span := trace.SpanFromContext(ctx)
	if h.name != "" {
		span.SetName(h.name)
	}
	out, err := h.Handler.Invoke(ctx, payload)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "handler failed")
	}
	return out, err
}

// lambdaTrace extracts the X-Ray trace header of the invocation: aws-lambda-go puts it in
// the context (and in _X_AMZN_TRACE_ID, which concurrent invocations of one process share).
type lambdaTrace struct{}

func (lambdaTrace) Extract(ctx context.Context, _ propagation.TextMapCarrier) context.Context {
	header, _ := ctx.Value("x-amzn-trace-id").(string) // the key aws-lambda-go sets
	if header == "" {
		header = os.Getenv("_X_AMZN_TRACE_ID")
	}
	if header == "" {
		return ctx
	}
	return xray.Propagator{}.Extract(ctx, propagation.HeaderCarrier(http.Header{"X-Amzn-Trace-Id": {header}}))
}

func (lambdaTrace) Inject(context.Context, propagation.TextMapCarrier) {}

func (lambdaTrace) Fields() []string { return nil }

// lines hands its writer whole lines only, one write each: the trace file is shared by
// every local function's process, and O_APPEND keeps whole writes from interleaving.
type lines struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	end := bytes.LastIndexByte(l.buf, '\n')
	if end < 0 {
		return len(p), nil
	}
	_, err := l.w.Write(l.buf[:end+1])
	l.buf = append(l.buf[:0], l.buf[end+1:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}
