package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// syncBuffer is a log destination the test reads while the handler writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// logTo makes the API log as the function does (internal/aws/lambdalog) into a buffer.
func logTo(out *syncBuffer) option {
	return func(e *env) { e.handler.Log = slog.New(lambdalog.New(out, "longrun-api", slog.LevelInfo)) }
}

// logLines parses every line as JSON with the Powertools keys; anything else fails the test.
func logLines(t *testing.T, out *syncBuffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", l, err)
		}
		for _, k := range []string{"level", "message", "timestamp", "service", "request_id", "correlation_id"} {
			if s, _ := m[k].(string); s == "" {
				t.Errorf("log line without %s: %s", k, l)
			}
		}
		for _, k := range []string{"msg", "time"} {
			if _, ok := m[k]; ok {
				t.Errorf("log line with slog's %s: %s", k, l)
			}
		}
		lines = append(lines, m)
	}
	return lines
}

// Tokens, signatures and operation inputs never reach the logs, whatever the request and
// however it ends.
func TestLogsHoldNoSecretsOrInputs(t *testing.T) {
	t.Parallel()
	const (
		token     = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLXBheWxvYWQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
		accessKey = "AKIAIOSFODNN7EXAMPLE"
		signature = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
		session   = "FwoGZXIvYXdzEXAMPLESESSIONTOKENsecret"
		marker    = "marker-7c1d9e0b42"
	)
	var out syncBuffer
	e := newEnv(t, logTo(&out))
	bearer := map[string]string{"Authorization": "Bearer " + token}
	sigv4 := map[string]string{
		"Authorization": "AWS4-HMAC-SHA256 Credential=" + accessKey + "/20261130/eu-west-1/execute-api/aws4_request, " +
			"SignedHeaders=content-type;host;x-amz-date, Signature=" + signature,
		"X-Amz-Security-Token": session, "X-Amz-Date": "20261130T100000Z",
	}
	for _, r := range []req{
		{caller: "alice", keys: []string{"k-logs-1"}, body: demo(marker), header: bearer},
		{caller: "alice", keys: []string{"k-logs-1"}, body: demo(marker), header: bearer},                                        // a replay
		{caller: "alice", keys: []string{"k-logs-1"}, body: demo(marker + "-other"), header: bearer},                             // 422 key reused
		{caller: "alice", keys: []string{"k-logs-2"}, body: `{"type":"demo.task","input":{"` + marker + `":1}}`, header: bearer}, // 400
		{caller: "alice", keys: []string{"k-logs-3"}, body: `{"type":"demo.task","input":` + marker, header: bearer},             // not JSON
		{userArn: "arn:aws:sts::123456789012:assumed-role/svc/session-1", keys: []string{"k-logs-4"}, body: demo(marker + "-iam"), header: sigv4},
		{keys: []string{"k-logs-5"}, body: demo(marker), header: bearer}, // 401
		{method: http.MethodGet, caller: "alice", header: bearer},
	} {
		e.do(r)
	}
	logs := out.String()
	for _, secret := range []string{token, "Bearer", accessKey, signature, session, marker} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold %q:\n%s", secret, logs)
		}
	}
	if lines := logLines(t, &out); len(lines) < 8 {
		t.Errorf("%d log lines for 8 requests:\n%s", len(lines), logs)
	}
}

// The correlation id is born at admission (the traceparent's trace-id, else the request
// id), recorded in the accepted fact, and carried by the lines about the operation: its
// admission and its status reads, whatever those reads' own traceparent.
func TestCorrelationIDBornAtAdmission(t *testing.T) {
	t.Parallel()
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	var out syncBuffer
	e := newEnv(t, logTo(&out))
	traced := e.do(req{caller: "alice", keys: []string{"k-corr-1"}, body: demo("corr-1"),
		header: map[string]string{"traceparent": "00-" + trace + "-00f067aa0ba902b7-01"}})
	untraced := e.do(req{caller: "alice", keys: []string{"k-corr-2"}, body: demo("corr-2"),
		header: map[string]string{"traceparent": "00-" + strings.Repeat("0", 32) + "-00f067aa0ba902b7-01"}}) // invalid: all zeros
	if traced.status != 202 || untraced.status != 202 {
		t.Fatalf("admissions: %d %d", traced.status, untraced.status)
	}
	tracedID, _ := traced.json["operationId"].(string)
	untracedID, _ := untraced.json["operationId"].(string)
	want := map[string]string{tracedID: trace, untracedID: untraced.header.Get("X-Request-Id")}
	for id, corr := range want {
		op, err := e.store.Load(context.Background(), id)
		if err != nil || op.CorrelationID != corr {
			t.Errorf("%s: the accepted fact's correlation id is %q (%v), want %q", id, op.CorrelationID, err, corr)
		}
	}
	get := e.do(req{method: http.MethodGet, path: "/v1/operations/" + tracedID, caller: "alice",
		header: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
	if get.status != 200 {
		t.Fatalf("get: %d", get.status)
	}
	lines := logLines(t, &out)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one per request:\n%s", len(lines), out.String())
	}
	for i, id := range []string{tracedID, untracedID, tracedID} {
		if lines[i]["message"] != "request" || lines[i]["operation_id"] != id || lines[i]["correlation_id"] != want[id] {
			t.Errorf("line %d: %v, want operation_id %s and correlation_id %s", i, lines[i], id, want[id])
		}
	}
}

func TestCorrelationIDFromTraceparent(t *testing.T) {
	t.Parallel()
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, c := range []struct {
		headers []string
		want    string
	}{
		{[]string{"00-" + trace + "-00f067aa0ba902b7-01"}, trace},
		{[]string{" 00-" + trace + "-00f067aa0ba902b7-00 "}, trace},
		{[]string{"01-" + trace + "-00f067aa0ba902b7-01-future"}, trace}, // a later version may add members
		{nil, "req_1"},
		{[]string{"00-" + trace + "-00f067aa0ba902b7-01", "00-" + trace + "-00f067aa0ba902b7-01"}, "req_1"}, // two: neither
		{[]string{"00-" + strings.ToUpper(trace) + "-00f067aa0ba902b7-01"}, "req_1"},
		{[]string{"00-" + strings.Repeat("0", 32) + "-00f067aa0ba902b7-01"}, "req_1"},
		{[]string{"00-" + trace + "-0000000000000000-01"}, "req_1"},
		{[]string{"ff-" + trace + "-00f067aa0ba902b7-01"}, "req_1"},
		{[]string{"00-" + trace + "-00f067aa0ba902b7-01-extra"}, "req_1"}, // version 00 has exactly four members
		{[]string{"00-" + trace[:31] + "-00f067aa0ba902b7-01"}, "req_1"},
		{[]string{"00_" + trace + "-00f067aa0ba902b7-01"}, "req_1"},
		{[]string{"garbage"}, "req_1"},
	} {
		if got := httpapi.CorrelationID(c.headers, "req_1"); got != c.want {
			t.Errorf("%q: %q, want %q", c.headers, got, c.want)
		}
	}
}
