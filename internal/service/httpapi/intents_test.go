package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

func (e *env) get(id, caller string) res {
	e.t.Helper()
	return e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, caller: caller})
}

func (e *env) cancel(id, caller string, ifMatch ...string) res {
	e.t.Helper()
	r := req{method: http.MethodPost, path: "/v1/operations/" + id + "/cancel", caller: caller, contentType: "none"}
	if len(ifMatch) > 0 {
		r.header = map[string]string{"If-Match": ifMatch[0]}
	}
	return e.do(r)
}

// append adds facts to an operation through the store, as the dispatcher and workers do.
func (e *env) append(id string, kinds ...operation.Kind) {
	e.t.Helper()
	op, err := e.store.Load(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	var facts []operation.Fact
	for _, k := range kinds {
		f := operation.Fact{Kind: k, At: e.clock.Now(), Source: operation.SourceExecutor}
		if k == operation.KindOutcomeUnknown {
			f.Problem = operation.NewProblem("worker_error", "Worker failed", "lost")
		}
		facts = append(facts, f)
	}
	if _, err := e.store.Append(context.Background(), op, facts...); err != nil {
		e.t.Fatal(err)
	}
}

func TestCancelBeforeDispatchIsImmediateAndRepeatable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withQuota(1))
	id := e.admit("k-c1", demo("c1")).json["operationId"].(string)
	r := e.cancel(id, "alice")
	if r.status != http.StatusAccepted || r.json["state"] != "canceled" || r.json["cancelRequested"] != true || r.json["version"] != 3.0 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	before := e.snapshot()
	again := e.cancel(id, "alice")
	if again.status != http.StatusOK || again.json["state"] != "canceled" || again.json["version"] != 3.0 {
		t.Fatalf("repeat: %d %s", again.status, again.body)
	}
	e.unchanged(before)
	// The target lock and the quota slot came back with the terminal fact.
	if r := e.admit("k-c2", demo("c1")); r.status != 202 {
		t.Fatalf("after cancel: %d %s", r.status, r.body)
	}
}

func TestCancelWhileRunningAsksTheWorkflowToStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-run", demo("run")).json["operationId"].(string)
	e.append(id, operation.KindDispatched, operation.KindStarted)
	r := e.cancel(id, "alice")
	if r.status != http.StatusAccepted || r.json["state"] != "cancelling" || r.json["terminal"] != false || r.header.Get("Retry-After") == "" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	before := e.snapshot()
	if again := e.cancel(id, "alice"); again.status != http.StatusAccepted || again.json["version"] != r.json["version"] {
		t.Fatalf("repeat while cancelling: %d %s", again.status, again.body)
	}
	e.unchanged(before)
	// A worker's late success is still the truth of what happened; a late start is not.
	e.append(id, operation.KindCanceled)
	if g := e.get(id, "alice"); g.json["state"] != "canceled" {
		t.Fatalf("%s", g.body)
	}
}

func TestCancelAfterTheEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	done := e.admit("k-done", demo("done")).json["operationId"].(string)
	e.finish(done)
	unknown := e.admit("k-unk", demo("unk")).json["operationId"].(string)
	e.append(unknown, operation.KindDispatched, operation.KindStarted, operation.KindOutcomeUnknown)
	before := e.snapshot()
	for _, id := range []string{done, unknown} {
		r := e.cancel(id, "alice")
		wantProblem(t, r, http.StatusConflict, "already_terminal")
		if r.json["operationId"] != id {
			t.Fatalf("the problem should name the operation: %s", r.body)
		}
	}
	e.unchanged(before)
}

func TestCancelIfMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-im", demo("im")).json["operationId"].(string)
	e.append(id, operation.KindDispatched) // version 2
	before := e.snapshot()
	for _, stale := range []string{`"1"`, `"3"`, `1`, `"abc"`, `"0"`, `W/"1"`} {
		wantProblem(t, e.cancel(id, "alice", stale), http.StatusPreconditionFailed, "version_mismatch")
	}
	e.unchanged(before)
	r := e.cancel(id, "alice", `"1", W/"2"`)
	if r.status != http.StatusAccepted || r.json["state"] != "cancelling" || r.header.Get("ETag") != `"3"` {
		t.Fatalf("%d %s", r.status, r.body)
	}
	other := e.admit("k-im2", demo("im2")).json["operationId"].(string)
	if r := e.cancel(other, "alice", "*"); r.status != http.StatusAccepted {
		t.Fatalf("If-Match * : %d", r.status)
	}
}

func TestCancelOfAnotherScopeIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-x", demo("x")).json["operationId"].(string)
	before := e.snapshot()
	for _, caller := range []string{"bob", "carol"} {
		r := e.cancel(id, caller)
		m := e.cancel("op_01ARYZ6S410000000000000000", caller)
		wantProblem(t, r, 404, "not_found")
		if withoutRequestID(r.body) != withoutRequestID(m.body) {
			t.Fatalf("distinguishable:\n%s\n%s", r.body, m.body)
		}
	}
	wantProblem(t, e.cancel("not-an-id", "alice"), 404, "not_found")
	e.unchanged(before)
}

func (e *env) resolve(id, caller, body string) res {
	e.t.Helper()
	return e.do(req{method: http.MethodPost, path: "/v1/operations/" + id + "/resolve", caller: caller, body: body})
}

func TestResolveIsForOperatorsAndUnknownOutcomesOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-res", demo("res")).json["operationId"].(string)
	e.append(id, operation.KindDispatched, operation.KindStarted, operation.KindOutcomeUnknown)
	ok := `{"outcome":"succeeded","reason":"Confirmed with the provider.","result":{"rowCount":7}}`
	before := e.snapshot()
	wantProblem(t, e.resolve(id, "alice", ok), http.StatusForbidden, "forbidden")
	for _, bad := range []string{
		`{"outcome":"maybe","reason":"x"}`,
		`{"outcome":"succeeded"}`,
		`{"outcome":"succeeded","reason":""}`,
		`{"outcome":"failed","reason":"x","result":{}}`,
		`{"outcome":"succeeded","reason":"x","problem":{"code":"c","title":"t","type":"x","detail":"d"}}`,
		`{"outcome":"succeeded","reason":"x","extra":1}`,
		`{"outcome":"succeeded","reason":"x","outcome":"failed"}`,
		`[]`,
		// An operator's problem is held to the contract's bounds (OperationProblem).
		`{"outcome":"failed","reason":"x","problem":{"code":"Not Snake","title":"t"}}`,
		`{"outcome":"failed","reason":"x","problem":{"code":"c` + strings.Repeat("x", 64) + `","title":"t"}}`,
		`{"outcome":"failed","reason":"x","problem":{"code":"c","title":"` + strings.Repeat("t", 201) + `"}}`,
		`{"outcome":"failed","reason":"x","problem":{"code":"c","title":"t","detail":"` + strings.Repeat("d", 2001) + `"}}`,
	} {
		wantProblem(t, e.resolve(id, "ops", bad), http.StatusBadRequest, "invalid_input")
	}
	resolveAs := func(contentType string) res {
		return e.do(req{method: http.MethodPost, path: "/v1/operations/" + id + "/resolve", caller: "ops", contentType: contentType, body: ok})
	}
	for _, ct := range []string{"text/plain", "application/json; charset=utf-16"} {
		wantProblem(t, resolveAs(ct), http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	wantProblem(t, resolveAs("none"), http.StatusBadRequest, "invalid_input")
	wantProblem(t, e.resolve("op_01ARYZ6S410000000000000000", "ops", ok), http.StatusNotFound, "not_found")
	e.unchanged(before)

	r := e.resolve(id, "ops", ok)
	result, _ := r.json["result"].(map[string]any)
	if r.status != 200 || r.json["state"] != "succeeded" || result["rowCount"] != 7.0 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	facts, _ := e.store.Facts(context.Background(), id)
	last := facts[len(facts)-1]
	if last.Source != operation.SourceOperator || last.Actor != "longrun/ops" || last.Reason != "Confirmed with the provider." {
		t.Fatalf("the resolution must record who and why: %+v", last)
	}
	wantProblem(t, e.resolve(id, "ops", ok), http.StatusConflict, "already_terminal")

	failedID := e.admit("k-res2", demo("res2")).json["operationId"].(string)
	e.append(failedID, operation.KindDispatched, operation.KindOutcomeUnknown)
	f := e.resolve(failedID, "ops", `{"outcome":"failed","reason":"The provider never got it.","problem":{"code":"export_lost","title":"Export lost","detail":"never received"}}`)
	p, _ := f.json["problem"].(map[string]any)
	if f.json["state"] != "failed" || p["code"] != "export_lost" || p["type"] != "https://longrun.dev/problems/export_lost" {
		t.Fatalf("%s", f.body)
	}
}

func (e *env) list(caller string, query map[string][]string) res {
	e.t.Helper()
	return e.do(req{method: http.MethodGet, path: "/v1/operations", caller: caller, query: query})
}

func idsOf(t *testing.T, r res) []string {
	t.Helper()
	items, _ := r.json["items"].([]any)
	var out []string
	for _, it := range items {
		out = append(out, it.(map[string]any)["operationId"].(string))
	}
	return out
}

func TestListPagesNewestFirstWithinScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mine []string
	for i := range 25 {
		e.clock.Set(t0.Add(timeSecond(i)))
		mine = append(mine, e.admit(fmt.Sprintf("l-%d", i), demo(fmt.Sprintf("l-%d", i))).json["operationId"].(string))
	}
	for i := range 3 {
		e.do(req{caller: "bob", keys: []string{fmt.Sprintf("b-%d", i)}, body: demo(fmt.Sprintf("b-%d", i))})
	}
	first := e.list("alice", nil)
	if first.status != 200 || len(idsOf(t, first)) != 20 || first.json["nextCursor"] == nil {
		t.Fatalf("%d %s", first.status, first.body)
	}
	second := e.list("alice", map[string][]string{"cursor": {first.json["nextCursor"].(string)}})
	if second.json["nextCursor"] != nil || len(idsOf(t, second)) != 5 {
		t.Fatalf("%s", second.body)
	}
	got := append(idsOf(t, first), idsOf(t, second)...)
	for i, id := range got {
		if id != mine[len(mine)-1-i] {
			t.Fatalf("item %d is %s, want %s (newest first)", i, id, mine[len(mine)-1-i])
		}
	}
	if b := e.list("bob", nil); len(idsOf(t, b)) != 3 || b.json["nextCursor"] != nil {
		t.Fatalf("bob: %s", b.body)
	}
	// A cursor is bound to its caller and its filters.
	cursor := first.json["nextCursor"].(string)
	wantProblem(t, e.list("bob", map[string][]string{"cursor": {cursor}}), 400, "invalid_input")
	wantProblem(t, e.list("carol", map[string][]string{"cursor": {cursor}}), 400, "invalid_input")
	wantProblem(t, e.list("alice", map[string][]string{"cursor": {cursor}, "state": {"accepted"}}), 400, "invalid_input")
	wantProblem(t, e.list("alice", map[string][]string{"cursor": {"garbage!"}}), 400, "invalid_input")
	// Representations in a list are the same as a GET's.
	items := first.json["items"].([]any)
	g := e.get(mine[24], "alice")
	if items[0].(map[string]any)["statusUrl"] != g.json["statusUrl"] || items[0].(map[string]any)["version"] != g.json["version"] {
		t.Fatalf("list item %v vs GET %s", items[0], g.body)
	}
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var canceled []string
	for i := range 12 {
		id := e.admit(fmt.Sprintf("f-%d", i), demo(fmt.Sprintf("f-%d", i))).json["operationId"].(string)
		if i%4 == 0 {
			e.cancel(id, "alice")
			canceled = append(canceled, id)
		}
	}
	export := e.admit("f-export", `{"type":"export.orders","input":{"from":"2026-01-01","to":"2026-01-02"}}`).json["operationId"].(string)
	// Page through state=canceled one at a time: the filter skips items, so pages may be short,
	// but following the cursors finds exactly the canceled ones.
	var found []string
	q := map[string][]string{"state": {"canceled"}, "limit": {"1"}}
	for range 30 {
		r := e.list("alice", q)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		found = append(found, idsOf(t, r)...)
		if r.json["nextCursor"] == nil {
			break
		}
		q = map[string][]string{"state": {"canceled"}, "limit": {"1"}, "cursor": {r.json["nextCursor"].(string)}}
	}
	if len(found) != len(canceled) {
		t.Fatalf("found %v, want %v", found, canceled)
	}
	if r := e.list("alice", map[string][]string{"type": {"export.orders"}}); strings.Join(idsOf(t, r), ",") != export {
		t.Fatalf("%s", r.body)
	}
	for _, bad := range []map[string][]string{{"limit": {"0"}}, {"limit": {"101"}}, {"limit": {"x"}}, {"state": {"done"}},
		{"sort": {"asc"}}, {"limit": {"1", "2"}}} {
		wantProblem(t, e.list("alice", bad), 400, "invalid_input")
	}
	if r := e.list("alice", map[string][]string{"limit": {"100"}}); len(idsOf(t, r)) != 13 || r.json["nextCursor"] != nil {
		t.Fatalf("limit 100: %s", r.body)
	}
}

func timeSecond(i int) time.Duration { return time.Duration(i) * time.Second }
