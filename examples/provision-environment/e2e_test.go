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
	"sync/atomic"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/local"

	"example.com/provision-environment/provisioner"
)

// The whole loop on this machine: longrun's local stack serving longrun.types.yaml, the
// worker built from ./worker as the file's local section says, and the provisioner an
// in-process fake the worker reaches over HTTP. The fake's behaviour is switched per
// operation by its project: "lossy" drops the answer to a create it committed, "slow" is
// never ready, and "bank" (whose environments the tests ask for as production ones) is
// made in a fake's own time and said done through its callback URL.
func TestProvisionEnvironmentEndToEnd(t *testing.T) {
	t.Parallel() // its stack takes free ports, beside the other test's
	fake := &provisioner.Fake{ReadyAfter: 2}
	slow := &provisioner.Fake{ReadyAfter: 1 << 30, Prefix: "slow-"}
	prod := &provisioner.Fake{ReadyAfter: 1, CallbackAfter: 300 * time.Millisecond, Prefix: "prod-", Broken: []string{"broken"}}
	prov := httptest.NewServer(route(fake, slow, prod))
	defer prov.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log, err := os.CreateTemp(t.TempDir(), "stack-*.log")
	if err != nil {
		t.Fatal(err)
	}
	// The reconciler ends a wait whose timeout passed: every second, not every 10 s, so that
	// the approval's timeout ends the test's wait soon after it passes.
	stack, err := local.Start(ctx, local.Options{TypesFiles: []string{"longrun.types.yaml"}, Output: log,
		WorkerEnv: map[string]string{"PROVISIONER_URL": prov.URL}, ReconcileEvery: time.Second})
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

	// Discovery serves the definition, with its signals: who may send them, and which one
	// a third party may send through a callback URL.
	r := call(t, stack, http.MethodGet, "/v1/operation-types/provision.environment", "")
	var signals []string
	for _, sig := range asSlice(r["signals"]) {
		d, _ := sig.(map[string]any)
		signals = append(signals, fmt.Sprintf("%v %v notCreator=%v callback=%v", d["name"], d["senders"], d["notCreator"], d["callback"]))
	}
	if r["deadlineSeconds"] != 7200.0 || strings.Join(signals, "; ") != "approval [operator] notCreator=true callback=false; provisioned [operator] notCreator=false callback=true" {
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
		if op["awaiting"] != nil {
			t.Fatalf("an environment that is not production waits for a signal: %v", op)
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

	t.Run("production", func(t *testing.T) { production(t, stack, prod) })
}

// production: a production environment waits, before anything is provisioned, for an
// operator's approval, never its creator's; then for the provisioner's callback. Each case
// has its own environment (its own target), and they run side by side.
func production(t *testing.T, s *local.Stack, prod *provisioner.Fake) {
	admit := func(t *testing.T, token, environment, template, extra string) string {
		t.Helper()
		status, op := do(t, s, token, http.MethodPost, "/v1/operations",
			`{"type":"provision.environment","input":{"project":"bank","environment":"`+environment+`","template":"`+template+`","production":true`+extra+`}}`)
		if status != http.StatusAccepted {
			t.Fatalf("%d %v", status, op)
		}
		return op["operationId"].(string)
	}
	nothingProvisioned := func(t *testing.T, id string) {
		t.Helper()
		if env, ok := prod.ByKey(id); ok {
			t.Fatalf("provisioned %+v without an approval", env)
		}
	}

	t.Run("approved, it is provisioned and the provisioner calls back", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		id := admit(t, local.TokenAlice, "prod-approve", "small", "")
		awaiting(t, s, local.TokenAlice, id, "approval")
		nothingProvisioned(t, id)
		if status, r := signal(t, s, local.TokenOperator, id, "approval", `{"approved":true,"by":"Olga","reason":"change ticket 42"}`); status != http.StatusAccepted {
			t.Fatalf("approval: %d %v", status, r)
		}
		op := waitCallback(t, s, prod, id)
		result, _ := op["result"].(map[string]any)
		if by, _ := result["approvedBy"].(string); op["state"] != "succeeded" || result["url"] != "https://prod-approve.bank.example.test" || by == "" {
			t.Fatalf("%v", op)
		}
		env, _ := prod.ByKey(id)
		if polls := prod.Polls(env.ID); polls != 0 {
			t.Fatalf("the provisioner was polled %d times: the callback ends the wait", polls)
		}
		t.Logf("approved by %v, called back, succeeded in %v", result["approvedBy"], time.Since(start).Round(time.Millisecond))
	})

	t.Run("a failure the provisioner calls back with fails it", func(t *testing.T) {
		t.Parallel()
		id := admit(t, local.TokenAlice, "prod-broken", "broken", "")
		awaiting(t, s, local.TokenAlice, id, "approval")
		if status, r := signal(t, s, local.TokenOperator, id, "approval", `{"approved":true}`); status != http.StatusAccepted {
			t.Fatalf("approval: %d %v", status, r)
		}
		op := waitCallback(t, s, prod, id)
		if p, _ := op["problem"].(map[string]any); op["state"] != "failed" || p["code"] != "provisioning_failed" {
			t.Fatalf("%v", op)
		}
	})

	t.Run("rejected, it fails not_approved", func(t *testing.T) {
		t.Parallel()
		id := admit(t, local.TokenAlice, "prod-reject", "small", "")
		awaiting(t, s, local.TokenAlice, id, "approval")
		if status, r := signal(t, s, local.TokenOperator, id, "approval", `{"approved":false,"by":"Olga","reason":"change freeze"}`); status != http.StatusAccepted {
			t.Fatalf("rejection: %d %v", status, r)
		}
		op := waitDone(t, s, id)
		if p, _ := op["problem"].(map[string]any); op["state"] != "failed" || p["code"] != "not_approved" || !strings.Contains(fmt.Sprint(p["detail"]), "change freeze") {
			t.Fatalf("%v", op)
		}
		nothingProvisioned(t, id)
	})

	t.Run("no approval in time, it fails approval_timeout", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		id := admit(t, local.TokenAlice, "prod-timeout", "small", `,"approvalTimeoutSeconds":1`)
		op := waitDone(t, s, id)
		if p, _ := op["problem"].(map[string]any); op["state"] != "failed" || p["code"] != "approval_timeout" {
			t.Fatalf("%v", op)
		}
		nothingProvisioned(t, id)
		t.Logf("timed out after %v", time.Since(start).Round(time.Millisecond))
	})

	t.Run("a cancel while it waits ends it canceled at once", func(t *testing.T) {
		t.Parallel()
		id := admit(t, local.TokenAlice, "prod-cancel", "small", "")
		awaiting(t, s, local.TokenAlice, id, "approval")
		// No step runs while it waits: the cancel's own answer says canceled.
		if status, r := do(t, s, local.TokenAlice, http.MethodPost, "/v1/operations/"+id+"/cancel", ""); status != http.StatusAccepted || r["state"] != "canceled" {
			t.Fatalf("%d %v", status, r)
		}
		if status, r := signal(t, s, local.TokenOperator, id, "approval", `{"approved":true}`); status != http.StatusConflict || r["code"] != "already_terminal" {
			t.Fatalf("an approval after the cancel: %d %v", status, r)
		}
		nothingProvisioned(t, id)
	})

	t.Run("its creator may not approve it", func(t *testing.T) {
		t.Parallel()
		// Alice asked for it, and only operators approve.
		mine := admit(t, local.TokenAlice, "prod-own", "small", "")
		// An operator asked for this one: another operator must approve it (four eyes).
		ops := admit(t, local.TokenOperator, "prod-own", "small", "")
		for id, token := range map[string]string{mine: local.TokenAlice, ops: local.TokenOperator} {
			before := awaiting(t, s, token, id, "approval")
			if status, r := signal(t, s, token, id, "approval", `{"approved":true}`); status != http.StatusForbidden || r["code"] != "forbidden" {
				t.Fatalf("the creator's approval: %d %v", status, r)
			}
			if after := awaiting(t, s, token, id, "approval"); after["version"] != before["version"] {
				t.Fatalf("a refused approval changed the operation: %v → %v", before, after)
			}
			nothingProvisioned(t, id)
			if status, r := do(t, s, token, http.MethodPost, "/v1/operations/"+id+"/cancel", ""); status != http.StatusAccepted {
				t.Fatalf("%d %v", status, r)
			}
		}
	})
}

// awaiting polls operation id, as token's caller, until it waits for signal, and returns it.
func awaiting(t *testing.T, s *local.Stack, token, id, signal string) map[string]any {
	t.Helper()
	var op map[string]any
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, op = do(t, s, token, http.MethodGet, "/v1/operations/"+id, "")
		if a, _ := op["awaiting"].(map[string]any); a["signal"] == signal {
			return op
		}
		if op["terminal"] == true {
			break
		}
	}
	t.Fatalf("%s never waited for %s: %v", id, signal, op)
	return nil
}

// waitCallback waits for operation id, which waits for the provisioner's callback, to end,
// and checks that the provisioner was handed a callback URL and that longrun took its POST,
// made without credentials. It fails at once if longrun refused the POST: otherwise the
// operation would wait CallbackTimeout (30 min) for it.
func waitCallback(t *testing.T, s *local.Stack, prod *provisioner.Fake, id string) map[string]any {
	t.Helper()
	var op map[string]any
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, op = do(t, s, local.TokenAlice, http.MethodGet, "/v1/operations/"+id, "")
		env, ok := prod.ByKey(id)
		var ds []provisioner.Delivery
		for _, d := range prod.Deliveries() {
			if ok && d.EnvironmentID == env.ID {
				ds = append(ds, d)
			}
		}
		switch {
		case op["terminal"] == true:
			if !ok || prod.CallbackURL(env.ID) == "" {
				t.Fatalf("the provisioner was handed no callback URL (the step had none for provisioned?); environment %+v, operation %v", env, op)
			}
			if len(ds) == 0 || !ok2xx(ds[len(ds)-1].Status) {
				t.Fatalf("the operation ended without the callback: deliveries %+v, operation %v", ds, op)
			}
			if !strings.Contains(prod.CallbackURL(env.ID), "/v1/callbacks/") {
				t.Errorf("callback URL %q", prod.CallbackURL(env.ID))
			}
			return op
		case len(ds) > 0:
			if last := ds[len(ds)-1]; !ok2xx(last.Status) && (last.Status >= 400 && last.Status < 500 && last.Status != 429 || len(ds) == 5) {
				t.Fatalf("longrun refused the provisioner's callback (POST %s): %d %v; is POST /v1/callbacks/{token} there?", last.URL, last.Status, last.Err)
			}
		}
	}
	t.Fatalf("%s never ended: %v", id, op)
	return nil
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func ok2xx(status int) bool { return status >= 200 && status < 300 }

// signal sends the signal name to operation id as token's caller: its status and body.
func signal(t *testing.T, s *local.Stack, token, id, name, data string) (int, map[string]any) {
	t.Helper()
	return do(t, s, token, http.MethodPost, "/v1/operations/"+id+"/signals/"+name, data)
}

// route sends project "slow" to slow, project "bank" to prod and everything else to fake,
// and drops the answer to project "lossy"'s create after fake committed it.
func route(fake, slow, prod *provisioner.Fake) http.Handler {
	fast, never, production := provisioner.Handler(fake), provisioner.Handler(slow), provisioner.Handler(prod)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		switch {
		case strings.Contains(string(body), `"project":"slow"`) || slow.Knows(r.URL.Path):
			never.ServeHTTP(w, r)
		case strings.Contains(string(body), `"project":"bank"`) || prod.Knows(r.URL.Path):
			production.ServeHTTP(w, r)
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

// keys makes Idempotency-Keys unique, the tests running side by side.
var keys atomic.Int64

func call(t *testing.T, s *local.Stack, method, path, body string) map[string]any {
	t.Helper()
	_, out := do(t, s, local.TokenAlice, method, path, body)
	return out
}

// do calls the API as token's caller, a POST with a fresh Idempotency-Key: its status and
// body.
func do(t *testing.T, s *local.Stack, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.APIURL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("example-%d-%d", time.Now().UnixNano(), keys.Add(1)))
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
	return resp.StatusCode, out
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
