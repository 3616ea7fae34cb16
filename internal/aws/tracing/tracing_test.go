package tracing_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/longrun-dev/longrun/internal/aws/tracing"
	"github.com/longrun-dev/longrun/internal/core/tracelink"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		vars map[string]string
		want tracing.Config
	}{
		{nil, tracing.Config{Mode: tracing.Off}},
		{map[string]string{"LONGRUN_TRACING": "off", "LONGRUN_TRACE_FILE": "/tmp/x"}, tracing.Config{Mode: tracing.Off}},
		{map[string]string{"LONGRUN_TRACING": "otlp"}, tracing.Config{Mode: tracing.OTLP, Endpoint: "http://localhost:4318"}},
		{map[string]string{"LONGRUN_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318/"},
			tracing.Config{Mode: tracing.OTLP, Endpoint: "https://collector:4318"}},
		{map[string]string{"LONGRUN_TRACING": "file", "LONGRUN_TRACE_FILE": "/tmp/spans.jsonl"},
			tracing.Config{Mode: tracing.File, File: "/tmp/spans.jsonl"}},
	} {
		got, err := tracing.FromEnv(env(c.vars))
		if err != nil || got != c.want {
			t.Errorf("%v: %+v %v, want %+v", c.vars, got, err, c.want)
		}
	}
	for vars, says := range map[*map[string]string]string{
		{"LONGRUN_TRACING": "xray"}: `LONGRUN_TRACING="xray" is none of off, otlp, file`,
		{"LONGRUN_TRACING": "ON"}:   `LONGRUN_TRACING="ON"`,
		{"LONGRUN_TRACING": "file"}: "needs LONGRUN_TRACE_FILE",
		{"LONGRUN_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}: "OTEL_EXPORTER_OTLP_ENDPOINT=",
		{"LONGRUN_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://c:4317"}:  "not an http:// or https:// URL",
	} {
		if _, err := tracing.FromEnv(env(*vars)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%v: %v, want an error saying %q", *vars, err, says)
		}
	}
}

// Off is nothing at all: no recording spans, no SDK middleware, the handler as it was.
func TestOffTracesNothing(t *testing.T) {
	for _, tr := range []*tracing.Tracing{nil, mustNew(t, tracing.Config{Mode: tracing.Off})} {
		if tr.Enabled() {
			t.Fatal("off is enabled")
		}
		ctx, span := tracelink.Start(context.Background(), tr.Tracer(), "x", "")
		if span.IsRecording() || tracelink.Traceparent(ctx) != "" {
			t.Fatal("off records spans")
		}
		var cfg aws.Config
		tr.InstrumentAWS(&cfg)
		if len(cfg.APIOptions) != 0 {
			t.Fatal("off instruments the SDK")
		}
		h := lambda.NewHandler(func() error { return nil })
		if tr.WrapHandler(h, "longrun-api") != h {
			t.Fatal("off wraps the handler")
		}
		if err := tr.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var cfg aws.Config
	mustNew(t, tracing.Config{Mode: tracing.File, File: filepath.Join(t.TempDir(), "s")}).InstrumentAWS(&cfg)
	if len(cfg.APIOptions) == 0 {
		t.Fatal("tracing on does not instrument the SDK")
	}
}

func mustNew(t *testing.T, cfg tracing.Config) *tracing.Tracing {
	t.Helper()
	tr, err := tracing.New(context.Background(), cfg, "longrun-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

// fileSpan is what a line of the trace file says (stdouttrace's span stubs).
type fileSpan struct {
	Name        string
	SpanContext spanContext
	Parent      spanContext
	Links       []struct{ SpanContext spanContext }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
	Resource []struct {
		Key   string
		Value struct{ Value any }
	}
}

type spanContext struct{ TraceID, SpanID string }

func readSpans(t *testing.T, path string) []fileSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fileSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s fileSpan
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, s)
	}
	return out
}

// Several processes append to one file (the local stack's functions): every line is one
// whole span, as JSON, and a span started from a traceparent carries the link.
func TestFileHoldsOneSpanPerLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	const each = 200
	var wg sync.WaitGroup
	for p := range 3 {
		tr := mustNew(t, tracing.Config{Mode: tracing.File, File: path})
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each / 4 {
					// Long attributes make lines far larger than one small write.
					_, span := tr.Tracer().Start(context.Background(), "span-"+strconv.Itoa(p))
					span.SetAttributes(tracelink.AttrOperationID.String(strings.Repeat("x", 2000) + strconv.Itoa(g*1000+i)))
					span.End()
				}
			}()
		}
	}
	wg.Wait()
	linked := mustNew(t, tracing.Config{Mode: tracing.File, File: path})
	_, span := tracelink.Start(context.Background(), linked.Tracer(), "dispatch", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	span.End()

	spans := readSpans(t, path)
	if len(spans) != 3*each+1 {
		t.Fatalf("%d lines, want %d", len(spans), 3*each+1)
	}
	last := spans[len(spans)-1]
	if last.Name != "dispatch" || len(last.Links) != 1 || last.Links[0].SpanContext.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		last.Links[0].SpanContext.SpanID != "00f067aa0ba902b7" {
		t.Fatalf("the linked span: %+v", last)
	}
	service := ""
	for _, kv := range last.Resource {
		if kv.Key == "service.name" {
			service, _ = kv.Value.Value.(string)
		}
	}
	if service != "longrun-test" {
		t.Errorf("service.name %q", service)
	}
}

// collector is an OTLP/HTTP endpoint that keeps what it receives.
type collector struct {
	mu   sync.Mutex
	reqs []*coltrace.ExportTraceServiceRequest
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.reqs = append(c.reqs, &req)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

type exported struct{ name, traceID, parentID string }

func (c *collector) spans() []exported {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []exported
	for _, r := range c.reqs {
		for _, rs := range r.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, exported{s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(s.ParentSpanId)})
				}
			}
		}
	}
	return out
}

// With OTLP, an invocation's spans reach the collector before the invocation returns (no
// waiting for the batch: Lambda freezes the process), under the trace Lambda's X-Ray header
// names; spans of their own carry X-Ray trace ids (the first 8 hex digits are the time).
func TestOTLPInvocationIsFlushedUnderLambdasTrace(t *testing.T) {
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "")
	t.Setenv("_X_AMZN_TRACE_ID", "")
	var c collector
	srv := httptest.NewServer(&c)
	defer srv.Close()
	cfg, err := tracing.FromEnv(env(map[string]string{"LONGRUN_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	tr := mustNew(t, cfg)
	var inner string
	h := tr.WrapHandler(lambda.NewHandler(func(ctx context.Context) (string, error) {
		_, span := tr.Tracer().Start(ctx, "work")
		defer span.End()
		inner = tracelink.Traceparent(ctx)
		return "ok", nil
	}), "longrun-dispatcher")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1") //nolint:staticcheck // aws-lambda-go's key
	if _, err := h.Invoke(ctx, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	got := c.spans() // no Shutdown, no wait: flushed by the invocation
	if len(got) != 2 {
		t.Fatalf("the collector has %d spans at the invocation's end, want 2: %+v", len(got), got)
	}
	byName := map[string]exported{}
	for _, s := range got {
		byName[s.name] = s
	}
	inv := byName["longrun-dispatcher"]
	if inv.traceID != "5759e988bd862e3fe1be46a994272793" || inv.parentID != "53995c3f42cd8ad8" {
		t.Errorf("the invocation span is not under Lambda's trace: %+v", got)
	}
	if w := byName["work"]; w.traceID != inv.traceID || !strings.Contains(inner, w.traceID) {
		t.Errorf("the handler's span is not in the invocation's trace: %+v, traceparent %q", got, inner)
	}

	// A root span: an X-Ray trace id, made of the current time.
	_, root := tr.Tracer().Start(context.Background(), "root")
	root.End()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.spans() {
		if s.name == "root" {
			secs, _ := strconv.ParseInt(s.traceID[:8], 16, 64)
			if d := time.Since(time.Unix(secs, 0)); d < 0 || d > time.Minute {
				t.Errorf("trace id %s does not start with the time (X-Ray ids)", s.traceID)
			}
			return
		}
	}
	t.Fatal("the root span was not exported")
}

// A failed invocation's span says so.
func TestFailedInvocationSpan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	tr := mustNew(t, tracing.Config{Mode: tracing.File, File: path})
	h := tr.WrapHandler(lambda.NewHandler(func(context.Context) error { return errors.New("boom") }), "longrun-recorder")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-2"})
	if _, err := h.Invoke(ctx, []byte("{}")); err == nil {
		t.Fatal("the error was swallowed")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Name   string
		Status struct{ Code string }
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Status.Code != "Error" {
		t.Fatalf("%v: %s", err, raw)
	}
}

// A collector that takes the request and never answers: the invocation still ends promptly
// (the flush gives up after FlushTimeout), with its result.
func TestStuckCollectorDoesNotHoldTheInvocation(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(srv.Close) // last: it waits for the handler
	tr := mustNew(t, tracing.Config{Mode: tracing.OTLP, Endpoint: srv.URL})
	t.Cleanup(func() { close(release) }) // before the provider's shutdown, which waits for the export
	h := tr.WrapHandler(lambda.NewHandler(func(context.Context) (string, error) { return "done", nil }), "longrun-api")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-3"})
	start := time.Now()
	out, err := h.Invoke(ctx, []byte("{}"))
	if err != nil || string(out) != `"done"` {
		t.Fatalf("%s %v", out, err)
	}
	if d := time.Since(start); d < tracing.FlushTimeout/2 || d > tracing.FlushTimeout+time.Second {
		t.Fatalf("the invocation took %s with a stuck collector, want about %s", d, tracing.FlushTimeout)
	}
}
