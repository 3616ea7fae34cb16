package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The CLI against the stack: create, wait (honouring Retry-After), then an operator's
// resolve of an unknown outcome.
func TestCLI(t *testing.T) {
	bin := buildCLI(t)
	longrun := func(token string, args ...string) (map[string]any, string) {
		t.Helper()
		flags := []string{"-api", stack.APIURL, "-token", token}
		if stack.sigv4 != nil {
			flags = []string{"-api", stack.APIURL, "-sigv4"}
		}
		cmd := exec.Command(bin, append(flags, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, stderr.String()
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("longrun %v printed %s", args, out)
		}
		return m, ""
	}
	created, problem := longrun("alice-dev-token", "create", "-type", "demo.task", "-input", `{"target":"cli","steps":2}`)
	if problem != "" {
		t.Fatal(problem)
	}
	id := created["operationId"].(string)
	if done, problem := longrun("alice-dev-token", "wait", id, "-timeout", "30s"); problem != "" || done["state"] != "succeeded" {
		t.Fatalf("wait: %v %s", done, problem)
	}
	if _, problem := longrun("alice-dev-token", "cancel", id); !strings.Contains(problem, "already_terminal") {
		t.Fatalf("cancel after success: %q", problem)
	}
	if stack.local == nil {
		return // resolving needs an operator token of the local authorizer
	}
	unknown, _ := longrun("alice-dev-token", "create", "-type", "demo.task", "-input", `{"target":"cli-unknown","outcome":"unknown"}`)
	uid := unknown["operationId"].(string)
	if u, _ := longrun("alice-dev-token", "wait", uid, "-timeout", "30s"); u["state"] != "outcome_unknown" {
		t.Fatalf("%v", u)
	}
	if _, problem := longrun("alice-dev-token", "resolve", uid, "-outcome", "failed", "-reason", "x"); !strings.Contains(problem, "forbidden") {
		t.Fatalf("alice resolved: %q", problem)
	}
	resolved, problem := longrun("ops-dev-token", "resolve", uid, "-outcome", "failed", "-reason", "The target never built.",
		"-problem-code", "build_missing", "-problem-title", "Build missing")
	if p, _ := resolved["problem"].(map[string]any); problem != "" || resolved["state"] != "failed" || p["code"] != "build_missing" {
		t.Fatalf("resolve: %v %s", resolved, problem)
	}
}
