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
// in-process fake the worker reaches over HTTP. The fake's behaviour is switched per
// operation by its project: "lossy" drops the answer to a create it committed, "slow" is
// never ready.
func TestProvisionEnvironmentEndToEnd(t *testing.T) {
	t.Parallel() // its stack takes free ports, beside the other test's
	fake := &provisioner.Fake{ReadyAfter: 2}
	slow := &provisioner.Fake{ReadyAfter: 1 << 30, Prefix: "slow-"}
	prov := httptest.NewServer(route(fake, slow))
	defer prov.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log, err := os.CreateTemp(t.TempDir(), "stack-*.log")
	if err != nil {
		t.Fatal(err)
	}
	stack, err := local.Start(ctx, local.Options{TypesFiles: []string{"longrun.types.yaml"}, Output: log,
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

	t.Run("a duplicate admission makes one provisioner call", func(t *testing.T) {
		body := `{"type":"provision.environment","input":{"project":"shop","environment":"qa-dup","template":"small"}}`
		before, _ := fake.Calls()
		first := callKey(t, stack, "dup-key", body)
		second := callKey(t, stack, "dup-key", body)
		if first["operationId"] != second["operationId"] {
			t.Fatalf("two operations for one key: %v %v", first, second)
		}
		if op := waitDone(t, stack, first["operationId"].(string)); op["state"] != "succeeded" {
			t.Fatalf("%v", op)
		}
		if after, _ := fake.Calls(); after != before+1 || fake.Creates() != 2 {
			t.Fatalf("create calls %d → %d, environments %d: want one call for the one operation", before, after, fake.Creates())
		}
	})

	t.Run("a cancel mid-way stops further steps", func(t *testing.T) {
		op := call(t, stack, http.MethodPost, "/v1/operations", `{"type":"provision.environment","input":{"project":"slow","environment":"qa-cancel","template":"small"}}`)
		id := op["operationId"].(string)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			if _, gets := slow.Calls(); gets >= 1 {
				break // it is polling
			}
			if time.Now().After(deadline) {
				t.Fatal("never polled")
			}
		}
		if r := call(t, stack, http.MethodPost, "/v1/operations/"+id+"/cancel", ""); r["state"] != "cancelling" && r["state"] != "canceled" {
			t.Fatalf("%v", r)
		}
		if done := waitDone(t, stack, id); done["state"] != "canceled" {
			t.Fatalf("%v", done)
		}
		_, gets := slow.Calls()
		time.Sleep(5 * time.Second) // two and a half stepDelays: a step after the cancel would poll
		if _, later := slow.Calls(); later != gets {
			t.Fatalf("polls went on after the cancel: %d → %d", gets, later)
		}
	})

	t.Run("a lost provisioner response ends outcome_unknown", func(t *testing.T) {
		op := call(t, stack, http.MethodPost, "/v1/operations", `{"type":"provision.environment","input":{"project":"lossy","environment":"qa-lost","template":"small"}}`)
		done := waitDone(t, stack, op["operationId"].(string))
		p, _ := done["problem"].(map[string]any)
		if done["state"] != "outcome_unknown" || p["code"] != "worker_error" {
			t.Fatalf("%v", done)
		}
		if fake.Creates() != 3 { // the create happened; only its answer was lost
			t.Fatalf("environments %d", fake.Creates())
		}
	})
}

// route sends project "slow" to slow and everything else to fake, and drops the answer to
// project "lossy"'s create after fake committed it.
func route(fake, slow *provisioner.Fake) http.Handler {
	fast, never := provisioner.Handler(fake), provisioner.Handler(slow)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		switch {
		case strings.Contains(string(body), `"project":"slow"`) || slow.Knows(r.URL.Path):
			never.ServeHTTP(w, r)
		case strings.Contains(string(body), `"project":"lossy"`):
			fast.ServeHTTP(httptest.NewRecorder(), r) // committed …
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close() // … and the answer is lost
			}
		default:
			fast.ServeHTTP(w, r)
		}
	})
}

func waitDone(t *testing.T, s *local.Stack, id string) map[string]any {
	t.Helper()
	var op map[string]any
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		op = call(t, s, http.MethodGet, "/v1/operations/"+id, "")
		if op["terminal"] == true || op["state"] == "outcome_unknown" {
			return op
		}
	}
	t.Fatalf("%s never ended: %v", id, op)
	return nil
}

func callKey(t *testing.T, s *local.Stack, key, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.APIURL+"/v1/operations", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+local.TokenAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%d %v %v", resp.StatusCode, out, err)
	}
	return out
}

var keys int

func call(t *testing.T, s *local.Stack, method, path, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, s.APIURL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+local.TokenAlice)
	if body != "" || method == http.MethodPost {
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
