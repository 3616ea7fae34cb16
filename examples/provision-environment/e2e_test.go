package provision_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/local"

	"example.com/provision-environment/provisioner"
)

// The whole loop on this machine: longrun's local stack serving longrun.types.yaml, the
// worker built from ./worker as the file's local section says, and the provisioner an
// in-process fake the worker reaches over HTTP.
func TestProvisionEnvironmentEndToEnd(t *testing.T) {
	fake := &provisioner.Fake{ReadyAfter: 2}
	prov := httptest.NewServer(provisioner.Handler(fake))
	defer prov.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log, err := os.CreateTemp(t.TempDir(), "stack-*.log")
	if err != nil {
		t.Fatal(err)
	}
	stack, err := local.Start(ctx, local.Options{TypesFile: "longrun.types.yaml", Output: log,
		WorkerEnv: map[string]string{"PROVISIONER_URL": prov.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Close()
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("stack log:\n%s", tail(string(b), 60))
		}
	}()

	// Discovery serves the definition.
	if r := call(t, stack, http.MethodGet, "/v1/operation-types/provision.environment", ""); r["deadlineSeconds"] != 7200.0 {
		t.Fatalf("%v", r)
	}
	// Input the schema refuses is a 400 naming the field.
	if r := call(t, stack, http.MethodPost, "/v1/operations", `{"type":"provision.environment","input":{"project":"Shop!","environment":"qa","template":"small"}}`); r["code"] != "invalid_input" {
		t.Fatalf("%v", r)
	}

	created := call(t, stack, http.MethodPost, "/v1/operations", `{"type":"provision.environment","input":{"project":"shop","environment":"qa-1","template":"small"}}`)
	id, _ := created["operationId"].(string)
	if created["target"] != "env:shop/qa-1" || id == "" {
		t.Fatalf("%v", created)
	}
	var op map[string]any
	sawWaiting := false
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		op = call(t, stack, http.MethodGet, "/v1/operations/"+id, "")
		if p, _ := op["progress"].(map[string]any); p != nil && p["message"] == "waiting for the provisioner" {
			sawWaiting = true
		}
		if op["terminal"] == true {
			break
		}
	}
	result, _ := op["result"].(map[string]any)
	if op["state"] != "succeeded" || result["url"] != "https://qa-1.shop.example.test" {
		t.Fatalf("%v", op)
	}
	// Request, at least one poll that waits, the poll that finds it ready, the last step.
	if p, _ := op["progress"].(map[string]any); p["percent"] != 100.0 || p["completedSteps"].(float64) < 4 {
		t.Fatalf("progress %v", op["progress"])
	}
	if !sawWaiting {
		t.Error("never saw the operation waiting for the provisioner")
	}
	if fake.Creates() != 1 || fmt.Sprint(fake.Keys()) != "["+id+"]" {
		t.Fatalf("the provisioner created %d environments with keys %v; want 1 keyed %s", fake.Creates(), fake.Keys(), id)
	}
}

var keys int

func call(t *testing.T, s *local.Stack, method, path, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, s.APIURL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+local.TokenAlice)
	if body != "" {
		keys++
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("example-%d-%d", time.Now().UnixNano(), keys))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
