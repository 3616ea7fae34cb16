package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/client"
	"github.com/longrun-dev/longrun/internal/testkit/clocktest"
)

// The fake API answers as the contract says, from a script of representations per
// operation; the CLI's contract with the real API is exercised by the e2e suite
// (internal/e2e/cli_test.go), these tests check what the CLI sends, prints and exits with.

const opID = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// rep is one representation of an operation.
type rep struct {
	ID         string // default opID
	State      string
	Version    int
	Progress   string // JSON, or empty
	Problem    string // a problem code, or empty
	Result     string // JSON, or empty
	RetryAfter int    // seconds; sent while not done
	Cancel     bool
	Awaiting   string // the signal the work waits for (since t0+1s, for ten minutes), or empty
}

func (r rep) id() string {
	if r.ID == "" {
		return opID
	}
	return r.ID
}

func (r rep) done() bool {
	switch r.State {
	case "succeeded", "failed", "canceled", "outcome_unknown":
		return true
	}
	return false
}

func (r rep) json() string {
	m := map[string]any{
		"operationId": r.id(), "type": "demo.task", "target": "demo:build-42", "state": r.State,
		"terminal": r.done() && r.State != "outcome_unknown", "version": r.Version, "statusUrl": "/v1/operations/" + r.id(),
		"createdAt": t0.Format(time.RFC3339), "updatedAt": t0.Add(time.Duration(r.Version) * time.Second).Format(time.RFC3339),
		"observedAt": nil, "cancelRequested": r.Cancel,
	}
	if r.Progress != "" {
		m["progress"] = json.RawMessage(r.Progress)
	}
	if r.Problem != "" {
		m["problem"] = map[string]string{"type": "https://longrun.dev/problems/" + r.Problem, "title": "Build missing",
			"code": r.Problem, "detail": "The target " + "build-42 was never built."}
	}
	if r.Result != "" {
		m["result"] = json.RawMessage(r.Result)
	}
	if r.Awaiting != "" {
		m["awaiting"] = map[string]string{"signal": r.Awaiting, "since": t0.Add(time.Second).Format("2006-01-02T15:04:05.000Z"),
			"until": t0.Add(601 * time.Second).Format("2006-01-02T15:04:05.000Z")}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

type response struct {
	status int
	header http.Header
	body   string
}

func problemAt(status int, code, detail string) response {
	b, _ := json.Marshal(map[string]any{"type": "https://longrun.dev/problems/" + code, "title": http.StatusText(status),
		"status": status, "code": code, "detail": detail, "requestId": "req_1"})
	return response{status, http.Header{"Content-Type": {"application/problem+json"}, "X-Request-Id": {"req_1"}}, string(b)}
}

type request struct {
	method, path, query string
	header              http.Header
	body                string
}

// fakeAPI serves POST /v1/operations, GET /v1/operations/{id} (the next representation of
// its script each time, the last one from then on), cancel, resolve, the signal approval
// (recorded once per key), list (pages of representations) and the types; override answers
// first when it wants to.
type fakeAPI struct {
	t        *testing.T
	mu       sync.Mutex
	requests []request
	script   map[string][]rep
	polls    map[string]int
	signaled map[string]bool // the keys of the signals received
	pages    [][]rep
	override func(r request) (response, bool)
	// seen, when set, receives every request's path (without blocking).
	seen chan string
}

func newFake(t *testing.T, script ...rep) *fakeAPI {
	f := &fakeAPI{t: t, script: map[string][]rep{}, polls: map[string]int{}, signaled: map[string]bool{}}
	for _, r := range script {
		f.script[r.id()] = append(f.script[r.id()], r)
	}
	return f
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	r := request{hr.Method, hr.URL.Path, hr.URL.RawQuery, hr.Header.Clone(), string(body)}
	f.mu.Lock()
	f.requests = append(f.requests, r)
	resp := f.answer(r)
	f.mu.Unlock()
	if f.seen != nil {
		select {
		case f.seen <- r.method + " " + r.path:
		default:
		}
	}
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.status)
	_, _ = io.WriteString(w, resp.body)
}

func representation(status int, r rep) response {
	h := http.Header{"ETag": {strconv.Quote(strconv.Itoa(r.Version))}}
	if !r.done() && r.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(r.RetryAfter))
	}
	return response{status, h, r.json()}
}

func (f *fakeAPI) answer(r request) response {
	if f.override != nil {
		if resp, ok := f.override(r); ok {
			return resp
		}
	}
	switch {
	case r.method == "GET" && strings.HasSuffix(r.path, "/history"):
		if r.path != "/v1/operations/"+opID+"/history" {
			return problemAt(404, "not_found", "No such operation.")
		}
		return response{200, http.Header{"ETag": {`"6"`}}, historyJSON}
	case r.method == "GET" && r.path == "/v1/attention":
		q := parseQuery(r.query)
		if q["cursor"] == "" {
			return response{200, nil, `{"items":[{"tenant":"acme","operation":` + rep{State: "outcome_unknown", Version: 4, Problem: "result_lost"}.json() +
				`}],"nextCursor":"YXQx"}`}
		}
		return response{200, nil, `{"items":[{"tenant":"globex","operation":` + rep{ID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C4", State: "outcome_unknown", Version: 3}.json() +
			`}],"nextCursor":null}`}
	case r.method == "GET" && r.path == "/v1/stats":
		return response{200, nil, `{"asOf":"2026-11-30T10:06:00.000Z","inFlight":{"accepted":2,"dispatched":1,"running":37,"cancelling":0},` +
			`"outcomeUnknown":1,"oldestInFlight":{"tenant":"globex","operation":` + rep{State: "running", Version: 4, Progress: `{"completedSteps":2}`}.json() +
			`},"partial":true}`}
	case r.method == "POST" && r.path == "/v1/operations":
		b, _ := json.Marshal(map[string]string{"operationId": opID, "type": "demo.task", "target": "demo:build-42", "state": "accepted",
			"statusUrl": "/v1/operations/" + opID, "createdAt": t0.Format(time.RFC3339)})
		return response{202, http.Header{"Location": {"/v1/operations/" + opID}, "Retry-After": {"1"}}, string(b)}
	case r.method == "GET" && r.path == "/v1/operations":
		q := parseQuery(r.query)
		i, _ := strconv.Atoi(strings.TrimPrefix(q["cursor"], "c"))
		if i >= len(f.pages) {
			return response{200, nil, `{"items":[],"nextCursor":null}`}
		}
		var items []string
		for _, it := range f.pages[i] {
			items = append(items, it.json())
		}
		next := "null"
		if i+1 < len(f.pages) {
			next = fmt.Sprintf(`"c%d"`, i+1)
		}
		return response{200, nil, `{"items":[` + strings.Join(items, ",") + `],"nextCursor":` + next + `}`}
	case r.method == "GET" && r.path == "/v1/operation-types":
		return response{200, nil, `{"items":[` + exportType + `,` + demoType + `]}`}
	case r.method == "GET" && r.path == "/v1/operation-types/demo.task":
		return response{200, nil, demoType}
	case r.method == "GET" && strings.HasPrefix(r.path, "/v1/operations/"):
		id := strings.TrimPrefix(r.path, "/v1/operations/")
		s := f.script[id]
		if len(s) == 0 {
			return problemAt(404, "not_found", "No operation "+id+".")
		}
		n := min(f.polls[id], len(s)-1)
		f.polls[id]++
		return representation(200, s[n])
	case r.method == "POST" && strings.HasSuffix(r.path, "/cancel"):
		return representation(202, rep{State: "cancelling", Version: 4, Cancel: true})
	case r.method == "POST" && strings.Contains(r.path, "/signals/"):
		name := r.path[strings.LastIndex(r.path, "/")+1:]
		if name != "approval" {
			return problemAt(400, "unknown_signal", `Operations of type demo.task take no signal "`+name+`".`)
		}
		key := r.header.Get("Idempotency-Key")
		resp := representation(202, rep{State: "running", Version: 5, Progress: `{"completedSteps":1}`, Awaiting: "approval", RetryAfter: 1})
		resp.header.Set("Location", "/v1/operations/"+opID)
		if f.signaled[key] {
			resp.header.Set("Idempotent-Replayed", "true")
		}
		f.signaled[key] = true
		return resp
	case r.method == "POST" && strings.HasSuffix(r.path, "/resolve"):
		var req struct {
			Outcome string
			Problem *struct{ Code string }
		}
		_ = json.Unmarshal([]byte(r.body), &req)
		out := rep{State: req.Outcome, Version: 6}
		if req.Outcome == "retry" {
			out.State = "running"
		}
		if req.Problem != nil {
			out.Problem = req.Problem.Code
		}
		return representation(200, out)
	}
	return problemAt(404, "not_found", "No route.")
}

// historyJSON is a history as an operator reads it.
const historyJSON = `{"operationId":"` + opID + `","version":6,"entries":[
{"version":1,"at":"2026-11-30T10:00:00.000Z","kind":"accepted","state":"accepted","by":"admission","actor":"alice"},
{"version":2,"at":"2026-11-30T10:00:00.120Z","kind":"dispatched","state":"dispatched","by":"dispatcher"},
{"version":3,"at":"2026-11-30T10:00:00.480Z","kind":"started","state":"running","by":"executor","progress":{"completedSteps":0},"stepStarted":1},
{"version":4,"at":"2026-11-30T10:00:01.000Z","kind":"progress","state":"running","by":"executor","progress":{"completedSteps":1,"totalSteps":2},
 "awaiting":{"signal":"approval","since":"2026-11-30T10:00:01.000Z","until":"2026-11-30T10:10:01.000Z"}},
{"version":5,"at":"2026-11-30T10:05:00.000Z","kind":"outcome_unknown","state":"outcome_unknown","by":"reconciler",
 "problem":{"type":"https://longrun.dev/problems/result_lost","title":"Result lost","code":"result_lost","detail":"The step's end was lost."}},
{"version":6,"at":"2026-11-30T10:20:00.000Z","kind":"retried","state":"running","by":"operator","actor":"longrun/ops",
 "reason":"Safe to send again.","retry":{"step":2,"attempt":2}}]}`

const demoType = `{"name":"demo.task","version":1,"description":"A demo task: counts steps.","deadlineSeconds":900,
"inputSchema":{"type":"object","required":["target"],"properties":{"target":{"type":"string"},"steps":{"type":"integer"}}}}`

const exportType = `{"name":"export.orders","version":3,"description":"Exports orders as CSV.","deadlineSeconds":7200,
"inputSchema":{"type":"object","required":["from","to"],"properties":{"from":{"type":"string"},"to":{"type":"string"}}}}`

func parseQuery(q string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(q, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

func (f *fakeAPI) sent() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request{}, f.requests...)
}

type result struct {
	code           int
	stdout, stderr string
}

// harness is one CLI run against a fake API.
type harness struct {
	api   *fakeAPI
	clock client.Clock
	env   map[string]string
	stdin string
	// interrupts, when set, replaces the signals (default: none ever).
	interrupts func() (<-chan os.Signal, func())
	// stderr, when set, is the stream progress goes to (a pty in the TTY test).
	stderr io.Writer
}

func (h *harness) run(t *testing.T, args ...string) result {
	t.Helper()
	srv := httptest.NewServer(h.api)
	defer srv.Close()
	env := map[string]string{"LONGRUN_API": srv.URL, "LONGRUN_TOKEN": "alice-dev-token"}
	for k, v := range h.env {
		env[k] = v
	}
	if h.clock == nil {
		h.clock = clocktest.New(t0)
	}
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(h.stdin), stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] },
		clock: h.clock, interrupts: h.interrupts}
	if c.interrupts == nil {
		c.interrupts = func() (<-chan os.Signal, func()) { return nil, func() {} }
	}
	if h.stderr != nil {
		c.stderr = h.stderr
	}
	code := c.run(context.Background(), args)
	return result{code, out.String(), errOut.String()}
}

func cliRun(t *testing.T, api *fakeAPI, args ...string) result {
	t.Helper()
	return (&harness{api: api}).run(t, args...)
}

func TestCreateSendsTheKeyTheTypeAndTheInput(t *testing.T) {
	api := newFake(t)
	r := cliRun(t, api, "create", "-type", "demo.task", "-input", `{"target":"build-42","steps":12345678901234567890}`, "-key", "k-1")
	req := api.sent()[0]
	if r.code != 0 || req.method != "POST" || req.path != "/v1/operations" || req.header.Get("Idempotency-Key") != "k-1" ||
		req.header.Get("Authorization") != "Bearer alice-dev-token" || req.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%+v %+v", r, req)
	}
	// The input goes out as written: big numbers are not rounded through float64.
	if req.body != `{"type":"demo.task","input":{"target":"build-42","steps":12345678901234567890}}` {
		t.Fatalf("body %s", req.body)
	}
	var out admission
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.OperationID != opID || out.IdempotencyKey != "k-1" {
		t.Fatalf("%v %s", err, r.stdout)
	}

	// Without -key a fresh key is minted, sent and printed (so a retry can reuse it).
	r = cliRun(t, api, "create", "-type", "demo.task")
	key := api.sent()[1].header.Get("Idempotency-Key")
	if len(key) != 36 || !strings.Contains(r.stdout, `"idempotencyKey": "`+key+`"`) || api.sent()[1].body != `{"type":"demo.task","input":{}}` {
		t.Fatalf("minted key %q; %s", key, r.stdout)
	}
}

// create -wait prints the operation as it ended, which has no key: the key it minted goes
// to stderr as soon as the operation is admitted, and it is the key that was sent.
func TestCreateWaitPrintsTheKeyItMinted(t *testing.T) {
	api := newFake(t, rep{State: "succeeded", Version: 5, Result: `{}`})
	r := cliRun(t, api, "create", "-type", "demo.task", "-wait", "-o", "id")
	key := api.sent()[0].header.Get("Idempotency-Key")
	if r.code != 0 || len(key) != 36 || r.stdout != opID+"\n" {
		t.Fatalf("%+v, key %q", r, key)
	}
	want := "longrun: " + opID + " admitted with the minted Idempotency-Key " + key + " (run the same create with -key " + key + " "
	if !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("stderr does not start with the minted key:\n%s\nwant prefix:\n%s", r.stderr, want)
	}
	// A key the caller gave is not repeated back.
	r = cliRun(t, api, "create", "-type", "demo.task", "-key", "k-2", "-wait", "-o", "id")
	if r.code != 0 || strings.Contains(r.stderr, "Idempotency-Key") {
		t.Fatalf("%+v", r)
	}
}

func TestCreateReadsTheInputFromAFileOrStdin(t *testing.T) {
	file := t.TempDir() + "/input.json"
	if err := os.WriteFile(file, []byte("{\n  \"target\": \"from-file\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := newFake(t)
	if r := cliRun(t, api, "create", "-type", "demo.task", "-input", "@"+file); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	h := &harness{api: api, stdin: `{"target":"from-stdin"}`}
	if r := h.run(t, "create", "-type", "demo.task", "-input", "@-"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	s := api.sent()
	if s[0].body != `{"type":"demo.task","input":{"target":"from-file"}}` || s[1].body != `{"type":"demo.task","input":{"target":"from-stdin"}}` {
		t.Fatalf("%s / %s", s[0].body, s[1].body)
	}
}

// A lost answer is retried with the same key (the client's doing); when the retries run out
// the CLI says how to reach the operation without admitting a second one.
func TestCreateThatGotNoAnswerSaysWhichKeyToRetryWith(t *testing.T) {
	api := newFake(t)
	api.override = func(r request) (response, bool) {
		p := problemAt(503, "unavailable", "The table is not answering.")
		p.header.Set("Retry-After", "2")
		return p, true
	}
	r := cliRun(t, api, "create", "-type", "demo.task", "-key", "walkthrough-1")
	keys := map[string]bool{}
	for _, s := range api.sent() {
		keys[s.header.Get("Idempotency-Key")] = true
	}
	if r.code != 5 || len(api.sent()) != 5 || len(keys) != 1 || !strings.Contains(r.stderr, "-key walkthrough-1") {
		t.Fatalf("%+v after %d attempts with keys %v", r, len(api.sent()), keys)
	}
}

func TestCancelSendsIfMatch(t *testing.T) {
	api := newFake(t)
	r := cliRun(t, api, "cancel", opID, "-if-version", "3", "-o", "id")
	if s := api.sent()[0]; r.code != 0 || s.method != "POST" || s.path != "/v1/operations/"+opID+"/cancel" || s.header.Get("If-Match") != `"3"` ||
		r.stdout != opID+"\n" {
		t.Fatalf("%+v %+v", r, s)
	}
	r = cliRun(t, api, "cancel", opID)
	if s := api.sent()[1]; r.code != 0 || s.header.Get("If-Match") != "" {
		t.Fatalf("%+v %v", r, s.header)
	}
}

func TestCancelOfAnEndedOperationIsAProblem(t *testing.T) {
	api := newFake(t)
	api.override = func(r request) (response, bool) {
		p := problemAt(409, "already_terminal", "Operation "+opID+" has already succeeded.")
		return p, true
	}
	r := cliRun(t, api, "cancel", opID)
	if r.code != 5 || r.stdout != "" || !strings.Contains(r.stderr, "409 already_terminal: Operation "+opID+" has already succeeded.") {
		t.Fatalf("%+v", r)
	}
}

// signal posts the data as written to the signal's path, with the key and If-Match; a
// replay of the key says so on stderr; without -key a key is minted, sent and printed on
// stderr (so a retry can reuse it); without -data the data is {}; @- reads it from stdin.
func TestSignalSendsTheKeyTheDataAndIfMatch(t *testing.T) {
	api := newFake(t)
	data := `{"approved":true,"by":"alice","n":12345678901234567890}`
	r := cliRun(t, api, "signal", opID, "approval", "-data", data, "-key", "k-approve", "-if-version", "4", "-o", "id")
	s := api.sent()[0]
	if r.code != 0 || r.stdout != opID+"\n" || r.stderr != "" || s.method != "POST" || s.path != "/v1/operations/"+opID+"/signals/approval" ||
		s.header.Get("Idempotency-Key") != "k-approve" || s.header.Get("If-Match") != `"4"` || s.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%+v %+v", r, s)
	}
	if s.body != data { // big numbers are not rounded through float64
		t.Fatalf("body %s", s.body)
	}
	r = cliRun(t, api, "signal", "-key", "k-approve", opID, "approval", "-data", data)
	if r.code != 0 || !strings.Contains(r.stderr, opID+" had already received this signal with the Idempotency-Key k-approve") {
		t.Fatalf("a replay: %+v", r)
	}
	r = cliRun(t, api, "signal", opID, "approval", "-o", "id")
	s = api.sent()[2]
	key := s.header.Get("Idempotency-Key")
	if r.code != 0 || len(key) != 36 || s.body != "{}" || s.header.Get("If-Match") != "" ||
		!strings.Contains(r.stderr, "signal approval sent to "+opID+" with the minted Idempotency-Key "+key+" (run the same signal with -key "+key+" ") {
		t.Fatalf("minted key %q, body %s: %+v", key, s.body, r)
	}
	h := &harness{api: api, stdin: "{\n  \"approved\": false\n}\n"}
	if r := h.run(t, "signal", opID, "approval", "-data", "@-", "-key", "k-reject"); r.code != 0 || api.sent()[3].body != `{"approved":false}` {
		t.Fatalf("%+v %s", r, api.sent()[3].body)
	}
}

// A signal that got no answer is retried with the same key (the client's doing); when the
// retries run out the CLI says which key finds out whether it was delivered.
func TestSignalThatGotNoAnswerSaysWhichKeyToRetryWith(t *testing.T) {
	api := newFake(t)
	api.override = func(r request) (response, bool) {
		p := problemAt(503, "unavailable", "The table is not answering.")
		p.header.Set("Retry-After", "2")
		return p, true
	}
	r := cliRun(t, api, "signal", opID, "approval", "-data", `{"approved":true}`)
	keys := map[string]bool{}
	for _, s := range api.sent() {
		keys[s.header.Get("Idempotency-Key")] = true
	}
	var key string
	for k := range keys {
		key = k
	}
	if r.code != 5 || len(api.sent()) != 5 || len(keys) != 1 || !strings.Contains(r.stderr, "may have been delivered: run the same signal with -key "+key+" ") {
		t.Fatalf("%+v after %d attempts with keys %v", r, len(api.sent()), keys)
	}
}

func TestResolveSendsTheOperatorsWord(t *testing.T) {
	api := newFake(t)
	h := &harness{api: api, env: map[string]string{"LONGRUN_TOKEN": "ops-dev-token"}}
	r := h.run(t, "resolve", opID, "-outcome", "failed", "-reason", "lost", "-problem-code", "export_lost", "-problem-title", "Export lost", "-o", "table")
	var body struct {
		Outcome, Reason string
		Problem         map[string]string
		Result          any
	}
	s := api.sent()[0]
	_ = json.Unmarshal([]byte(s.body), &body)
	if r.code != 0 || s.path != "/v1/operations/"+opID+"/resolve" || s.header.Get("Authorization") != "Bearer ops-dev-token" ||
		body.Outcome != "failed" || body.Reason != "lost" || body.Problem["code"] != "export_lost" || body.Problem["title"] != "Export lost" ||
		body.Problem["type"] != "https://longrun.dev/problems/export_lost" || body.Result != nil || !strings.Contains(r.stdout, "failed (export_lost)") {
		t.Fatalf("%+v %s", r, s.body)
	}
	r = h.run(t, "resolve", opID, "-outcome", "succeeded", "-reason", "Confirmed by hand.", "-result", `{"rows":12345678901234567890}`)
	if s := api.sent()[1]; r.code != 0 || s.body != `{"outcome":"succeeded","reason":"Confirmed by hand.","result":{"rows":12345678901234567890}}` {
		t.Fatalf("%+v %s", r, s.body)
	}
}

func TestListFollowsTheCursorsWithAll(t *testing.T) {
	api := newFake(t)
	api.pages = [][]rep{{{ID: "op_1", State: "running", Version: 3}}, {{ID: "op_2", State: "succeeded", Version: 5}}}
	r := cliRun(t, api, "list", "-all", "-state", "running", "-limit", "1", "-o", "id")
	s := api.sent()
	if r.code != 0 || r.stdout != "op_1\nop_2\n" || len(s) != 2 || fmt.Sprint(parseQuery(s[0].query)) != "map[limit:1 state:running]" ||
		fmt.Sprint(parseQuery(s[1].query)) != "map[cursor:c1 limit:1 state:running]" {
		t.Fatalf("%+v %+v", r, s)
	}
	// Without -all: the first page, and on stderr how to go on.
	r = cliRun(t, api, "list", "-o", "id")
	if r.code != 0 || r.stdout != "op_1\n" || !strings.Contains(r.stderr, "-cursor c1") || len(api.sent()) != 3 {
		t.Fatalf("%+v", r)
	}
}

// Flags go before or after the positional arguments and the command, as in gh and kubectl.
func TestFlagsGoAnywhere(t *testing.T) {
	api := newFake(t, rep{State: "running", Version: 3})
	for _, args := range [][]string{
		{"-o", "id", "get", opID},
		{"get", opID, "-o", "id"},
		{"get", "-o", "id", opID},
		{"-token", "x", "get", opID, "-o", "id", "-token", "alice-dev-token"},
	} {
		if r := cliRun(t, api, args...); r.code != 0 || r.stdout != opID+"\n" {
			t.Errorf("%q: %+v", args, r)
		}
	}
	for _, s := range api.sent() {
		if s.header.Get("Authorization") != "Bearer alice-dev-token" {
			t.Errorf("%v", s.header)
		}
	}
}

func TestHelp(t *testing.T) {
	api := newFake(t)
	for _, args := range [][]string{{"-help"}, {"-h"}, {"help"}} {
		if r := cliRun(t, api, args...); r.code != 0 || r.stdout != usage || r.stderr != "" {
			t.Errorf("%q: %d %q", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"help", "create"}, {"create", "-h"}} {
		if r := cliRun(t, api, args...); r.code != 0 || !strings.Contains(r.stdout, "usage: longrun create -type T") ||
			!strings.Contains(r.stdout, "-wait") || strings.Contains(r.stdout, "-sigv4\n") {
			t.Errorf("%q: %+v", args, r)
		}
	}
	if r := cliRun(t, api, "help", "republish"); r.code != 0 || r.stdout != republishUsage {
		t.Errorf("%+v", r)
	}
	// The usage documents every exit status.
	for _, s := range []string{"0    success", "1    the operation failed", "2    usage error", "3    the operation was canceled",
		"4    the operation's outcome is unknown", "5    an API problem", "6    -timeout ran out", "130  interrupted"} {
		if !strings.Contains(usage, s) {
			t.Errorf("usage does not say %q", s)
		}
	}
	if len(api.sent()) != 0 {
		t.Errorf("help called the API")
	}
}

func TestSigV4(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	api := newFake(t, rep{State: "running", Version: 3})
	h := &harness{api: api, env: map[string]string{"LONGRUN_TOKEN": ""}}
	if r := h.run(t, "-sigv4", "get", opID); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	auth := api.sent()[0].header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") {
		t.Fatalf("Authorization %q", auth)
	}
}

func TestTimeoutStopsWaitingNotTheOperation(t *testing.T) {
	api := newFake(t, rep{State: "running", Version: 3, RetryAfter: 10})
	clock := clocktest.New(t0)
	h := &harness{api: api, clock: clock}
	r := h.run(t, "wait", opID, "-timeout", "25s", "-o", "id")
	if r.code != 6 || r.stdout != opID+"\n" || !strings.Contains(r.stderr, "-timeout 25s ran out") ||
		!strings.Contains(r.stderr, "longrun get -watch "+opID) || len(api.sent()) != 3 {
		t.Fatalf("%+v after %d requests", r, len(api.sent()))
	}
	if fmt.Sprint(clock.Waits()) != "[10s 10s 5s]" {
		t.Fatalf("waited %v", clock.Waits())
	}
	for _, s := range api.sent() {
		if s.method != "GET" {
			t.Fatalf("%s %s", s.method, s.path)
		}
	}
}

// resolve -outcome retry sends If-Match: the version given, or, without -if-version, the one
// a read of the operation finds (said on stderr).
func TestResolveRetrySendsIfMatch(t *testing.T) {
	api := newFake(t, rep{State: "outcome_unknown", Version: 5, Problem: "result_lost"})
	h := &harness{api: api, env: map[string]string{"LONGRUN_TOKEN": "ops-dev-token"}}
	r := h.run(t, "resolve", opID, "-outcome", "retry", "-reason", "Safe to send again.", "-if-version", "5", "-o", "id")
	s := api.sent()
	if r.code != 0 || len(s) != 1 || s[0].header.Get("If-Match") != `"5"` || s[0].body != `{"outcome":"retry","reason":"Safe to send again."}` {
		t.Fatalf("%+v %+v", r, s)
	}
	r = h.run(t, "resolve", opID, "-outcome", "retry", "-reason", "Safe to send again.", "-o", "id")
	s = api.sent()[1:]
	if r.code != 0 || len(s) != 2 || s[0].method != "GET" || s[1].header.Get("If-Match") != `"5"` ||
		!strings.Contains(r.stderr, "retrying "+opID+" at version 5, outcome_unknown as read now") {
		t.Fatalf("%+v %+v", r, s)
	}
	// succeeded and failed send If-Match only when asked to.
	r = h.run(t, "resolve", opID, "-outcome", "succeeded", "-reason", "Confirmed.", "-o", "id")
	if s := api.sent()[3]; r.code != 0 || s.header.Get("If-Match") != "" {
		t.Fatalf("%+v %v", r, s.header)
	}
	if r := h.run(t, "resolve", opID, "-outcome", "maybe", "-reason", "x"); r.code != 2 || !strings.Contains(r.stderr, "succeeded, failed or retry") {
		t.Fatalf("%+v", r)
	}
}

// list sends its target prefix and creation-time window, in UTC; a window that ends before
// it begins is a usage error.
func TestListSendsItsFilters(t *testing.T) {
	api := newFake(t)
	r := cliRun(t, api, "list", "-target", "demo:build-", "-created-after", "2026-11-30T11:00:00+01:00", "-created-before", "2026-12-01T00:00:00Z", "-o", "id")
	s := api.sent()
	q, _ := url.ParseQuery(s[0].query)
	if r.code != 0 || q.Get("target") != "demo:build-" || q.Get("createdAfter") != "2026-11-30T10:00:00Z" || q.Get("createdBefore") != "2026-12-01T00:00:00Z" {
		t.Fatalf("%+v %s", r, s[0].query)
	}
	for _, args := range [][]string{
		{"list", "-created-after", "yesterday"},
		{"list", "-created-after", "2026-12-01T00:00:00Z", "-created-before", "2026-11-30T00:00:00Z"},
	} {
		if r := cliRun(t, api, args...); r.code != 2 {
			t.Errorf("%q: %+v", args, r)
		}
	}
	if len(api.sent()) != 1 {
		t.Fatalf("usage errors called the API")
	}
}

// history, attention and stats are reads: their API problems exit 5, as every read's do.
func TestOperatorReadsReportProblems(t *testing.T) {
	api := newFake(t)
	api.override = func(r request) (response, bool) {
		if r.path == "/v1/attention" || r.path == "/v1/stats" {
			return problemAt(403, "forbidden", "Only operators may read the attention queue."), true
		}
		return response{}, false
	}
	for _, args := range [][]string{{"attention"}, {"stats"}, {"history", "op_01JDY3Q4W5E6R7T8Y9V0A1B2CX"}} {
		if r := cliRun(t, api, args...); r.code != 5 || !strings.Contains(r.stderr, "longrun: 40") {
			t.Errorf("%q: %+v", args, r)
		}
	}
}
