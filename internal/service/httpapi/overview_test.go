package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

func (e *env) getAs(caller, path string, query map[string][]string) res {
	e.t.Helper()
	return e.do(req{method: http.MethodGet, path: path, caller: caller, query: query})
}

// wantInvalidQuery fails unless r is 400 invalid_input pointing at the parameter name.
func wantInvalidQuery(t *testing.T, r res, name string) {
	t.Helper()
	wantProblem(t, r, http.StatusBadRequest, "invalid_input")
	errs, _ := r.json["errors"].([]any)
	for _, e := range errs {
		if m, _ := e.(map[string]any); m["pointer"] == "/"+name {
			return
		}
	}
	t.Fatalf("no error points at /%s: %s", name, r.body)
}

// The attention queue is for operators: anyone else is 403 before anything is read. An
// operator gets every tenant's unknown outcomes, oldest first, each with its tenant and
// status URL, page by page; a bad parameter or cursor is 400 and reads nothing.
func TestAttentionQueueIsForOperators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var want []string
	for i, caller := range []string{"alice", "bob", "alice"} {
		e.clock.Set(t0.Add(time.Duration(i) * time.Minute))
		id := e.do(req{caller: caller, keys: []string{"k-at" + caller + string(rune('0'+i))}, body: demo("at" + string(rune('0'+i)))}).json["operationId"].(string)
		e.append(id, operation.KindDispatched, operation.KindStarted, operation.KindOutcomeUnknown)
		want = append(want, id)
	}
	healthy := e.admit("k-at-ok", demo("at-ok")).json["operationId"].(string)
	e.append(healthy, operation.KindDispatched, operation.KindStarted)

	e.calls.Reset()
	for _, caller := range []string{"alice", "bob"} {
		wantProblem(t, e.getAs(caller, "/v1/attention", nil), http.StatusForbidden, "forbidden")
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("a refused caller cost %d DynamoDB calls", n)
	}

	var got, tenants []string
	query := map[string][]string{"limit": {"2"}}
	for page := 0; ; page++ {
		r := e.do(req{method: http.MethodGet, path: "/v1/attention", caller: "ops", query: query, stagePrefix: "/prod"})
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		items, _ := r.json["items"].([]any)
		for _, it := range items {
			m := it.(map[string]any)
			op := m["operation"].(map[string]any)
			got, tenants = append(got, op["operationId"].(string)), append(tenants, m["tenant"].(string))
			if op["state"] != "outcome_unknown" || op["statusUrl"] != "/prod/v1/operations/"+op["operationId"].(string) {
				t.Fatalf("item %v", m)
			}
		}
		next, _ := r.json["nextCursor"].(string)
		if next == "" {
			break
		}
		if page > 3 {
			t.Fatal("the pages do not end")
		}
		query = map[string][]string{"limit": {"2"}, "cursor": {next}}
	}
	if !slices.Equal(got, want) || !slices.Equal(tenants, []string{"acme", "globex", "acme"}) {
		t.Fatalf("got %v %v, want %v", got, tenants, want)
	}

	e.calls.Reset()
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		query map[string][]string
		name  string
	}{
		{map[string][]string{"limit": {"0"}}, "limit"},
		{map[string][]string{"limit": {"101"}}, "limit"},
		{map[string][]string{"limit": {"ten"}}, "limit"},
		{map[string][]string{"limit": {"1", "2"}}, "limit"},
		{map[string][]string{"cursor": {""}}, "cursor"},
		{map[string][]string{"cursor": {"not a cursor"}}, "cursor"},
		{map[string][]string{"cursor": {enc("garbage")}}, "cursor"},
		{map[string][]string{"cursor": {enc("2026-11-30T10:00:00.000Z#op_nope")}}, "cursor"},
		{map[string][]string{"state": {"running"}}, "state"},
	} {
		wantInvalidQuery(t, e.getAs("ops", "/v1/attention", c.query), c.name)
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("bad parameters cost %d DynamoDB calls", n)
	}
	r := e.do(req{method: http.MethodPost, path: "/v1/attention", caller: "ops"})
	wantProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
	if r.header.Get("Allow") != "GET" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
}

// The stats are for operators: they count what is in flight by state and what waits for
// an operator, across tenants, and name the oldest in flight with its tenant.
func TestStatsAreForOperators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clock.Set(t0)
	oldest := e.do(req{caller: "bob", keys: []string{"k-st0"}, body: demo("st0")}).json["operationId"].(string)
	e.append(oldest, operation.KindDispatched, operation.KindStarted)
	e.clock.Set(t0.Add(time.Minute))
	e.admit("k-st1", demo("st1"))
	running := e.admit("k-st2", demo("st2")).json["operationId"].(string)
	e.append(running, operation.KindDispatched)
	cancelling := e.admit("k-st3", demo("st3")).json["operationId"].(string)
	e.append(cancelling, operation.KindDispatched, operation.KindStarted)
	e.cancel(cancelling, "alice")
	unknown := e.admit("k-st4", demo("st4")).json["operationId"].(string)
	e.append(unknown, operation.KindDispatched, operation.KindOutcomeUnknown)
	done := e.admit("k-st5", demo("st5")).json["operationId"].(string)
	e.append(done, operation.KindDispatched, operation.KindStarted, operation.KindSucceeded)

	e.calls.Reset()
	wantProblem(t, e.getAs("alice", "/v1/stats", nil), http.StatusForbidden, "forbidden")
	wantInvalidQuery(t, e.getAs("ops", "/v1/stats", map[string][]string{"tenant": {"acme"}}), "tenant")
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("refused requests cost %d DynamoDB calls", n)
	}
	r := e.getAs("ops", "/v1/stats", nil)
	if r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	in := r.json["inFlight"].(map[string]any)
	if in["accepted"] != 1.0 || in["dispatched"] != 1.0 || in["running"] != 1.0 || in["cancelling"] != 1.0 ||
		r.json["outcomeUnknown"] != 1.0 || r.json["partial"] != false || r.json["asOf"] == "" {
		t.Fatalf("stats %s", r.body)
	}
	o := r.json["oldestInFlight"].(map[string]any)
	if o["tenant"] != "globex" || o["operation"].(map[string]any)["operationId"] != oldest ||
		o["operation"].(map[string]any)["statusUrl"] != "/v1/operations/"+oldest {
		t.Fatalf("oldest in flight %v, want globex's %s", o, oldest)
	}
	r = e.do(req{method: http.MethodDelete, path: "/v1/stats", caller: "ops"})
	wantProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")

	// Nothing in flight: null.
	idle := newEnv(t)
	if r := idle.getAs("ops", "/v1/stats", nil); r.status != http.StatusOK || r.json["oldestInFlight"] != nil ||
		!strings.Contains(string(r.body), `"oldestInFlight":null`) {
		t.Fatalf("idle: %d %s", r.status, r.body)
	}
}

// The list's target prefix and creation-time window filter through the API; each bad value
// is 400 pointing at its parameter, and reads nothing.
func TestListFiltersThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ids []string
	for i, target := range []string{"alpha-1", "alpha-2", "beta-1"} {
		e.clock.Set(t0.Add(time.Duration(i) * time.Hour))
		ids = append(ids, e.admit("k-lf"+target, demo(target)).json["operationId"].(string))
	}
	e.clock.Set(t0.Add(time.Hour))
	e.do(req{caller: "bob", keys: []string{"k-lf-bob"}, body: demo("alpha-3")})
	list := func(q map[string][]string) []string {
		t.Helper()
		r := e.getAs("alice", "/v1/operations", q)
		if r.status != http.StatusOK {
			t.Fatalf("%v: %d %s", q, r.status, r.body)
		}
		var out []string
		for _, it := range r.json["items"].([]any) {
			out = append(out, it.(map[string]any)["operationId"].(string))
		}
		return out
	}
	for _, c := range []struct {
		q    map[string][]string
		want []string
	}{
		{map[string][]string{"target": {"demo:alpha"}}, []string{ids[1], ids[0]}},
		{map[string][]string{"target": {"demo:beta-1"}}, []string{ids[2]}},
		{map[string][]string{"target": {"alpha"}}, nil},
		{map[string][]string{"createdAfter": {"2026-11-30T11:00:00Z"}}, []string{ids[2], ids[1]}},
		{map[string][]string{"createdBefore": {"2026-11-30T11:00:00Z"}}, []string{ids[0]}},
		{map[string][]string{"createdAfter": {"2026-11-30T12:00:00+01:00"}, "createdBefore": {"2026-11-30T11:00:00.001Z"}}, []string{ids[1]}},
		{map[string][]string{"createdAfter": {"2026-11-30T10:30:00Z"}, "target": {"demo:alpha"}}, []string{ids[1]}},
	} {
		if got := list(c.q); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.q, got, c.want)
		}
	}
	e.calls.Reset()
	for _, c := range []struct {
		q    map[string][]string
		name string
	}{
		{map[string][]string{"target": {""}}, "target"},
		{map[string][]string{"target": {strings.Repeat("t", 322)}}, "target"},
		{map[string][]string{"target": {"demo:\xff"}}, "target"},
		{map[string][]string{"target": {"demo:a\x00"}}, "target"},
		{map[string][]string{"createdAfter": {"yesterday"}}, "createdAfter"},
		{map[string][]string{"createdAfter": {"2026-11-30"}}, "createdAfter"},
		{map[string][]string{"createdBefore": {"2026-13-01T00:00:00Z"}}, "createdBefore"},
		{map[string][]string{"createdBefore": {"1969-12-31T23:59:59Z"}}, "createdBefore"},
		{map[string][]string{"createdAfter": {"2026-11-30T11:00:00Z"}, "createdBefore": {"2026-11-30T11:00:00Z"}}, "createdBefore"},
		{map[string][]string{"createdAfter": {"2026-11-30T11:00:00Z", "2026-11-30T12:00:00Z"}}, "createdAfter"},
	} {
		wantInvalidQuery(t, e.getAs("alice", "/v1/operations", c.q), c.name)
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("bad parameters cost %d DynamoDB calls", n)
	}
	// A cursor made for one target is refused for another.
	r := e.getAs("alice", "/v1/operations", map[string][]string{"target": {"demo:alpha"}, "limit": {"1"}})
	next, _ := r.json["nextCursor"].(string)
	if next == "" {
		t.Fatalf("no cursor: %s", r.body)
	}
	wantInvalidQuery(t, e.getAs("alice", "/v1/operations", map[string][]string{"target": {"demo:beta"}, "limit": {"1"}, "cursor": {next}}), "cursor")
	if got := list(map[string][]string{"target": {"demo:alpha"}, "limit": {"1"}, "cursor": {next}}); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("page 2: %v", got)
	}
}
