package main

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name.golden (or, with -update, writes it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/longrun -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./cmd/longrun -run %s -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, t.Name(), got, want)
	}
}

// transcript is what a golden file holds: the command line, the exit status and both
// streams.
func transcript(args []string, r result) string {
	quoted := []string{"longrun"}
	for _, a := range args {
		if strings.ContainsFunc(a, func(r rune) bool {
			return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./@=:", r)
		}) {
			a = "'" + a + "'"
		}
		quoted = append(quoted, a)
	}
	return "$ " + strings.Join(quoted, " ") + "\n" +
		"-- exit status --\n" + strconv.Itoa(r.code) + "\n" +
		"-- stdout --\n" + r.stdout +
		"-- stderr --\n" + r.stderr
}

const (
	running = `{"completedSteps":2,"totalSteps":3,"percent":66.7,"message":"copying files"}`
	done    = `{"completedSteps":3,"totalSteps":3,"percent":100,"message":"done"}`
)

// The outputs of every command in every format, and the exit status of every way a wait
// ends, of a usage error and of an API problem.
func TestGolden(t *testing.T) {
	runningOp := rep{State: "running", Version: 4, Progress: running, RetryAfter: 1}
	listed := [][]rep{
		{runningOp, {ID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C4", State: "failed", Version: 5, Problem: "build_missing", Progress: `{"completedSteps":1}`}},
		{{ID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C5", State: "succeeded", Version: 6, Progress: done, Result: `{"steps":3,"target":"build-42"}`},
			{ID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C6", State: "accepted", Version: 1}},
	}
	// create -wait: the admission, then what each poll reads (the fourth repeats the third,
	// which says nothing new).
	journey := func(end rep) []rep {
		return []rep{
			{State: "dispatched", Version: 2, RetryAfter: 1},
			{State: "running", Version: 3, Progress: `{"completedSteps":1,"totalSteps":3,"message":"warming up"}`, RetryAfter: 1},
			{State: "running", Version: 4, Progress: running, RetryAfter: 2},
			{State: "running", Version: 4, Progress: running, RetryAfter: 2},
			end,
		}
	}
	succeeded := rep{State: "succeeded", Version: 6, Progress: done, Result: `{"steps":3,"target":"build-42"}`}
	// A demo.task admitted with "await": "approval": its first step waits for the signal.
	awaitingOp := rep{State: "running", Version: 4, Progress: `{"completedSteps":1}`, Awaiting: "approval", RetryAfter: 30}
	unavailable := func(r request) (response, bool) {
		p := problemAt(503, "unavailable", "The table is not answering.")
		p.header.Set("Retry-After", "1")
		return p, true
	}
	for _, tc := range []struct {
		name     string
		script   []rep
		pages    [][]rep
		override func(request) (response, bool)
		args     []string
		code     int
	}{
		{name: "get-json", script: []rep{runningOp}, args: []string{"get", opID, "-o", "json"}},
		{name: "get-id", script: []rep{runningOp}, args: []string{"get", opID, "-o", "id"}},
		{name: "get-table", script: []rep{runningOp}, args: []string{"get", opID, "-o", "table"}},
		{name: "get-awaiting-table", script: []rep{awaitingOp}, args: []string{"get", opID, "-o", "table"}},
		{name: "get-awaiting-json", script: []rep{awaitingOp}, args: []string{"get", opID, "-o", "json"}},
		{name: "signal-json", args: []string{"signal", opID, "approval", "-data", `{"approved":true}`, "-key", "k-approve", "-o", "json"}},
		{name: "signal-table", args: []string{"signal", opID, "approval", "-data", `{"approved":true}`, "-key", "k-approve", "-o", "table"}},
		{name: "list-json", pages: listed, args: []string{"list", "-all", "-o", "json"}},
		{name: "list-id", pages: listed, args: []string{"list", "-all", "-o", "id"}},
		{name: "list-table", pages: listed, args: []string{"list", "-all", "-o", "table"}},
		{name: "list-first-page", pages: listed, args: []string{"list", "-limit", "2", "-o", "table"}},
		{name: "list-empty", args: []string{"list", "-state", "running", "-o", "json"}},
		{name: "history-table", args: []string{"history", opID, "-o", "table"}},
		{name: "history-json", args: []string{"history", opID, "-o", "json"}},
		{name: "attention-table", args: []string{"attention", "-all", "-o", "table"}},
		{name: "attention-first-page", args: []string{"attention", "-o", "id"}},
		{name: "stats-table", args: []string{"stats", "-o", "table"}},
		{name: "stats-json", args: []string{"stats", "-o", "json"}},
		{name: "types-json", args: []string{"types", "-o", "json"}},
		{name: "types-id", args: []string{"types", "-o", "id"}},
		{name: "types-table", args: []string{"types", "-o", "table"}},
		{name: "type-json", args: []string{"types", "demo.task", "-o", "json"}},
		{name: "create-json", args: []string{"create", "-type", "demo.task", "-input", `{"target":"build-42"}`, "-key", "walkthrough-1", "-o", "json"}},
		{name: "create-id", args: []string{"create", "-type", "demo.task", "-input", `{"target":"build-42"}`, "-key", "walkthrough-1", "-o", "id"}},
		{name: "create-table", args: []string{"create", "-type", "demo.task", "-input", `{"target":"build-42"}`, "-key", "walkthrough-1", "-o", "table"}},

		// Waiting, with stderr piped: one plain line per change; the exit status says how it ended.
		{name: "create-wait-succeeded", script: journey(succeeded), code: 0,
			args: []string{"create", "-type", "demo.task", "-input", `{"target":"build-42","steps":3}`, "-key", "k", "-wait", "-o", "json"}},
		{name: "wait-failed", script: journey(rep{State: "failed", Version: 5, Problem: "build_missing", Progress: running}), code: 1,
			args: []string{"wait", opID, "-o", "id"}},
		{name: "wait-canceled", script: []rep{{State: "cancelling", Version: 4, Cancel: true, RetryAfter: 1}, {State: "canceled", Version: 5, Cancel: true}}, code: 3,
			args: []string{"wait", opID, "-o", "id"}},
		{name: "watch-outcome-unknown", script: journey(rep{State: "outcome_unknown", Version: 5, Problem: "result_lost", Progress: running}), code: 4,
			args: []string{"get", opID, "-watch", "-o", "table"}},
		{name: "watch-already-ended", script: []rep{succeeded}, code: 0, args: []string{"get", "-watch", opID, "-o", "id"}},
		{name: "wait-awaiting-approved", code: 0, args: []string{"wait", opID, "-o", "id"},
			script: []rep{awaitingOp, awaitingOp, {State: "running", Version: 6, Progress: running, RetryAfter: 1}, succeeded}},

		// Usage errors.
		{name: "usage-no-type", code: 2, args: []string{"create", "-input", `{}`}},
		{name: "usage-input-not-an-object", code: 2, args: []string{"create", "-type", "demo.task", "-input", `[1]`}},
		{name: "usage-unknown-command", code: 2, args: []string{"explode"}},
		{name: "usage-bad-output", code: 2, args: []string{"get", opID, "-o", "yaml"}},
		{name: "usage-unknown-flag", code: 2, args: []string{"get", opID, "-wach"}},
		{name: "usage-no-args", code: 2, args: nil},
		{name: "usage-signal-no-name", code: 2, args: []string{"signal", opID, "-data", `{"approved":true}`}},
		{name: "usage-signal-data-not-an-object", code: 2, args: []string{"signal", opID, "approval", "-data", `true`}},

		// API problems: printed with status, code and detail, exit status 5.
		{name: "problem-not-found", code: 5, args: []string{"get", "op_01JDY3Q4W5E6R7T8Y9V0A1B2CX"}},
		{name: "problem-not-found-watch", code: 5, args: []string{"wait", "op_01JDY3Q4W5E6R7T8Y9V0A1B2CX"}},
		{name: "problem-unknown-signal", code: 5, args: []string{"signal", opID, "aproval", "-data", `{"approved":true}`, "-key", "k-approve"}},
		{name: "problem-unavailable-after-retries", code: 5, override: unavailable, args: []string{"get", opID}},
		{name: "problem-invalid-input", code: 5, args: []string{"create", "-type", "export.orders", "-input", `{"from":"yesterday"}`},
			override: func(r request) (response, bool) {
				p := problemAt(400, "invalid_input", "The input does not satisfy export.orders's inputSchema (2 errors).")
				p.body = strings.Replace(p.body, `"code"`, `"errors":[{"pointer":"/input/from","detail":"must be a date"},{"pointer":"/input/to","detail":"is required"}],"code"`, 1)
				return p, true
			}},
		{name: "problem-not-a-problem", code: 5, args: []string{"types"},
			override: func(r request) (response, bool) {
				return response{502, http.Header{"Content-Type": {"text/html"}}, "<html><body><h1>502 Bad Gateway</h1></body></html>"}, true
			}},
		{name: "problem-api-gateway", code: 5, args: []string{"types"},
			override: func(r request) (response, bool) {
				return response{403, http.Header{"Content-Type": {"application/json"}}, `{"message":"Missing Authentication Token"}`}, true
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFake(t, tc.script...)
			api.pages, api.override = tc.pages, tc.override
			r := cliRun(t, api, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			if strings.Contains(r.stderr, "<") {
				t.Errorf("markup on stderr: %s", r.stderr)
			}
			golden(t, tc.name, transcript(tc.args, r))
		})
	}
}

// A call that gets no answer at all is a transport failure: exit status 5, no bytes.
func TestTransportFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	h := &harness{api: newFake(t), env: map[string]string{"LONGRUN_API": url}}
	// the harness sets LONGRUN_API to its own server; h.env overrides it with the closed one
	r := h.run(t, "get", opID)
	if r.code != 5 || r.stdout != "" || !strings.Contains(r.stderr, "no answer from the API (GET "+url+"/v1/operations/"+opID+")") {
		t.Fatalf("%+v", r)
	}
}
