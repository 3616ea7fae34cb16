package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/longrun-dev/longrun/internal/aws/sealkey"
	"github.com/longrun-dev/longrun/internal/core/callback"
)

// signal POSTs a signal as the client, with key (none when "") and If-Match (none when "").
func (c client) signal(id, name, key, ifMatch, body string) response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, stack.APIURL+"/v1/operations/"+id+"/signals/"+name, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	return c.send(req)
}

// awaiting polls id until its representation says it waits for a signal.
func (c client) awaiting(id string, within time.Duration) response {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
		if _, ok := r.json["awaiting"].(map[string]any); ok {
			return r
		}
		if time.Now().After(deadline) || r.json["terminal"] == true {
			c.t.Fatalf("%s does not wait for a signal after %v: %s", id, within, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ops(t testing.TB) client { return client{t, "ops-dev-token"} }

// An operation that waits for approval runs nothing while it waits, says what it waits for,
// and goes on when the caller approves: the next step is given the signal's data, which the
// result echoes. A retry of the signal with the same key answers the same and delivers
// nothing twice; the same key with other data is a conflict.
func TestASignalEndsAWaitAndReachesTheNextStep(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"sig-approve-` + newKey() + `","await":"approval"}}`)
	r := c.awaiting(id, 30*time.Second)
	aw := r.json["awaiting"].(map[string]any)
	if aw["signal"] != "approval" || aw["since"] == nil || aw["until"] == nil {
		t.Fatalf("awaiting = %v", aw)
	}
	if r.json["state"] != "running" {
		t.Fatalf("state while waiting = %v", r.json["state"])
	}
	key := newKey()
	first := c.signal(id, "approval", key, "", `{"approved": true, "by": "alice"}`)
	if first.status != http.StatusAccepted || first.header.Get("Location") != "/v1/operations/"+id || first.header.Get("Retry-After") == "" {
		t.Fatalf("signal: %d %v %s", first.status, first.header, first.body)
	}
	again := c.signal(id, "approval", key, "", `{"by":"alice","approved":true}`) // the same data, spelled otherwise
	if again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed signal: %d %v %s", again.status, again.header, again.body)
	}
	if other := c.signal(id, "approval", key, "", `{"approved": false}`); other.status != http.StatusConflict || other.json["code"] != "idempotency_key_reused" {
		t.Fatalf("the key with other data: %d %s", other.status, other.body)
	}
	final := c.poll(id, 30*time.Second)
	if final.json["state"] != "succeeded" {
		t.Fatalf("final: %s", final.body)
	}
	if _, ok := final.json["awaiting"]; ok {
		t.Fatalf("a terminal operation still awaits: %s", final.body)
	}
	sig, _ := final.json["result"].(map[string]any)["signal"].(map[string]any)
	if sig["approved"] != true || sig["by"] != "alice" {
		t.Fatalf("result = %s", final.body)
	}
	got := state(t, id)
	signaled := 0
	for _, s := range got.Signals {
		if s.Name == "approval" {
			signaled++
		}
	}
	if signaled != 1 {
		t.Fatalf("%d approval signals recorded, want 1 (the retry delivers nothing)", signaled)
	}
}

// Not approved, the work fails with the worker's code; not answered, the wait times out
// (the reconciler wakes it) and the work fails as the worker decides.
func TestARejectionAndATimeoutEndTheWait(t *testing.T) {
	t.Parallel()
	c := alice(t)
	rejected := c.admit(`{"type":"demo.task","input":{"target":"sig-reject-` + newKey() + `","await":"approval"}}`)
	timedOut := c.admit(`{"type":"demo.task","input":{"target":"sig-timeout-` + newKey() + `","await":"approval","awaitSeconds":1}}`)
	c.awaiting(rejected, 30*time.Second)
	// An operator may send it too.
	if r := ops(t).signal(rejected, "approval", newKey(), "", `{"approved": false, "by": "ops"}`); r.status != http.StatusAccepted {
		t.Fatalf("operator's signal: %d %s", r.status, r.body)
	}
	for id, code := range map[string]string{rejected: "not_approved", timedOut: "approval_timeout"} {
		final := c.poll(id, 45*time.Second)
		problem, _ := final.json["problem"].(map[string]any)
		if final.json["state"] != "failed" || problem["code"] != code {
			t.Fatalf("%s: %s", code, final.body)
		}
	}
}

// A cancel during a wait ends the operation canceled at once, in the cancel's own answer:
// no step is in flight and no execution runs. A signal after that is refused.
func TestACancelDuringAWaitForASignalEndsItAtOnce(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"sig-cancel-` + newKey() + `","await":"approval"}}`)
	c.awaiting(id, 30*time.Second)
	r := c.cancel(id, "")
	if r.status != http.StatusAccepted || r.json["state"] != "canceled" {
		t.Fatalf("cancel while waiting: %d %s", r.status, r.body)
	}
	late := c.signal(id, "approval", newKey(), "", `{"approved": true}`)
	if late.status != http.StatusConflict || late.json["code"] != "already_terminal" {
		t.Fatalf("a signal after the cancel: %d %s", late.status, late.body)
	}
}

// A signal that arrives before anyone waits for it is kept and given to the next step.
func TestASignalBeforeTheWaitIsKept(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"sig-early-` + newKey() + `","await":"approval"}}`)
	if r := c.signal(id, "approval", newKey(), "", `{"approved": true, "by": "early"}`); r.status != http.StatusAccepted {
		t.Fatalf("early signal: %d %s", r.status, r.body)
	}
	final := c.poll(id, 30*time.Second)
	sig, _ := final.json["result"].(map[string]any)["signal"].(map[string]any)
	if final.json["state"] != "succeeded" || sig["by"] != "early" {
		t.Fatalf("final: %s", final.body)
	}
}

// Every refused signal answers its problem and changes nothing: the version, and so every
// fact, stays as it was.
func TestARefusedSignalChangesNothing(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"sig-refused-` + newKey() + `","await":"approval"}}`)
	before := c.awaiting(id, 30*time.Second)
	version := fmt.Sprint(before.json["version"])
	big := `{"approved": true, "by": "` + strings.Repeat("x", 300*1024) + `"}`
	for _, tc := range []struct {
		name                 string
		c                    client
		signal, key, ifMatch string
		body                 string
		status               int
		code                 string
	}{
		{"unknown signal", c, "launch", newKey(), "", `{}`, 400, "unknown_signal"},
		{"bad name", c, "Approval!", newKey(), "", `{}`, 400, "unknown_signal"},
		{"no key", c, "approval", "", "", `{"approved": true}`, 400, "invalid_idempotency_key"},
		{"schema", c, "approval", newKey(), "", `{"approved": "yes"}`, 400, "invalid_input"},
		{"not an object", c, "approval", newKey(), "", `[true]`, 400, "invalid_input"},
		{"too large", c, "approval", newKey(), "", big, 413, "payload_too_large"},
		{"another tenant", client{t, "bob-dev-token"}, "approval", newKey(), "", `{"approved": true}`, 404, "not_found"},
		{"stale version", c, "approval", newKey(), `"1"`, `{"approved": true}`, 412, "version_mismatch"},
	} {
		r := tc.c.signal(id, tc.signal, tc.key, tc.ifMatch, tc.body)
		if r.status != tc.status || r.json["code"] != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.body, tc.status, tc.code)
		}
	}
	after := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
	if fmt.Sprint(after.json["version"]) != version || after.json["awaiting"] == nil {
		t.Fatalf("a refused signal changed the operation: version %s → %v: %s", version, after.json["version"], after.body)
	}
	if got := state(t, id); len(got.Signals) != 0 {
		t.Fatalf("a refused signal was recorded: %+v", got.Signals)
	}
	c.cancel(id, "")
}

// callbackURL is the callback URL of signal name on operation id, made with the local
// stack's seal key as the recorder makes the ones it hands workers.
func callbackURL(t *testing.T, id, name string) string {
	t.Helper()
	s := stack.mustBeLocal()
	out, err := s.SecretsManager.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("longrun-local-seal")})
	if err != nil {
		t.Fatal(err)
	}
	key, err := sealkey.Derive(aws.ToString(out.SecretString))
	if err != nil {
		t.Fatal(err)
	}
	token, err := callback.Token(key, id, name)
	if err != nil {
		t.Fatal(err)
	}
	return stack.APIURL + "/v1/callbacks/" + token
}

// post sends body to url with no credentials at all, as a third party does.
func post(t *testing.T, url, body string) response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, body: data}
	_ = json.Unmarshal(data, &r.json)
	return r
}

// A third party with a callback URL and no credentials sends the signal: the same body
// twice is delivered once and answered the same, the answer names nothing of the operation,
// a token the deployment did not make is not_found with nothing changed, and once the
// operation has ended the URL is gone (410). The token never reaches a log line.
func TestACallbackDeliversTheSignalWithoutCredentials(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"sig-callback-` + newKey() + `","await":"approval"}}`)
	before := c.awaiting(id, 30*time.Second)
	url := callbackURL(t, id, "approval")
	base, token, _ := strings.Cut(url, "/v1/callbacks/")
	for name, bad := range map[string]string{
		"malformed": base + "/v1/callbacks/not-a-token",
		"forged":    base + "/v1/callbacks/" + token[:len(token)-4] + "AAAA",
	} {
		if r := post(t, bad, `{"approved": true}`); r.status != http.StatusNotFound || r.json["code"] != "not_found" {
			t.Errorf("%s token: %d %s", name, r.status, r.body)
		}
	}
	if r := post(t, url, `{"approved": "yes"}`); r.status != http.StatusBadRequest || r.json["code"] != "invalid_input" {
		t.Errorf("bad data: %d %s", r.status, r.body)
	}
	if after := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); fmt.Sprint(after.json["version"]) != fmt.Sprint(before.json["version"]) {
		t.Fatalf("a refused callback changed the operation: %s", after.body)
	}
	first := post(t, url, `{"approved": true, "by": "ci"}`)
	if first.status != http.StatusAccepted || string(first.body) != `{"signal":"approval"}` {
		t.Fatalf("callback: %d %s", first.status, first.body)
	}
	again := post(t, url, `{"by": "ci", "approved": true}`)
	if again.status != http.StatusAccepted || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("replayed callback: %d %v %s", again.status, again.header, again.body)
	}
	final := c.poll(id, 30*time.Second)
	sig, _ := final.json["result"].(map[string]any)["signal"].(map[string]any)
	if final.json["state"] != "succeeded" || sig["by"] != "ci" || len(state(t, id).Signals) != 1 {
		t.Fatalf("final: %s (signals %d)", final.body, len(state(t, id).Signals))
	}
	if r := post(t, url, `{"approved": true, "by": "late"}`); r.status != http.StatusGone || r.json["code"] != "callback_expired" || r.json["operationId"] != nil {
		t.Fatalf("a callback after the end: %d %s", r.status, r.body)
	}
	logs, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logs), token[:40]) {
		t.Fatal("the callback token is in the stack's log")
	}
}
