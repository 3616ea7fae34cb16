package lambdalog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/longrun-dev/longrun/internal/core/logctx"
)

// lines parses every line of out as a JSON object; a line that is not one fails the test.
func lines(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var all []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		all = append(all, m)
	}
	return all
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func TestFieldsOutsideAnInvocation(t *testing.T) {
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "")
	t.Setenv("_X_AMZN_TRACE_ID", "")
	var out bytes.Buffer
	log := slog.New(New(&out, "longrun-api", slog.LevelInfo))
	log.Debug("hidden")
	log.Info("configuration", "lease", "5m")
	log.Warn("careful")
	log.Error("broken", "error", "boom")
	got := lines(t, &out)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3 (debug is below the level): %s", len(got), out.String())
	}
	if want := []string{"lease", "level", "message", "service", "timestamp"}; !slices.Equal(keys(got[0]), want) {
		t.Errorf("keys %v, want exactly %v", keys(got[0]), want)
	}
	for i, level := range []string{"INFO", "WARN", "ERROR"} {
		if got[i]["level"] != level {
			t.Errorf("line %d: level %v, want %s", i, got[i]["level"], level)
		}
	}
	if got[0]["message"] != "configuration" || got[0]["service"] != "longrun-api" || got[2]["error"] != "boom" {
		t.Errorf("line: %v", got[0])
	}
	for _, slogKey := range []string{"msg", "time"} {
		if _, ok := got[0][slogKey]; ok {
			t.Errorf("slog's %q is still there: %v", slogKey, got[0])
		}
	}
}

func TestTimestampIsRFC3339MillisUTC(t *testing.T) {
	var out bytes.Buffer
	h := New(&out, "s", slog.LevelInfo)
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.FixedZone("CET", 3600))
	if err := h.Handle(context.Background(), slog.NewRecord(at, slog.LevelInfo, "m", 0)); err != nil {
		t.Fatal(err)
	}
	ts := lines(t, &out)[0]["timestamp"]
	if ts != "2026-03-04T04:06:07.890Z" {
		t.Fatalf("timestamp %v, want 2026-03-04T04:06:07.890Z", ts)
	}
	var live bytes.Buffer
	slog.New(New(&live, "s", slog.LevelInfo)).Info("now")
	s, _ := lines(t, &live)[0]["timestamp"].(string)
	if _, err := time.Parse(time.RFC3339, s); err != nil || len(s) != len("2006-01-02T15:04:05.000Z") || !strings.HasSuffix(s, "Z") {
		t.Fatalf("timestamp %q is not RFC 3339 UTC with milliseconds (%v)", s, err)
	}
}

func TestServiceName(t *testing.T) {
	t.Setenv("POWERTOOLS_SERVICE_NAME", "")
	if got := ServiceName("longrun-api"); got != "longrun-api" {
		t.Errorf("default %q", got)
	}
	t.Setenv("POWERTOOLS_SERVICE_NAME", "payments")
	if got := ServiceName("longrun-api"); got != "payments" {
		t.Errorf("POWERTOOLS_SERVICE_NAME: %q", got)
	}
}

// An invocation's lines carry the function, the request, whether it is the first, the trace
// and the context's fields; the second invocation of a process is not a cold start.
func TestInvocationFields(t *testing.T) {
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "longrun-prod-api")
	t.Setenv("_X_AMZN_TRACE_ID", "")
	var out bytes.Buffer
	log := slog.New(New(&out, "longrun-api", slog.LevelInfo))
	handler := Invocations(lambda.NewHandler(func(ctx context.Context, in string) (string, error) {
		ctx = logctx.With(ctx, logctx.Fields{OperationID: "op_1", RequestID: "req_1"})
		logctx.Set(ctx, logctx.Fields{CorrelationID: "corr-" + in})
		log.InfoContext(ctx, "handled", "input_size", len(in))
		return "", nil
	}))
	for i, id := range []string{"aws-req-1", "aws-req-2"} {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
		if i == 0 {
			ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
		}
		if _, err := handler.Invoke(ctx, []byte(`"x"`)); err != nil {
			t.Fatal(err)
		}
	}
	got := lines(t, &out)
	if len(got) != 2 {
		t.Fatalf("%d lines: %s", len(got), out.String())
	}
	want := map[string]any{
		"level": "INFO", "message": "handled", "service": "longrun-api", "function_name": "longrun-prod-api",
		"cold_start": true, "function_request_id": "aws-req-1", "xray_trace_id": "1-5759e988-bd862e3fe1be46a994272793",
		"correlation_id": "corr-x", "operation_id": "op_1", "request_id": "req_1", "input_size": float64(1),
	}
	delete(got[0], "timestamp")
	if !maps.Equal(got[0], want) {
		t.Errorf("first invocation:\n got %v\nwant %v", got[0], want)
	}
	if got[1]["cold_start"] != false || got[1]["function_request_id"] != "aws-req-2" {
		t.Errorf("second invocation: %v", got[1])
	}
	if _, ok := got[1]["xray_trace_id"]; ok {
		t.Errorf("an untraced invocation has a trace id: %v", got[1])
	}
}

// What a call logs itself wins over the context's field of the same name, and a key is
// never written twice.
func TestOwnAttributesWin(t *testing.T) {
	var out bytes.Buffer
	ctx := logctx.With(context.Background(), logctx.Fields{OperationID: "op_ctx", CorrelationID: "c1"})
	log := slog.New(New(&out, "s", slog.LevelInfo))
	log.InfoContext(ctx, "own", "operation_id", "op_own")
	log.With("operation_id", "op_with").InfoContext(ctx, "with")
	for i, want := range []string{"op_own", "op_with"} {
		line := strings.Split(strings.TrimSpace(out.String()), "\n")[i]
		if n := strings.Count(line, `"operation_id"`); n != 1 {
			t.Errorf("operation_id %d times: %s", n, line)
		}
		if got := lines(t, &out)[i]; got["operation_id"] != want || got["correlation_id"] != "c1" {
			t.Errorf("line %d: %v, want operation_id %s", i, got, want)
		}
	}
}

func TestTraceID(t *testing.T) {
	t.Setenv("_X_AMZN_TRACE_ID", "Root=1-aaa-bbb;Parent=c;Sampled=0")
	if got := TraceID(context.Background()); got != "1-aaa-bbb" {
		t.Errorf("from the environment: %q", got)
	}
	t.Setenv("_X_AMZN_TRACE_ID", "")
	if got := TraceID(context.Background()); got != "" {
		t.Errorf("none: %q", got)
	}
}
