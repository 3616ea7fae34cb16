package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCreatePollSucceeded(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"e2e-success","steps":3,"sleepMs":0}}`)
	r := c.poll(id, 30*time.Second)
	result, _ := r.json["result"].(map[string]any)
	if r.json["state"] != "succeeded" || result["steps"] != 3.0 || result["target"] != "e2e-success" || r.json["observedAt"] == nil {
		t.Fatalf("%s", r.body)
	}
	if r.header.Get("Retry-After") != "" || r.header.Get("ETag") != fmt.Sprintf(`"%v"`, r.json["version"]) {
		t.Fatalf("headers %v", r.header)
	}
	if n := executions(t, id); n != 1 {
		t.Fatalf("%d executions", n)
	}
}

func TestFailIsAFailedStateWithATypedProblem(t *testing.T) {
	t.Parallel()
	c := alice(t)
	r := c.poll(c.admit(`{"type":"demo.task","input":{"target":"e2e-fail","steps":2,"outcome":"fail"}}`), 30*time.Second)
	p, _ := r.json["problem"].(map[string]any)
	if r.json["state"] != "failed" || p["code"] != "demo_failed" || p["type"] != "https://longrun.dev/problems/demo_failed" || r.json["result"] != nil {
		t.Fatalf("%s", r.body)
	}
}

func TestUnknownOutcomeIsSaidOutLoud(t *testing.T) {
	t.Parallel()
	c := alice(t)
	r := c.poll(c.admit(`{"type":"demo.task","input":{"target":"e2e-unknown","outcome":"unknown"}}`), 30*time.Second)
	p, _ := r.json["problem"].(map[string]any)
	if r.json["state"] != "outcome_unknown" || r.json["terminal"] != false || p["code"] != "worker_error" || r.header.Get("Retry-After") == "" {
		t.Fatalf("%s %v", r.body, r.header)
	}
}

func TestExportOrdersProducesItsDigest(t *testing.T) {
	t.Parallel()
	c := alice(t)
	r := c.poll(c.admit(`{"type":"export.orders","input":{"from":"2026-09-01","to":"2026-09-23"}}`), 30*time.Second)
	// The file the worker generates for this range, as pinned before the worker moved to
	// the public worker package (functions/worker-export-orders pins the same).
	result, _ := r.json["result"].(map[string]any)
	if r.json["state"] != "succeeded" || result["rowCount"] != 92.0 || result["bytes"] != 2879.0 ||
		result["sha256"] != "1fac0156748ab9d31492d9e4eb657ec2510d8afff6771af5d7a14277b60a04a1" {
		t.Fatalf("%s", r.body)
	}
}

func TestFiftyInParallel(t *testing.T) {
	t.Parallel()
	c := alice(t)
	const n = 50
	ids := make([]string, n)
	results := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"e2e-par-%d-%d","steps":2}}`, time.Now().UnixNano(), i))
			results[i] = c.poll(ids[i], 90*time.Second)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.json["state"] != "succeeded" {
			t.Errorf("%s: %s", ids[i], r.body)
		}
		if got := executions(t, ids[i]); got != 1 {
			t.Errorf("%s: %d executions", ids[i], got)
		}
	}
}

func TestReplayThroughTheStack(t *testing.T) {
	t.Parallel()
	c := alice(t)
	key := newKey()
	body := `{"type":"demo.task","input":{"target":"e2e-replay"}}`
	first := c.do(http.MethodPost, "/v1/operations", key, body)
	second := c.do(http.MethodPost, "/v1/operations", key, body)
	if first.status != 202 || string(second.body) != string(first.body) || second.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%s / %s", first.body, second.body)
	}
	other := client{t, "bob-dev-token"}.do(http.MethodGet, "/v1/operations/"+first.json["operationId"].(string), "", "")
	if other.status != 404 {
		t.Fatalf("bob sees alice's operation: %d", other.status)
	}
	anon := client{t, "nope"}.do(http.MethodGet, "/v1/operations/"+first.json["operationId"].(string), "", "")
	if anon.status != 401 || anon.json["code"] != "unauthenticated" || anon.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("unknown token: %d %s", anon.status, anon.body)
	}
}

// Issue #11's contract details through HTTP: a reused key's 409 names the key's operation,
// a body that is not UTF-8 JSON is 415 and admits nothing, and a method a known path does
// not have is 405 with Allow.
func TestContractDetailsThroughTheStack(t *testing.T) {
	t.Parallel()
	c := alice(t)
	key := newKey()
	first := c.do(http.MethodPost, "/v1/operations", key, `{"type":"demo.task","input":{"target":"e2e-details"}}`)
	if first.status != http.StatusAccepted {
		t.Fatalf("admit: %d %s", first.status, first.body)
	}
	reused := c.do(http.MethodPost, "/v1/operations", key, `{"type":"demo.task","input":{"target":"e2e-details-2"}}`)
	if reused.status != http.StatusConflict || reused.json["code"] != "idempotency_key_reused" || reused.json["operationId"] != first.json["operationId"] {
		t.Fatalf("reused key: %d %s", reused.status, reused.body)
	}

	utf16Key := newKey()
	req, err := http.NewRequest(http.MethodPost, stack.APIURL+"/v1/operations", strings.NewReader(`{"type":"demo.task","input":{"target":"e2e-utf16"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-16")
	req.Header.Set("Idempotency-Key", utf16Key)
	if r := c.send(req); r.status != http.StatusUnsupportedMediaType || r.json["code"] != "unsupported_media_type" {
		t.Fatalf("charset=utf-16: %d %s", r.status, r.body)
	}
	// Nothing was admitted: the key is still free.
	if r := c.do(http.MethodPost, "/v1/operations", utf16Key, `{"type":"demo.task","input":{"target":"e2e-utf16"}}`); r.status != http.StatusAccepted || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after the 415: %d %s", r.status, r.body)
	}

	// On a deployed stage too: the REST API forwards every method and path to the function
	// (ANY and {proxy+}; the caller's policy must allow execute-api:Invoke on them).
	r := c.do(http.MethodDelete, "/v1/operations/"+first.json["operationId"].(string), "", "")
	if r.status != http.StatusMethodNotAllowed || r.json["code"] != "method_not_allowed" || r.header.Get("Allow") != "GET" {
		t.Fatalf("DELETE: %d %v %s", r.status, r.header, r.body)
	}
	if r := c.do(http.MethodDelete, "/v1/nothing", "", ""); r.status != http.StatusNotFound || r.header.Get("Allow") != "" {
		t.Fatalf("DELETE of an unknown path: %d %v %s", r.status, r.header, r.body)
	}
}
