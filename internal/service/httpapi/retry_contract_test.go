package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// unknownWithStep makes an operation's outcome unknown with the step it was at recorded (or
// not), as the recorder and the reconciler record it.
func (e *env) unknownWithStep(id string, step int) {
	e.t.Helper()
	f := operation.Fact{Kind: operation.KindOutcomeUnknown, At: e.clock.Now(), Source: operation.SourceReconciler,
		Problem: operation.NewProblem("result_lost", "Result lost", "The step's end was lost.")}
	if step > 0 {
		f.Retry = &operation.Retry{Step: step, State: json.RawMessage(`{"page":2}`)}
	}
	e.appendFacts(id,
		operation.Fact{Kind: operation.KindDispatched, At: e.clock.Now(), Source: operation.SourceDispatcher},
		operation.Fact{Kind: operation.KindStarted, At: e.clock.Now(), Source: operation.SourceExecutor}, f)
}

// Every answer of a retry through the API is the contract's (the harness holds each to
// api/openapi.yaml): 400 without If-Match, 412 on another version, 409 deadline_passed and
// not_retryable naming the operation, 403 for a caller who is not an operator, and 200 with
// the representation running again and carrying the retry, which the history shows too.
func TestResolveRetryAnswersAsTheContractSays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-rt", demo("rt")).json["operationId"].(string)
	e.unknownWithStep(id, 1) // version 4
	retry := `{"outcome":"retry","reason":"The target shows no trace of it."}`
	resolve := func(id, caller, ifMatch, body string) res {
		r := req{method: http.MethodPost, path: "/v1/operations/" + id + "/resolve", caller: caller, body: body}
		if ifMatch != "" {
			r.header = map[string]string{"If-Match": ifMatch}
		}
		return e.do(r)
	}
	before := e.snapshot()
	wantProblem(t, resolve(id, "alice", `"4"`, retry), http.StatusForbidden, "forbidden")
	wantInvalidQuery(t, resolve(id, "ops", "", retry), "If-Match")
	wantProblem(t, resolve(id, "ops", `"3"`, retry), http.StatusPreconditionFailed, "version_mismatch")
	wantProblem(t, resolve(id, "ops", `"4"`, `{"outcome":"retry","reason":"x","problem":{"code":"c","title":"t"}}`), http.StatusBadRequest, "invalid_input")
	e.unchanged(before)

	r := resolve(id, "ops", `"4"`, retry)
	retried, _ := r.json["retried"].(map[string]any)
	if r.status != http.StatusOK || r.json["state"] != "running" || r.header.Get("ETag") != `"5"` ||
		retried["step"] != 1.0 || retried["attempt"] != 2.0 || retried["reason"] != "The target shows no trace of it." {
		t.Fatalf("%d %s", r.status, r.body)
	}
	h := entries(t, e.history(id, "alice"))
	if last := h[len(h)-1]; last["kind"] != "retried" || last["state"] != "running" || last["by"] != "operator" {
		t.Fatalf("history's last entry: %v", last)
	}
	wantProblem(t, resolve(id, "ops", `"5"`, retry), http.StatusConflict, "already_terminal")

	// The step was not recorded: not_retryable.
	blind := e.admit("k-rt2", demo("rt2")).json["operationId"].(string)
	e.unknownWithStep(blind, 0)
	p := resolve(blind, "ops", `"4"`, retry)
	wantProblem(t, p, http.StatusConflict, "not_retryable")
	if p.json["operationId"] != blind {
		t.Fatalf("the problem must name the operation: %s", p.body)
	}

	// Past the deadline: deadline_passed, and resolving it as failed still works.
	late := e.admit("k-rt3", demo("rt3")).json["operationId"].(string)
	e.unknownWithStep(late, 1)
	e.clock.Set(t0.Add(48 * time.Hour))
	p = resolve(late, "ops", `"4"`, retry)
	wantProblem(t, p, http.StatusConflict, "deadline_passed")
	if p.json["operationId"] != late {
		t.Fatalf("the problem must name the operation: %s", p.body)
	}
	if f := resolve(late, "ops", `"4"`, `{"outcome":"failed","reason":"Too late to try again."}`); f.status != http.StatusOK || f.json["state"] != "failed" {
		t.Fatalf("%d %s", f.status, f.body)
	}
}
