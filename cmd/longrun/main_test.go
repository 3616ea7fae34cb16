package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeAPI records requests and answers from a script; the CLI's contract with the real API
// is exercised by the e2e suite, this checks what the CLI sends and prints.
type fakeAPI struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
	answer   func(r *http.Request, n int) (int, http.Header, string)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, r)
	f.bodies = append(f.bodies, string(body))
	n := len(f.requests)
	f.mu.Unlock()
	status, h, out := f.answer(r, n)
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(out))
}

func cli(t *testing.T, api *fakeAPI, args ...string) (int, string, string) {
	t.Helper()
	srv := httptest.NewServer(api)
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"-api", srv.URL, "-token", "alice-dev-token"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCreateSendsAKeyAndTheBody(t *testing.T) {
	api := &fakeAPI{answer: func(*http.Request, int) (int, http.Header, string) { return 202, nil, `{"operationId":"op_x"}` }}
	code, out, _ := cli(t, api, "create", "-type", "demo.task", "-input", `{"target":"x"}`, "-key", "k-1")
	r := api.requests[0]
	if code != 0 || strings.TrimSpace(out) != `{"operationId":"op_x"}` || r.Method != "POST" || r.URL.Path != "/v1/operations" ||
		r.Header.Get("Idempotency-Key") != "k-1" || r.Header.Get("Authorization") != "Bearer alice-dev-token" ||
		r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q %v", code, out, r.Header)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(api.bodies[0]), &body); err != nil || body["type"] != "demo.task" || body["input"].(map[string]any)["target"] != "x" {
		t.Fatalf("body %s", api.bodies[0])
	}
	// Without -key a fresh random key is sent.
	cli(t, api, "create", "-type", "demo.task")
	if k := api.requests[1].Header.Get("Idempotency-Key"); len(k) != 32 {
		t.Fatalf("generated key %q", k)
	}
}

func TestProblemsGoToStderrWithExitOne(t *testing.T) {
	api := &fakeAPI{answer: func(*http.Request, int) (int, http.Header, string) {
		return 409, http.Header{"Content-Type": {"application/problem+json"}}, `{"code":"already_terminal"}`
	}}
	code, out, errOut := cli(t, api, "cancel", "op_x", "-if-match", "3")
	if code != 1 || out != "" || !strings.Contains(errOut, "already_terminal") {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
	if r := api.requests[0]; r.URL.Path != "/v1/operations/op_x/cancel" || r.Header.Get("If-Match") != `"3"` {
		t.Fatalf("%s %v", r.URL.Path, r.Header)
	}
}

func TestWaitHonoursRetryAfter(t *testing.T) {
	api := &fakeAPI{answer: func(_ *http.Request, n int) (int, http.Header, string) {
		if n == 1 {
			return 200, http.Header{"Retry-After": {"1"}}, `{"state":"running","terminal":false}`
		}
		return 200, nil, `{"state":"succeeded","terminal":true}`
	}}
	code, out, _ := cli(t, api, "wait", "op_x")
	if code != 0 || !strings.Contains(out, "succeeded") || len(api.requests) != 2 {
		t.Fatalf("%d %q after %d polls", code, out, len(api.requests))
	}
}

func TestListAllFollowsCursors(t *testing.T) {
	api := &fakeAPI{answer: func(r *http.Request, _ int) (int, http.Header, string) {
		if r.URL.Query().Get("cursor") == "" {
			return 200, nil, `{"items":[{"operationId":"op_1"}],"nextCursor":"c1"}`
		}
		return 200, nil, `{"items":[{"operationId":"op_2"}],"nextCursor":null}`
	}}
	code, out, _ := cli(t, api, "list", "-all", "-state", "running", "-limit", "1")
	if code != 0 || strings.TrimSpace(out) != `[{"operationId":"op_1"},{"operationId":"op_2"}]` {
		t.Fatalf("%d %q", code, out)
	}
	if q := api.requests[1].URL.Query(); q.Get("cursor") != "c1" || q.Get("state") != "running" || q.Get("limit") != "1" {
		t.Fatalf("second page query %v", q)
	}
}

func TestResolveSendsTheOperatorsWord(t *testing.T) {
	api := &fakeAPI{answer: func(*http.Request, int) (int, http.Header, string) { return 200, nil, `{"state":"failed"}` }}
	code, _, _ := cli(t, api, "resolve", "op_x", "-outcome", "failed", "-reason", "lost", "-problem-code", "export_lost", "-problem-title", "Export lost")
	var body struct {
		Outcome, Reason string
		Problem         map[string]string
	}
	_ = json.Unmarshal([]byte(api.bodies[0]), &body)
	if code != 0 || api.requests[0].URL.Path != "/v1/operations/op_x/resolve" || body.Outcome != "failed" || body.Reason != "lost" ||
		body.Problem["code"] != "export_lost" || body.Problem["type"] != "https://longrun.dev/problems/export_lost" {
		t.Fatalf("%d %s", code, api.bodies[0])
	}
}

func TestSigV4(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	api := &fakeAPI{answer: func(*http.Request, int) (int, http.Header, string) { return 200, nil, `{}` }}
	srv := httptest.NewServer(api)
	defer srv.Close()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-api", srv.URL, "-sigv4", "get", "op_x"}, &out, &errOut); code != 0 {
		t.Fatalf("%d %s", code, errOut.String())
	}
	auth := api.requests[0].Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") {
		t.Fatalf("Authorization %q", auth)
	}
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"explode"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Fatalf("%d %q", code, errOut.String())
	}
}
