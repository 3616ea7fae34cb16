package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// appendFacts appends facts to an operation through the store, as longrun's writers do.
func (e *env) appendFacts(id string, facts ...operation.Fact) {
	e.t.Helper()
	op, err := e.store.Load(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.Append(context.Background(), op, facts...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) history(id, caller string) res {
	e.t.Helper()
	return e.do(req{method: http.MethodGet, path: "/v1/operations/" + id + "/history", caller: caller})
}

// entries are a history's entries as decoded JSON objects.
func entries(t *testing.T, r res) []map[string]any {
	t.Helper()
	var h struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatal(err)
	}
	return h.Entries
}

// A history shows every fact with the state it led to and its public members, and nothing
// internal: not the execution's ARN, a lease's run, execution or callback, a signal's key
// or fingerprint, a wait's or a retry's state, the admission's input or scope. Who
// recorded a fact (actor) is for operators only.
func TestHistoryShowsEveryFactAndNothingInternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-h", demo("h")).json["operationId"].(string)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	secretState := json.RawMessage(`{"cursor":"retry-state-secret"}`)
	e.appendFacts(id,
		operation.Fact{Kind: operation.KindDispatched, At: at(1), Source: operation.SourceDispatcher,
			Execution: "arn:aws:states:us-east-1:123456789012:execution:longrun-dev-operation:" + id},
		operation.Fact{Kind: operation.KindStarted, At: at(2), Source: operation.SourceExecutor, Progress: &operation.Progress{},
			Lease:    &operation.Lease{Run: "run-secret-1", Execution: id, Until: at(600), Callback: "callback-token-secret"},
			Delivery: &operation.Delivery{Step: 1}},
		operation.Fact{Kind: operation.KindProgress, At: at(3), Source: operation.SourceExecutor,
			Progress: &operation.Progress{CompletedSteps: 1, TotalSteps: 3, Message: "one of three"},
			Awaiting: &operation.Awaiting{Signal: "approval", Since: at(3), Until: at(603), Step: 1, State: json.RawMessage(`{"w":"awaiting-state-secret"}`)}},
		operation.Fact{Kind: operation.KindSignaled, At: at(4), Source: operation.SourceClient, Actor: "carol",
			Signal: &operation.Signal{Name: "approval", Data: json.RawMessage(`{"approved":true}`), Key: "signal-key-secret", Fingerprint: "fingerprint-secret"}},
		operation.Fact{Kind: operation.KindProgress, At: at(5), Source: operation.SourceExecutor, Progress: &operation.Progress{CompletedSteps: 1},
			Lease:    &operation.Lease{Run: "run-secret-2", Execution: id + "-1", Until: at(600)},
			Delivery: &operation.Delivery{Step: 2, From: 0, Through: 1, Awaited: "approval"}},
		operation.Fact{Kind: operation.KindProgress, At: at(6), Source: operation.SourceExecutor, Progress: &operation.Progress{CompletedSteps: 2},
			WaitingUntil: ptr(at(900))},
		operation.Fact{Kind: operation.KindOutcomeUnknown, At: at(7), Source: operation.SourceReconciler,
			Problem: operation.NewProblem("result_lost", "Result lost", "The step's execution ended without a word."),
			Retry:   &operation.Retry{Step: 3, State: secretState}},
		operation.Fact{Kind: operation.KindRetried, At: at(8), Source: operation.SourceOperator, Actor: "longrun/ops",
			Reason: "The provider has no record of it.", Retry: &operation.Retry{Step: 3, Attempt: 2, State: secretState}},
	)

	r := e.history(id, "alice")
	if r.status != http.StatusOK || r.header.Get("ETag") != `"9"` || r.header.Get("Cache-Control") != "no-store" ||
		r.json["operationId"] != id || r.json["version"] != 9.0 {
		t.Fatalf("%d %v %s", r.status, r.header, r.body)
	}
	for _, secret := range []string{"arn:", "states", "run-secret", "callback-token-secret", "signal-key-secret", "fingerprint-secret",
		"awaiting-state-secret", "retry-state-secret", `"tenant"`, `"principal"`, `"execution"`, `"lease"`, `"delivery"`,
		`"actor"`, "carol", `"key"`} {
		if strings.Contains(string(r.body), secret) {
			t.Errorf("the owner's history shows %s: %s", secret, r.body)
		}
	}
	got := entries(t, r)
	wantStates := []operation.State{operation.Accepted, operation.Dispatched, operation.Running, operation.Running, operation.Running,
		operation.Running, operation.Running, operation.OutcomeUnknown, operation.Running}
	wantKinds := []operation.Kind{operation.KindAccepted, operation.KindDispatched, operation.KindStarted, operation.KindProgress,
		operation.KindSignaled, operation.KindProgress, operation.KindProgress, operation.KindOutcomeUnknown, operation.KindRetried}
	wantBy := []operation.Source{operation.SourceAdmission, operation.SourceDispatcher, operation.SourceExecutor, operation.SourceExecutor,
		operation.SourceClient, operation.SourceExecutor, operation.SourceExecutor, operation.SourceReconciler, operation.SourceOperator}
	if len(got) != len(wantStates) {
		t.Fatalf("%d entries, want %d: %s", len(got), len(wantStates), r.body)
	}
	for i, g := range got {
		if g["version"] != float64(i+1) || g["state"] != string(wantStates[i]) || g["kind"] != string(wantKinds[i]) || g["by"] != string(wantBy[i]) {
			t.Errorf("entry %d: %v, want version %d, %s, state %s, by %s", i+1, g, i+1, wantKinds[i], wantStates[i], wantBy[i])
		}
	}
	want := func(i int, member, value string) {
		t.Helper()
		b, _ := json.Marshal(got[i-1][member])
		if string(b) != value {
			t.Errorf("entry %d's %s: %s, want %s", i, member, b, value)
		}
	}
	want(1, "at", `"2026-11-30T10:00:00.000Z"`)
	want(1, "input", `{"target":"h"}`) // as admitted: the representation has no input
	want(2, "input", `null`)
	want(3, "stepStarted", `1`)
	want(3, "progress", `{"completedSteps":0}`)
	want(4, "stepStarted", `null`)
	want(4, "progress", `{"completedSteps":1,"message":"one of three","totalSteps":3}`)
	want(4, "awaiting", `{"signal":"approval","since":"2026-11-30T10:00:03.000Z","until":"2026-11-30T10:10:03.000Z"}`)
	want(5, "signal", `{"data":{"approved":true},"name":"approval"}`)
	want(6, "stepStarted", `2`)
	want(6, "progress", `{"completedSteps":1,"message":"one of three","totalSteps":3}`) // the worker's last words are kept
	want(7, "waitingUntil", `"2026-11-30T10:15:00.000Z"`)
	want(7, "stepStarted", `null`)
	want(8, "problem", `{"code":"result_lost","detail":"The step's execution ended without a word.","title":"Result lost","type":"https://longrun.dev/problems/result_lost"}`)
	want(8, "retry", `null`)
	want(9, "retry", `{"attempt":2,"step":3}`)
	want(9, "reason", `"The provider has no record of it."`)

	// The last entry is the representation's version and state.
	if g := e.get(id, "alice"); g.json["version"] != 9.0 || g.json["state"] != "running" {
		t.Fatalf("%s", g.body)
	}

	// An operator sees who recorded what.
	ops := entries(t, e.history(id, "ops"))
	for i, actor := range map[int]string{0: "alice", 4: "carol", 8: "longrun/ops"} {
		if ops[i]["actor"] != actor {
			t.Errorf("operator's entry %d: actor %v, want %s", i+1, ops[i]["actor"], actor)
		}
	}
	if _, ok := ops[1]["actor"]; ok {
		t.Errorf("a dispatcher's fact has an actor: %v", ops[1])
	}
}

func ptr[T any](v T) *T { return &v }

// A history is visible exactly as the operation is: another tenant's, or another caller's
// of the same tenant, is 404 with the body of a missing one; an operator sees every
// tenant's. Only GET is a method of it.
func TestHistoryIsVisibleAsTheOperationIs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-hv", demo("hv")).json["operationId"].(string)
	missing := e.history("op_01ARYZ6S410000000000000000", "bob")
	wantProblem(t, missing, http.StatusNotFound, "not_found")
	for _, caller := range []string{"bob", "carol"} {
		r := e.history(id, caller)
		wantProblem(t, r, http.StatusNotFound, "not_found")
		if withoutRequestID(r.body) != withoutRequestID(missing.body) {
			t.Fatalf("%s can tell another's history from a missing one:\n%s\n%s", caller, r.body, missing.body)
		}
	}
	for _, bad := range []string{"nope", "op_%00", "op_01aryz6s410000000000000000"} {
		wantProblem(t, e.history(bad, "alice"), http.StatusNotFound, "not_found")
	}
	if r := e.history(id, "ops"); r.status != http.StatusOK || len(entries(t, r)) != 1 {
		t.Fatalf("operator: %d %s", r.status, r.body)
	}
	if r := e.history(id, "alice"); r.status != http.StatusOK || r.header.Get("ETag") != `"1"` {
		t.Fatalf("owner: %d %s", r.status, r.body)
	}
	r := e.do(req{method: http.MethodPost, path: "/v1/operations/" + id + "/history", caller: "alice"})
	wantProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
	if r.header.Get("Allow") != "GET" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
}

// An IAM principal is an ARN: an operator sees it without its arn:<partition>:<service>:
// prefix, since no public body carries an ARN (the harness fails any body with one).
func TestHistoryShowsAnIAMActorWithoutItsARN(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.do(req{userArn: "arn:aws:sts::111122223333:assumed-role/exporter/i-0abc", keys: []string{"k-iam"}, body: demo("iam")}).json["operationId"].(string)
	e.appendFacts(id, operation.Fact{Kind: operation.KindCancelRequested, At: t0, Source: operation.SourceOperator,
		Actor: "111122223333/arn:aws:sts::111122223333:assumed-role/oncall"})
	got := entries(t, e.history(id, "ops"))
	if got[0]["actor"] != "111122223333:assumed-role/exporter" || got[1]["actor"] != "111122223333/111122223333:assumed-role/oncall" {
		t.Fatalf("actors %v, %v", got[0]["actor"], got[1]["actor"])
	}
}

// Operators read and cancel any tenant's operation; everyone else only their own.
func TestOperatorsSeeAndCancelEveryTenantsOperations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-op", demo("op")).json["operationId"].(string)
	e.append(id, operation.KindDispatched, operation.KindStarted)
	if g := e.get(id, "ops"); g.status != http.StatusOK || g.json["state"] != "running" {
		t.Fatalf("an operator's GET: %d %s", g.status, g.body)
	}
	wantProblem(t, e.get(id, "bob"), http.StatusNotFound, "not_found")
	before := e.snapshot()
	wantProblem(t, e.cancel(id, "bob"), http.StatusNotFound, "not_found")
	e.unchanged(before)
	r := e.cancel(id, "ops", `"3"`)
	if r.status != http.StatusAccepted || r.json["state"] != "cancelling" {
		t.Fatalf("an operator's cancel: %d %s", r.status, r.body)
	}
	facts, err := e.store.Facts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if last := facts[len(facts)-1]; last.Kind != operation.KindCancelRequested || last.Actor != "longrun/ops" || last.Source != operation.SourceOperator {
		t.Fatalf("the cancel must record who asked, as an operator: %+v", last)
	}
}
