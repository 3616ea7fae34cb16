package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/longrun-dev/longrun/client"
)

// Admit a demo.task and follow it to its end: the poller follows the admission's Location,
// reports each change once and returns the operation as it ended.
func ExampleClient_BeginCreate() {
	api := standIn()
	defer api.Close()

	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	poller, err := c.BeginCreate(ctx, client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "invoice-42", "steps": 3}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	op, err := poller.PollUntilDone(ctx, &client.PollOptions{
		MinDelay: time.Millisecond, // the stand-in sends no Retry-After and is quick; leave it unset against the API
		OnChange: func(op client.Operation) { fmt.Printf("now %s%s\n", op.State, progress(op)) },
	})
	if err == nil {
		err = op.Err() // nil: it succeeded; an *OperationError had it failed, been canceled or lost its outcome
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	var result struct {
		Pages int `json:"pages"`
	}
	if err := op.DecodeResult(&result); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(op.State, "after", op.Version, "facts:", result.Pages, "pages")
	// Output:
	// now accepted
	// now running 1/3
	// now running 2/3
	// now succeeded 3/3
	// succeeded after 5 facts: 3 pages
}

// The same key and request admit one operation, however often they are sent (a replay says
// so); the same key with another request is a typed conflict naming the key's operation.
func ExampleClient_Create() {
	api := standIn()
	defer api.Close()

	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	req := client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "invoice-42"}, Key: "invoice-42-render"}
	first, err := c.Create(ctx, req, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	again, err := c.Create(ctx, req, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(first.OperationID, first.Replayed)
	fmt.Println(again.OperationID, again.Replayed)

	req.Input = map[string]any{"target": "invoice-43"}
	_, err = c.Create(ctx, req, nil)
	var problem *client.ProblemError
	if errors.As(err, &problem) && problem.Code == client.ErrorCodeIdempotencyKeyReused {
		fmt.Println(problem.Status, problem.Code, "first used for", problem.OperationID)
	}
	// Output:
	// op_01JDY3Q4W5E6R7T8Y9V0A1B2C3 false
	// op_01JDY3Q4W5E6R7T8Y9V0A1B2C3 true
	// 409 idempotency_key_reused first used for op_01JDY3Q4W5E6R7T8Y9V0A1B2C3
}

// List the caller's operations, newest first, reading pages as the loop goes.
func ExampleClient_List() {
	api := standIn()
	defer api.Close()

	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, target := range []string{"invoice-1", "invoice-2", "invoice-3"} {
		if _, err := c.Create(ctx, client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": target}}, nil); err != nil {
			fmt.Println(err)
			return
		}
	}
	for op, err := range c.List(ctx, &client.ListOptions{Limit: 2}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(op.OperationID, op.Target, op.State)
	}
	// Output:
	// op_01JDY3Q4W5E6R7T8Y9V0A1B2C5 demo:invoice-3 accepted
	// op_01JDY3Q4W5E6R7T8Y9V0A1B2C4 demo:invoice-2 accepted
	// op_01JDY3Q4W5E6R7T8Y9V0A1B2C3 demo:invoice-1 accepted
}

// Keep a poller's resume token with the job that waits, and go on polling from it after a
// restart: the new poller reads the same status URL and follows the operation to its end.
// The token carries no credentials; the new client authenticates with its own.
func ExamplePoller_ResumeToken() {
	api := standIn()
	defer api.Close()

	ctx := context.Background()
	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	poller, err := c.BeginCreate(ctx, client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "invoice-42"}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := poller.Poll(ctx); err != nil {
		fmt.Println(err)
		return
	}
	token, err := poller.ResumeToken() // store it: a file, a database row, a queue message
	if err != nil {
		fmt.Println(err)
		return
	}

	// Later, perhaps in another process: a client of the same API, the token, and on.
	later, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	resumed, err := later.NewPollerFromResumeToken(token)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("resuming", resumed.Operation().OperationID)
	op, err := resumed.PollUntilDone(ctx, &client.PollOptions{MinDelay: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(op.State, "after", op.Version, "facts")
	// Output:
	// resuming op_01JDY3Q4W5E6R7T8Y9V0A1B2C3
	// succeeded after 5 facts
}

// Reach a route or a status the Client does not wrap through its raw half, package
// client/api: the same HTTP client, authentication and User-Agent, every status decoded into
// its own field, and no retries.
func ExampleClient_Raw() {
	api := standIn()
	defer api.Close()

	ctx := context.Background()
	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	op, err := c.Create(ctx, client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "invoice-42"}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := c.Raw().GetOperationWithResponse(ctx, op.OperationID)
	if err != nil {
		fmt.Println(err)
		return
	}
	if resp.JSON200 == nil {
		fmt.Println("not read:", resp.Status())
		return
	}
	fmt.Println(resp.StatusCode(), resp.JSON200.State, "version", resp.JSON200.Version, "ETag", resp.Headers200.ETag)

	resp, err = c.Raw().GetOperationWithResponse(ctx, "op_01JDY3Q4W5E6R7T8Y9V0A1B2C9")
	if err != nil {
		fmt.Println(err)
		return
	}
	if p := resp.ApplicationProblemJSON404; p != nil {
		fmt.Println(resp.StatusCode(), p.Code)
	}
	// Output:
	// 200 accepted version 1 ETag "1"
	// 404 not_found
}

// Approve an operation whose work waits for an approval (a demo.task admitted with
// "await": "approval"): Get shows what it waits for, and Signal sends it once per key (a
// retry with the key is a replay, whatever happened since). A signal its type does not
// declare is a typed refusal.
func ExampleClient_Signal() {
	api := approvals()
	defer api.Close()

	c, err := client.New(api.URL, &client.ClientOptions{Auth: client.BearerToken("alice-dev-token")})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	op, err := c.Get(ctx, "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3")
	if err != nil {
		fmt.Println(err)
		return
	}
	if op.Awaiting == nil {
		fmt.Println(op.OperationID, "waits for no signal")
		return
	}
	fmt.Println(op.State, "awaiting", op.Awaiting.Signal, "until", op.Awaiting.Until.Format(time.RFC3339))

	// Keep the key with the decision: sending it again reaches the same signal, never a second one.
	opts := &client.SignalOptions{Key: "approval-" + op.OperationID, IfVersion: &op.Version}
	approval := map[string]any{"approved": true, "by": "alice@example.com"}
	for range 2 {
		signaled, err := c.Signal(ctx, op.OperationID, op.Awaiting.Signal, approval, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("signaled at version", signaled.Version, "replayed:", signaled.Replayed)
	}

	_, err = c.Signal(ctx, op.OperationID, "aproval", approval, nil)
	var problem *client.ProblemError
	if errors.As(err, &problem) {
		fmt.Println(problem.Status, problem.Code)
	}
	// Output:
	// running awaiting approval until 2026-11-30T10:10:01Z
	// signaled at version 5 replayed: false
	// signaled at version 5 replayed: true
	// 400 unknown_signal
}

// approvals is a stand-in for the API with one operation, whose work waits for the signal
// approval until it comes: the signal is recorded once per key, and any other signal is 400
// unknown_signal.
func approvals() *httptest.Server {
	const id = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"
	var mu sync.Mutex
	version, keys := 4, map[string]string{}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		rep := map[string]any{"operationId": id, "type": "demo.task", "target": "demo:invoice-42", "state": "running",
			"terminal": false, "version": version, "statusUrl": "/v1/operations/" + id, "createdAt": "2026-11-30T10:00:00.000Z",
			"updatedAt": "2026-11-30T10:00:01.000Z", "observedAt": "2026-11-30T10:00:01.000Z", "cancelRequested": false,
			"progress": map[string]any{"completedSteps": 1},
			"awaiting": map[string]any{"signal": "approval", "since": "2026-11-30T10:00:01.000Z", "until": "2026-11-30T10:10:01.000Z"}}
		reply := func(status int, contentType string, v any) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("X-Request-Id", "req_example")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/operations/"+id:
			w.Header().Set("Retry-After", "30")
			reply(http.StatusOK, "application/json", rep)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/operations/"+id+"/signals/approval":
			body, _ := io.ReadAll(r.Body)
			key := r.Header.Get("Idempotency-Key")
			switch first, ok := keys[key]; {
			case ok && first != string(body):
				reply(http.StatusConflict, "application/problem+json", map[string]any{"status": 409, "code": "idempotency_key_reused",
					"title": "Idempotency-Key reused", "detail": "This Idempotency-Key was already used with a different signal on this operation.",
					"type": "https://longrun.dev/problems/idempotency_key_reused", "requestId": "req_example", "operationId": id})
				return
			case ok:
				w.Header().Set("Idempotent-Replayed", "true")
			default:
				keys[key] = string(body)
				version++
			}
			rep["version"] = version
			w.Header().Set("Location", "/v1/operations/"+id)
			w.Header().Set("Retry-After", "1")
			reply(http.StatusAccepted, "application/json", rep)
		default:
			reply(http.StatusBadRequest, "application/problem+json", map[string]any{"status": 400, "code": "unknown_signal", "title": "Unknown signal",
				"detail": `Operations of type demo.task take no signal "aproval".`, "type": "https://longrun.dev/problems/unknown_signal",
				"requestId": "req_example", "operationId": id})
		}
	}))
}

func progress(op client.Operation) string {
	if op.Progress == nil || op.Progress.TotalSteps == nil {
		return ""
	}
	return fmt.Sprintf(" %d/%d", op.Progress.CompletedSteps, *op.Progress.TotalSteps)
}

// standIn is a stand-in for the API, enough for the examples: admissions with the
// contract's idempotency, and operations that take one step per read of their status
// (answering every other read with the same representation again) until they succeed.
func standIn() *httptest.Server {
	type operation struct {
		body     string
		accepted map[string]any
		reads    int
	}
	var mu sync.Mutex
	byKey := map[string]*operation{}
	byID := map[string]*operation{}
	var order []string
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reply := func(status int, contentType string, v any) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("X-Request-Id", "req_example")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
		if r.Header.Get("Authorization") != "Bearer alice-dev-token" {
			reply(http.StatusUnauthorized, "application/problem+json", map[string]any{"status": 401, "code": "unauthenticated", "title": "Unauthenticated", "detail": "", "type": "https://longrun.dev/problems/unauthenticated", "requestId": "req_example"})
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/operations":
			body, _ := io.ReadAll(r.Body)
			var req struct {
				Type  string
				Input struct{ Target string }
			}
			_ = json.Unmarshal(body, &req)
			key := r.Header.Get("Idempotency-Key")
			if op, ok := byKey[key]; ok {
				if op.body != string(body) {
					reply(http.StatusConflict, "application/problem+json", map[string]any{"status": 409, "code": "idempotency_key_reused", "title": "Idempotency-Key reused",
						"detail": "This Idempotency-Key was already used with a different request.", "type": "https://longrun.dev/problems/idempotency_key_reused",
						"requestId": "req_example", "operationId": op.accepted["operationId"]})
					return
				}
				w.Header().Set("Idempotent-Replayed", "true")
				w.Header().Set("Location", op.accepted["statusUrl"].(string))
				reply(http.StatusAccepted, "application/json", op.accepted)
				return
			}
			id := fmt.Sprintf("op_01JDY3Q4W5E6R7T8Y9V0A1B2C%d", 3+len(order))
			op := &operation{body: string(body), accepted: map[string]any{"operationId": id, "type": req.Type, "target": "demo:" + req.Input.Target,
				"state": "accepted", "statusUrl": "/v1/operations/" + id, "createdAt": "2026-11-30T10:00:00Z"}}
			byKey[key], byID[id] = op, op
			order = append(order, id)
			w.Header().Set("Location", "/v1/operations/"+id)
			reply(http.StatusAccepted, "application/json", op.accepted)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/operations":
			start := 0
			if cur := r.URL.Query().Get("cursor"); cur != "" {
				_, _ = fmt.Sscan(cur, &start)
			}
			limit := 20
			if l := r.URL.Query().Get("limit"); l != "" {
				_, _ = fmt.Sscan(l, &limit)
			}
			items := []map[string]any{}
			for i := start; i < len(order) && i < start+limit; i++ {
				items = append(items, representation(byID[order[len(order)-1-i]].accepted, 0))
			}
			var next any
			if start+limit < len(order) {
				next = fmt.Sprint(start + limit)
			}
			reply(http.StatusOK, "application/json", map[string]any{"items": items, "nextCursor": next})
		case r.Method == http.MethodGet && byID[strings.TrimPrefix(r.URL.Path, "/v1/operations/")] != nil:
			op := byID[strings.TrimPrefix(r.URL.Path, "/v1/operations/")]
			op.reads++
			rep := representation(op.accepted, op.reads/2) // each step is seen twice
			w.Header().Set("ETag", fmt.Sprintf(`"%v"`, rep["version"]))
			reply(http.StatusOK, "application/json", rep)
		default:
			reply(http.StatusNotFound, "application/problem+json", map[string]any{"status": 404, "code": "not_found", "title": "Not found", "detail": "", "type": "https://longrun.dev/problems/not_found", "requestId": "req_example"})
		}
	}))
}

// representation is an admitted operation after steps of its three steps (accepted at 0,
// running, succeeded at 3).
func representation(accepted map[string]any, steps int) map[string]any {
	rep := maps.Clone(accepted)
	steps = min(steps, 3)
	rep["version"], rep["terminal"], rep["cancelRequested"] = 1, false, false
	rep["updatedAt"], rep["observedAt"] = "2026-11-30T10:00:00Z", nil
	if steps > 0 {
		rep["state"], rep["version"] = "running", 2+steps-1
		rep["observedAt"] = rep["updatedAt"]
		rep["progress"] = map[string]any{"completedSteps": steps, "totalSteps": 3}
	}
	if steps == 3 {
		rep["state"], rep["terminal"], rep["version"] = "succeeded", true, 5
		rep["result"] = map[string]any{"pages": 3}
	}
	return rep
}
