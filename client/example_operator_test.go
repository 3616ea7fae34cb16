package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/longrun-dev/longrun/client"
)

// An operator's round: the attention queue lists every tenant's operations whose outcome is
// unknown; the history of one says where its work stopped; Resolve with ResolveRetry runs
// that step again, only at the version the decision was made on (IfVersion); the stats say
// what is in flight.
func ExampleClient_Attention() {
	api := operatorStandIn()
	defer api.Close()

	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("ops-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for item, err := range c.AttentionAll(ctx, nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		op := item.Operation
		fmt.Println(item.Tenant, op.OperationID, op.State, op.Problem.Code)

		h, err := c.History(ctx, op.OperationID)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range h.Entries {
			by := string(e.By)
			if e.Actor != "" { // operators see who
				by += " " + e.Actor
			}
			fmt.Printf("  %d %s -> %s by %s\n", e.Version, e.Kind, e.State, by)
		}
		retried, err := c.Resolve(ctx, op.OperationID, client.ResolveRequest{Outcome: client.ResolveRetry,
			Reason: "The provider has no record of the request.", IfVersion: &h.Version})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("  now", retried.State, "step", retried.Retried.Step, "attempt", retried.Retried.Attempt)

		// The same decision again is refused: the operation has moved on.
		_, err = c.Resolve(ctx, op.OperationID, client.ResolveRequest{Outcome: client.ResolveRetry, Reason: "again", IfVersion: &h.Version})
		var problem *client.ProblemError
		if errors.As(err, &problem) {
			fmt.Println("  again:", problem.Status, problem.Code)
		}
	}
	st, err := c.Stats(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("in flight:", st.InFlight.Total(), "running:", st.InFlight.Running, "unknown:", st.OutcomeUnknown,
		"oldest:", st.OldestInFlight.Tenant, st.OldestInFlight.Operation.OperationID)
	// Output:
	// globex op_01JDY3Q4W5E6R7T8Y9V0A1B2C3 outcome_unknown result_lost
	//   1 accepted -> accepted by admission bob
	//   2 dispatched -> dispatched by dispatcher
	//   3 started -> running by executor
	//   4 outcome_unknown -> outcome_unknown by reconciler
	//   now running step 1 attempt 2
	//   again: 412 version_mismatch
	// in flight: 1 running: 1 unknown: 0 oldest: globex op_01JDY3Q4W5E6R7T8Y9V0A1B2C3
}

// List the caller's operations on one target namespace created in a window: the window is
// a range of ids (ULIDs carry their creation time), so the API reads only that range.
func ExampleListOptions() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		fmt.Println("target", q.Get("target"), "from", q.Get("createdAfter"), "to", q.Get("createdBefore"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items":[],"nextCursor":null}`))
	}))
	defer api.Close()
	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, err := range c.List(context.Background(), &client.ListOptions{Target: "demo:", CreatedAfter: day, CreatedBefore: day.AddDate(0, 0, 1)}) {
		if err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// target demo: from 2026-11-30T00:00:00Z to 2026-12-01T00:00:00Z
}

// operatorStandIn is a stand-in for the API with one operation of tenant globex whose
// outcome is unknown, until an operator retries it at its version.
func operatorStandIn() *httptest.Server {
	const id = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"
	var mu sync.Mutex
	version := 4
	rep := func() map[string]any {
		m := map[string]any{"operationId": id, "type": "demo.task", "target": "demo:invoice-42", "state": "outcome_unknown",
			"terminal": false, "version": version, "statusUrl": "/v1/operations/" + id, "createdAt": "2026-11-30T10:00:00.000Z",
			"updatedAt": "2026-11-30T10:05:00.000Z", "observedAt": "2026-11-30T10:00:02.000Z", "cancelRequested": false,
			"problem": map[string]any{"type": "https://longrun.dev/problems/result_lost", "title": "Result lost", "code": "result_lost",
				"detail": "The step's end was lost."}}
		if version > 4 {
			delete(m, "problem")
			m["state"] = "running"
			m["retried"] = map[string]any{"step": 1, "attempt": 2, "at": "2026-11-30T10:20:00.000Z", "reason": "The provider has no record of the request."}
		}
		return m
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reply := func(status int, contentType string, v any) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("X-Request-Id", "req_example")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
		entry := func(v int, kind, state, by, actor string) map[string]any {
			e := map[string]any{"version": v, "at": "2026-11-30T10:00:00.000Z", "kind": kind, "state": state, "by": by}
			if actor != "" {
				e["actor"] = actor
			}
			return e
		}
		switch {
		case r.URL.Path == "/v1/attention":
			items := []any{}
			if version == 4 {
				items = append(items, map[string]any{"tenant": "globex", "operation": rep()})
			}
			reply(http.StatusOK, "application/json", map[string]any{"items": items, "nextCursor": nil})
		case r.URL.Path == "/v1/operations/"+id+"/history":
			w.Header().Set("ETag", fmt.Sprintf(`"%d"`, version))
			reply(http.StatusOK, "application/json", map[string]any{"operationId": id, "version": version, "entries": []any{
				entry(1, "accepted", "accepted", "admission", "bob"), entry(2, "dispatched", "dispatched", "dispatcher", ""),
				entry(3, "started", "running", "executor", ""), entry(4, "outcome_unknown", "outcome_unknown", "reconciler", "")}})
		case r.URL.Path == "/v1/operations/"+id+"/resolve":
			if r.Header.Get("If-Match") != fmt.Sprintf(`"%d"`, version) {
				reply(http.StatusPreconditionFailed, "application/problem+json", map[string]any{"status": 412, "code": "version_mismatch",
					"title": "Version mismatch", "detail": "The operation is at another version.", "type": "https://longrun.dev/problems/version_mismatch",
					"requestId": "req_example", "operationId": id})
				return
			}
			version++
			w.Header().Set("ETag", fmt.Sprintf(`"%d"`, version))
			reply(http.StatusOK, "application/json", rep())
		case r.URL.Path == "/v1/stats":
			reply(http.StatusOK, "application/json", map[string]any{"asOf": "2026-11-30T10:21:00.000Z",
				"inFlight":       map[string]any{"accepted": 0, "dispatched": 0, "running": 1, "cancelling": 0},
				"outcomeUnknown": 0, "oldestInFlight": map[string]any{"tenant": "globex", "operation": rep()}, "partial": false})
		default:
			reply(http.StatusNotFound, "application/problem+json", map[string]any{"status": 404, "code": "not_found", "title": "Not found",
				"detail": "No such route.", "type": "https://longrun.dev/problems/not_found", "requestId": "req_example"})
		}
	}))
}
