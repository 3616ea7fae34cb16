package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The CLI against the stack: create and wait (honouring Retry-After), the output formats,
// the types, every page of the list, the exit status of each outcome (0 succeeded, 1
// failed, 4 outcome_unknown, 5 a problem), then an operator's resolve of an unknown
// outcome.
func TestCLI(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	type run struct {
		code           int
		stdout, stderr string
	}
	longrun := func(token string, args ...string) run {
		t.Helper()
		flags := []string{"-api", stack.APIURL, "-token", token}
		if stack.sigv4 != nil {
			flags = []string{"-api", stack.APIURL, "-sigv4"}
		}
		cmd := exec.Command(bin, append(flags, args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatalf("longrun %v: %v", args, err)
		}
		return run{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
	}
	operation := func(r run) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatalf("not an operation (exit %d): %s\n%s", r.code, r.stdout, r.stderr)
		}
		return m
	}

	// create -wait: exit 0, the operation as it ended on stdout, one line per change on stderr.
	r := longrun("alice-dev-token", "create", "-type", "demo.task", "-input", `{"target":"cli","steps":2}`, "-wait", "-timeout", "30s", "-o", "json")
	if done := operation(r); r.code != 0 || done["state"] != "succeeded" || !strings.Contains(r.stderr, " succeeded") {
		t.Fatalf("create -wait: exit %d %v\n%s", r.code, done, r.stderr)
	}
	waited := operation(r)["operationId"].(string)

	// create -o id, then wait for it by id.
	r = longrun("alice-dev-token", "create", "-type", "demo.task", "-input", `{"target":"cli-id","steps":1}`, "-o", "id")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(id, "op_") || strings.Contains(id, "\n") {
		t.Fatalf("create -o id: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := longrun("alice-dev-token", "wait", id, "-timeout", "30s", "-o", "json"); r.code != 0 || operation(r)["state"] != "succeeded" {
		t.Fatalf("wait: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := longrun("alice-dev-token", "cancel", id); r.code != 5 || !strings.Contains(r.stderr, "409 already_terminal") {
		t.Fatalf("cancel after success: exit %d %s", r.code, r.stderr)
	}

	// The types the API admits, and one with its input schema.
	if r := longrun("alice-dev-token", "types", "-o", "id"); r.code != 0 || !slices.Contains(strings.Fields(r.stdout), "demo.task") {
		t.Fatalf("types: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := longrun("alice-dev-token", "types", "demo.task", "-o", "json"); r.code != 0 || operation(r)["inputSchema"] == nil {
		t.Fatalf("types demo.task: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	// Every page of the list has both operations.
	r = longrun("alice-dev-token", "list", "-type", "demo.task", "-limit", "2", "-all", "-o", "id")
	if ids := strings.Fields(r.stdout); r.code != 0 || !slices.Contains(ids, waited) || !slices.Contains(ids, id) {
		t.Fatalf("list -all: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	// A failed operation: exit 1, its problem on stderr.
	r = longrun("alice-dev-token", "create", "-type", "demo.task", "-input", `{"target":"cli-fail","outcome":"fail"}`, "-wait", "-timeout", "30s", "-o", "json")
	if r.code != 1 || operation(r)["state"] != "failed" || !strings.Contains(r.stderr, "demo_failed") {
		t.Fatalf("failed: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	// An unknown outcome: exit 4; only an operator resolves it.
	r = longrun("alice-dev-token", "create", "-type", "demo.task", "-input", `{"target":"cli-unknown","outcome":"unknown"}`, "-wait", "-timeout", "30s", "-o", "json")
	if r.code != 4 || operation(r)["state"] != "outcome_unknown" {
		t.Fatalf("unknown: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	uid := operation(r)["operationId"].(string)
	if stack.local == nil {
		return // resolving needs an operator token of the local authorizer
	}
	if r := longrun("alice-dev-token", "resolve", uid, "-outcome", "failed", "-reason", "x"); r.code != 5 || !strings.Contains(r.stderr, "forbidden") {
		t.Fatalf("alice resolved: exit %d %s", r.code, r.stderr)
	}
	r = longrun("ops-dev-token", "resolve", uid, "-outcome", "failed", "-reason", "The target never built.",
		"-problem-code", "build_missing", "-problem-title", "Build missing", "-o", "json")
	resolved := operation(r)
	if p, _ := resolved["problem"].(map[string]any); r.code != 0 || resolved["state"] != "failed" || p["code"] != "build_missing" {
		t.Fatalf("resolve: exit %d %v %s", r.code, resolved, r.stderr)
	}
	// Waiting on it now ends at once, with its outcome's exit status.
	if r := longrun("alice-dev-token", "get", "-watch", uid, "-o", "id"); r.code != 1 || strings.TrimSpace(r.stdout) != uid {
		t.Fatalf("get -watch after resolve: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}
