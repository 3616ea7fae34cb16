package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/longrun-dev/longrun/client/api"
)

// Admit a demo.task with the raw client and read the 202: the operation's id, its state and
// where to poll. The server stands in for the API, answering as the contract says. (Package
// client does this with an idempotency key it keeps across retries: client.Client.Create.)
func ExampleClientWithResponses_AdmitOperationWithResponse() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Type  string `json:"type"`
			Input struct {
				Target string `json:"target"`
			} `json:"input"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/operations" || r.Header.Get("Authorization") != "Bearer alice-dev-token" ||
			r.Header.Get("Idempotency-Key") == "" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "not what the example sends", http.StatusTeapot)
			return
		}
		const id = "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/operations/"+id)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("X-Request-Id", "req_01JDY3Q4W5E6R7T8Y9V0A1B2C4")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"operationId": id, "type": req.Type, "target": req.Input.Target, "state": "accepted",
			"statusUrl": "/v1/operations/" + id, "createdAt": "2026-11-30T10:00:00Z",
		})
	}))
	defer srv.Close()

	c, err := api.NewClientWithResponses(srv.URL, api.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer alice-dev-token")
		return nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	// The input is validated against demo.task's inputSchema (GetOperationType says what it is).
	body := api.AdmissionRequest{Type: "demo.task", Input: map[string]any{"target": "invoice-42"}}
	resp, err := c.AdmitOperationWithResponse(context.Background(),
		&api.AdmitOperationParams{IdempotencyKey: "8e03978e-40d5-43e8-bc93-6894a57f9324"}, body)
	if err != nil {
		fmt.Println(err)
		return
	}
	accepted := resp.JSON202
	if accepted == nil {
		fmt.Println("not admitted:", resp.Status())
		return
	}
	fmt.Println(resp.StatusCode(), accepted.State, accepted.OperationID, accepted.Type, accepted.Target)
	fmt.Println("created", accepted.CreatedAt.Format("2006-01-02 15:04:05 MST"))
	fmt.Printf("poll %s in %d s\n", resp.Headers202.Location, resp.Headers202.RetryAfter)
	// Output:
	// 202 accepted op_01JDY3Q4W5E6R7T8Y9V0A1B2C3 demo.task invoice-42
	// created 2026-11-30 10:00:00 UTC
	// poll /v1/operations/op_01JDY3Q4W5E6R7T8Y9V0A1B2C3 in 1 s
}
