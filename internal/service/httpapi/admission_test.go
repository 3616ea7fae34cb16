package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

var opIDPattern = regexp.MustCompile(`^op_[0-9A-HJKMNP-TV-Z]{26}$`)

// Row 1: a valid new key creates exactly one operation.
func TestNewKeyCreatesOneOperation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.admit("8e03978e-40d5-43e8-bc93-6894a57f9324", `{"type": "export.orders", "input": {"from": "2026-09-01", "to": "2026-09-23"}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	id, _ := r.json["operationId"].(string)
	if !opIDPattern.MatchString(id) {
		t.Fatalf("operationId %q", id)
	}
	want := fmt.Sprintf(`{"operationId":"%s","type":"export.orders","target":"orders:2026-09-01..2026-09-23","state":"accepted","statusUrl":"/v1/operations/%s","createdAt":"2026-11-30T10:00:00.000Z"}`, id, id)
	if string(r.body) != want {
		t.Fatalf("body\n got %s\nwant %s", r.body, want)
	}
	if r.header.Get("Location") != "/v1/operations/"+id || r.header.Get("Retry-After") != "1" ||
		r.header.Get("Content-Type") != "application/json" || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("headers %v", r.header)
	}
	// The idempotency record, the accepted fact, the projection, the target lock and the
	// quota reservation: one transaction, one round trip.
	if n := len(e.snapshot()); n != 5 {
		t.Fatalf("%d items, want 5", n)
	}
	g := e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, caller: "alice"})
	if g.status != 200 || g.json["state"] != "accepted" || g.json["version"] != 1.0 || g.header.Get("ETag") != `"1"` {
		t.Fatalf("GET %d %s %v", g.status, g.body, g.header)
	}
}

// Row 2: same key and same canonical request within the window replays the first
// response byte for byte and writes nothing.
func TestSameKeySameRequestReplays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.admit("k-replay", demo("a"))
	before := e.snapshot()
	variants := []string{
		demo("a"),
		`{"input":{"target":"a"},"type":"demo.task"}`,                             // member order
		"{\n  \"type\" : \"demo.task\",\n  \"input\" : { \"target\" : \"a\" }\n}", // whitespace
		`{"type":"demo.task","input":{"target":"\u0061"}}`,                        // unicode escape
		`{"type":"demo.\u0074ask","input":{"target":"a"}}`,
	}
	e.clock.Set(t0.Add(24*time.Hour - time.Second)) // still inside the window
	for _, body := range variants {
		r := e.admit("k-replay", body)
		if r.status != http.StatusAccepted || !bytes.Equal(r.body, first.body) {
			t.Fatalf("replay of %s: %d %s", body, r.status, r.body)
		}
		if r.header.Get("Idempotent-Replayed") != "true" || r.header.Get("Location") != first.header.Get("Location") {
			t.Fatalf("replay headers %v", r.header)
		}
	}
	e.unchanged(before)
}

func TestNumberSpellingsAreOneRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.admit("k-num", `{"type":"demo.task","input":{"target":"n","steps":1,"sleepMs":0}}`)
	for _, spelling := range []string{`1.0`, `1e0`, `10e-1`, `1.00`} {
		r := e.admit("k-num", `{"type":"demo.task","input":{"target":"n","steps":`+spelling+`,"sleepMs":0.0}}`)
		if r.status != 202 || !bytes.Equal(r.body, first.body) {
			t.Fatalf("steps=%s: %d %s", spelling, r.status, r.body)
		}
	}
	if e.operations() != 1 {
		t.Fatal("number spellings made a second operation")
	}
}

// Row 3: same key with a different canonical request is 409 and leaves the record as it
// was. A fingerprint over the key alone would replay instead and fail here; 429 would fail
// on the status.
func TestSameKeyDifferentRequestIs409(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.admit("k-reuse", `{"type":"demo.task","input":{"target":"r","steps":2}}`)
	before := e.snapshot()
	for _, body := range []string{
		`{"type":"demo.task","input":{"target":"r","steps":3}}`,
		`{"type":"demo.task","input":{"target":"other","steps":2}}`,
		`{"type":"demo.task","input":{"target":"r","steps":2,"outcome":"fail"}}`,
		`{"type":"export.orders","input":{"from":"2026-09-01","to":"2026-09-02"}}`,
	} {
		r := e.admit("k-reuse", body)
		wantProblem(t, r, http.StatusConflict, "idempotency_key_reused")
		if r.header.Get("Retry-After") != "" {
			t.Fatalf("a key conflict is not a rate limit: %v", r.header)
		}
		// The problem names the operation the key belongs to, so the client knows what to poll.
		if r.json["operationId"] != first.json["operationId"] {
			t.Fatalf("the 409 should name the key's operation %v: %s", first.json["operationId"], r.body)
		}
	}
	e.unchanged(before)
}

// Row 4: after the window a key admits a new operation. Expiry is decided by the write's
// condition on the absolute UTC instant, not by TTL deletion (DynamoDB Local deletes late).
func TestSameKeyAfterExpiryCreatesNewOperation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.admit("k-exp", demo("exp"))
	id := first.json["operationId"].(string)
	e.finish(id) // free the target, so the second admission is decided by the key alone

	e.clock.Set(t0.Add(24 * time.Hour))
	second := e.admit("k-exp", demo("exp"))
	if second.status != 202 || second.json["operationId"] == id || second.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after expiry: %d %s", second.status, second.body)
	}
	if second.json["createdAt"] != "2026-12-01T10:00:00.000Z" {
		t.Fatalf("createdAt %v", second.json["createdAt"])
	}
	// ...and the new record starts a new window: a replay now returns the second operation.
	third := e.admit("k-exp", demo("exp"))
	if !bytes.Equal(third.body, second.body) || third.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay after renewal: %s", third.body)
	}
	if e.operations() != 2 {
		t.Fatalf("%d operations, want 2", e.operations())
	}
	// The first operation is still there, unchanged.
	if g := e.do(req{method: http.MethodGet, path: "/v1/operations/" + id, caller: "alice"}); g.status != 200 || g.json["state"] != "succeeded" {
		t.Fatalf("first operation: %d %s", g.status, g.body)
	}
}

// Expiry is an absolute instant: the clock's time zone must not move it. An implementation
// that computes expiry from local wall-clock fields is off by the zone's offset here.
func TestExpiryIgnoresTimeZones(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("UTC+14", 14*3600)
	west := time.FixedZone("UTC-12", -12*3600)
	e := newEnv(t)
	e.clock.Set(t0.In(east))
	first := e.admit("k-tz", demo("tz"))
	e.finish(first.json["operationId"].(string))
	for _, item := range e.snapshot() {
		if exp, ok := item["expires_at"].(*types.AttributeValueMemberN); ok && exp.Value != strconv.FormatInt(t0.Add(24*time.Hour).Unix(), 10) {
			t.Fatalf("expires_at %s, want the absolute instant %d", exp.Value, t0.Add(24*time.Hour).Unix())
		}
	}

	e.clock.Set(t0.Add(24*time.Hour - time.Second).In(west))
	if r := e.admit("k-tz", demo("tz")); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("one second before expiry (clock in UTC-12): %d %s", r.status, r.body)
	}
	e.clock.Set(t0.Add(24 * time.Hour).In(east))
	if r := e.admit("k-tz", demo("tz")); r.status != 202 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("at expiry (clock in UTC+14): %d %s", r.status, r.body)
	}
	if first.json["createdAt"] != "2026-11-30T10:00:00.000Z" {
		t.Fatalf("createdAt must be UTC: %v", first.json["createdAt"])
	}
}

// Row 5: missing, empty, repeated or invalid keys are 400 and write nothing — and cost no
// DynamoDB call at all.
func TestInvalidKeysAre400(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.snapshot()
	e.calls.Reset()
	cases := map[string][]string{
		"missing":    nil,
		"empty":      {""},
		"too long":   {strings.Repeat("k", 129)},
		"non-ASCII":  {"clé"},
		"control":    {"a\tb"},
		"DEL":        {"a\x7fb"},
		"newline":    {"a\nb"},
		"repeated":   {"k1", "k2"},
		"same twice": {"k1", "k1"},
	}
	for name, keys := range cases {
		t.Run(name, func(t *testing.T) {
			r := e.do(req{caller: "alice", keys: keys, body: demo("keys")})
			wantProblem(t, r, http.StatusBadRequest, "invalid_idempotency_key")
		})
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls for rejected keys, want 0", n)
	}
	e.unchanged(before)
	// The edges of the valid range are accepted.
	for i, key := range []string{strings.Repeat("~", 128), " ", "!"} {
		if r := e.admit(key, demo(fmt.Sprintf("edge-%d", i))); r.status != 202 {
			t.Fatalf("key %q: %d %s", key, r.status, r.body)
		}
	}
}

// Row 6: identical first requests racing make exactly one operation and identical bodies.
func TestConcurrentIdenticalFirstRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 64
	results := parallel(n, func(int) res { return e.admit("k-race", demo("race")) })
	replays := 0
	for i, r := range results {
		if r.status != 202 || !bytes.Equal(r.body, results[0].body) {
			t.Fatalf("request %d: %d %s (first: %s)", i, r.status, r.body, results[0].body)
		}
		if r.header.Get("Idempotent-Replayed") == "true" {
			replays++
		}
	}
	if replays != n-1 {
		t.Fatalf("%d replays, want %d", replays, n-1)
	}
	if e.operations() != 1 {
		t.Fatalf("%d operations, want 1", e.operations())
	}
}

// One key, sixteen different bodies at once: one operation, fifteen 409s.
func TestConcurrentDifferentBodiesOneKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 16
	results := parallel(n, func(i int) res { return e.admit("k-mixed", demo(fmt.Sprintf("mixed-%d", i))) })
	accepted, conflicts := 0, 0
	for _, r := range results {
		switch {
		case r.status == 202:
			accepted++
		case r.status == 409 && r.json["code"] == "idempotency_key_reused":
			conflicts++
		default:
			t.Fatalf("unexpected %d %s", r.status, r.body)
		}
	}
	if accepted != 1 || conflicts != n-1 || e.operations() != 1 {
		t.Fatalf("accepted %d conflicts %d operations %d", accepted, conflicts, e.operations())
	}
}

// Row 7: a new key on a target that has an active operation is 409 target_busy; locks are
// per scope, so another tenant is not blocked. The lock is released with the terminal fact.
func TestTargetBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.admit("k-t1", demo("shared"))
	before := e.snapshot()
	r := e.admit("k-t2", `{"type":"demo.task","input":{"target":" shared ","steps":2}}`) // same canonical target
	wantProblem(t, r, http.StatusConflict, "target_busy")
	if r.json["operationId"] != first.json["operationId"] {
		t.Fatalf("the problem should name the caller's operation holding the target: %s", r.body)
	}
	e.unchanged(before)

	if b := e.do(req{caller: "bob", keys: []string{"k-t2"}, body: demo("shared")}); b.status != 202 {
		t.Fatalf("another tenant was blocked: %d %s", b.status, b.body)
	}
	e.finish(first.json["operationId"].(string))
	if r := e.admit("k-t3", demo("shared")); r.status != 202 {
		t.Fatalf("after the first finished: %d %s", r.status, r.body)
	}
}

// Row 8: the tenant's active operations at quota is 429 with Retry-After; finishing one
// frees a slot. Quota is per tenant, so another principal of the same tenant shares it.
func TestQuotaExceeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withQuota(2))
	a := e.admit("q1", demo("q1"))
	e.do(req{caller: "carol", keys: []string{"q2"}, body: demo("q2")})
	before := e.snapshot()
	r := e.admit("q3", demo("q3"))
	wantProblem(t, r, http.StatusTooManyRequests, "quota_exceeded")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	e.unchanged(before)
	if b := e.do(req{caller: "bob", keys: []string{"q3"}, body: demo("q3")}); b.status != 202 {
		t.Fatalf("another tenant hit acme's quota: %d", b.status)
	}
	e.finish(a.json["operationId"].(string))
	if r := e.admit("q3", demo("q3")); r.status != 202 {
		t.Fatalf("after a slot was freed: %d %s", r.status, r.body)
	}
}

// A client that lost the 202 (the server committed) retries and gets the same operation.
func TestRetryAfterLostResponse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_ = e.admit("k-lost", demo("lost")) // the response never reaches the client
	retry := e.admit("k-lost", demo("lost"))
	if retry.status != 202 || e.operations() != 1 {
		t.Fatalf("retry: %d %s, %d operations", retry.status, retry.body, e.operations())
	}
	g := e.do(req{method: http.MethodGet, path: retry.header.Get("Location"), caller: "alice"})
	if g.status != 200 || g.json["operationId"] != retry.json["operationId"] {
		t.Fatalf("status of the retried operation: %d %s", g.status, g.body)
	}
}

// Scope comes from the authorizer: the same key from two callers is two operations, and
// another caller's operation is indistinguishable from a missing one.
func TestScopeIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.admit("shared-key", demo("iso"))
	b := e.do(req{caller: "bob", keys: []string{"shared-key"}, body: demo("iso")})
	c := e.do(req{caller: "carol", keys: []string{"shared-key"}, body: demo("iso")})
	if a.status != 202 || b.status != 202 || c.status != 202 || a.json["operationId"] == b.json["operationId"] ||
		a.json["operationId"] == c.json["operationId"] || e.operations() != 3 {
		t.Fatalf("a %s\nb %s\nc %s", a.body, b.body, c.body)
	}
	// The same key with another body is each caller's own conflict, naming only their own
	// operation; another scope's same key is another key (no conflict, nothing of alice's).
	for caller, own := range map[string]res{"alice": a, "bob": b, "carol": c} {
		r := e.do(req{caller: caller, keys: []string{"shared-key"}, body: demo("iso-changed")})
		wantProblem(t, r, http.StatusConflict, "idempotency_key_reused")
		if r.json["operationId"] != own.json["operationId"] {
			t.Fatalf("%s's 409 names %v, not their own %v", caller, r.json["operationId"], own.json["operationId"])
		}
	}
	first := e.admit("alice-only", demo("iso-alice"))
	aliceID := first.json["operationId"].(string)
	for _, caller := range []string{"bob", "carol"} {
		r := e.do(req{caller: caller, keys: []string{"alice-only"}, body: demo("iso-" + caller)})
		if r.status != http.StatusAccepted || r.header.Get("Idempotent-Replayed") != "" || r.json["operationId"] == aliceID ||
			bytes.Contains(r.body, []byte(aliceID)) || bytes.Contains(r.body, []byte("iso-alice")) {
			t.Fatalf("%s with alice's key: %d %s", caller, r.status, r.body)
		}
	}
	other := e.do(req{method: http.MethodGet, path: "/v1/operations/" + a.json["operationId"].(string), caller: "bob"})
	missing := e.do(req{method: http.MethodGet, path: "/v1/operations/op_01ARYZ6S410000000000000000", caller: "bob"})
	wantProblem(t, other, 404, "not_found")
	wantProblem(t, missing, 404, "not_found")
	if withoutRequestID(other.body) != withoutRequestID(missing.body) {
		t.Fatalf("another scope's operation is distinguishable:\n%s\n%s", other.body, missing.body)
	}
	// A header or body claiming another tenant changes nothing.
	spoof := e.do(req{caller: "bob", keys: []string{"spoof"}, body: demo("spoof"), header: map[string]string{"X-Tenant": "acme"}})
	if g := e.do(req{method: http.MethodGet, path: "/v1/operations/" + spoof.json["operationId"].(string), caller: "alice"}); g.status != 404 {
		t.Fatalf("a header moved the scope: %d", g.status)
	}
}

// parallel runs n calls at once and returns their results in call order.
func parallel(n int, call func(i int) res) []res {
	results := make([]res, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = call(i) }()
	}
	wg.Wait()
	return results
}

func withoutRequestID(b []byte) string {
	return regexp.MustCompile(`"requestId":"[^"]*"`).ReplaceAllString(string(b), "")
}

func TestAnonymousIs401AndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.snapshot()
	wantProblem(t, e.do(req{keys: []string{"k"}, body: demo("anon")}), 401, "unauthenticated")
	wantProblem(t, e.do(req{method: http.MethodGet, path: "/v1/operations/op_01ARYZ6S410000000000000000"}), 401, "unauthenticated")
	e.unchanged(before)
}

// Bad bodies are rejected before anything is stored, and cost no DynamoDB call.
func TestBadBodiesWriteNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.snapshot()
	e.calls.Reset()
	deep := strings.Repeat(`{"a":`, 32) + "1" + strings.Repeat("}", 32)
	cases := []struct {
		name, contentType, body string
		status                  int
		code                    string
	}{
		{"duplicate member", "", `{"type":"demo.task","input":{"target":"x","target":"y"}}`, 400, "invalid_input"},
		{"duplicate top-level member", "", `{"type":"demo.task","type":"demo.task","input":{"target":"x"}}`, 400, "invalid_input"},
		{"invalid UTF-8", "", "{\"type\":\"demo.task\",\"input\":{\"target\":\"\xff\"}}", 400, "invalid_input"},
		{"depth 33", "", `{"type":"demo.task","input":` + deep + `}`, 400, "invalid_input"},
		{"not JSON", "", `type=demo.task`, 400, "invalid_input"},
		{"array", "", `[]`, 400, "invalid_input"},
		{"trailing data", "", demo("x") + "{}", 400, "invalid_input"},
		{"unknown top-level field", "", `{"type":"demo.task","input":{"target":"x"},"tenant":"globex"}`, 400, "invalid_input"},
		{"input not an object", "", `{"type":"demo.task","input":"x"}`, 400, "invalid_input"},
		{"unknown type", "", `{"type":"demo.nope","input":{}}`, 400, "unsupported_operation_type"},
		{"invalid input", "", `{"type":"demo.task","input":{"target":"x","steps":99}}`, 400, "invalid_input"},
		{"text/plain", "text/plain", demo("x"), 415, "unsupported_media_type"},
		{"another JSON media type", "application/merge-patch+json", demo("x"), 415, "unsupported_media_type"},
		{"charset utf-16", "application/json; charset=utf-16", demo("x"), 415, "unsupported_media_type"},
		{"charset UTF-16, mixed case", "Application/JSON; Charset=UTF-16", demo("x"), 415, "unsupported_media_type"},
		{"charset latin-1", "application/json; charset=iso-8859-1", demo("x"), 415, "unsupported_media_type"},
		{"charset utf8 (not the name)", "application/json; charset=utf8", demo("x"), 415, "unsupported_media_type"},
		{"charset empty", `application/json; charset=""`, demo("x"), 415, "unsupported_media_type"},
		{"no content type", "none", demo("x"), 400, "invalid_input"},
		{"unparseable content type", "application/json; charset", demo("x"), 400, "invalid_input"},
		{"text/plain oversize", "text/plain", `{"type":"demo.task","input":{"target":"` + strings.Repeat("x", 64<<10) + `"}}`, 413, "payload_too_large"},
		{"oversize", "", `{"type":"demo.task","input":{"target":"` + strings.Repeat("x", 64<<10) + `"}}`, 413, "payload_too_large"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(req{caller: "alice", keys: []string{fmt.Sprintf("bad-%d", i)}, contentType: tc.contentType, body: tc.body})
			wantProblem(t, r, tc.status, tc.code)
		})
	}
	// The key is judged before the media type, as before.
	wantProblem(t, e.do(req{caller: "alice", contentType: "text/plain", body: demo("x")}), 400, "invalid_idempotency_key")
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls for rejected bodies, want 0", n)
	}
	e.unchanged(before)
	// A rejected key can be used for a valid request afterwards: nothing was recorded.
	if r := e.admit("bad-0", demo("x")); r.status != 202 {
		t.Fatalf("key of a rejected request: %d", r.status)
	}
}

// A charset parameter that says UTF-8, in any case or quoted, is accepted; it is not part of
// the fingerprint, so the same request without it is a replay.
func TestCharsetUTF8IsAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.do(req{caller: "alice", keys: []string{"k-utf8"}, contentType: "application/json; charset=UTF-8", body: demo("utf8")})
	if first.status != http.StatusAccepted {
		t.Fatalf("charset=UTF-8: %d %s", first.status, first.body)
	}
	for _, ct := range []string{"application/json", "application/json;charset=utf-8", `application/json; charset="Utf-8"`, "APPLICATION/JSON; CHARSET=UTF-8"} {
		r := e.do(req{caller: "alice", keys: []string{"k-utf8"}, contentType: ct, body: demo("utf8")})
		if r.status != http.StatusAccepted || r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, first.body) {
			t.Fatalf("%s: %d %s", ct, r.status, r.body)
		}
	}
}

func TestInvalidInputListsFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.admit("k-fields", `{"type":"export.orders","input":{"from":"2026-13-01","extra":1}}`)
	wantProblem(t, r, 400, "invalid_input")
	errs, _ := r.json["errors"].([]any)
	var pointers []string
	for _, x := range errs {
		pointers = append(pointers, x.(map[string]any)["pointer"].(string))
	}
	if strings.Join(pointers, ",") != "/input/extra,/input/from,/input/to" {
		t.Fatalf("fields %v in %s", pointers, r.body)
	}
}

func TestBodyLimitBoundary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pad := func(total int) string {
		base := `{"type":"demo.task","input":{"target":"x"}}`
		return base[:len(base)-2] + strings.Repeat(" ", total-len(base)) + "}}"
	}
	if r := e.admit("limit-ok", pad(64<<10)); r.status != 202 {
		t.Fatalf("exactly 64 KiB: %d %s", r.status, r.body)
	}
	wantProblem(t, e.admit("limit-over", pad(64<<10+1)), 413, "payload_too_large")
}

// Location and statusUrl keep the stage (or custom-domain base path) the client called.
func TestStatusURLKeepsBasePath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(req{caller: "alice", keys: []string{"k-stage"}, body: demo("stage"), stagePrefix: "/prod"})
	id := r.json["operationId"].(string)
	if r.header.Get("Location") != "/prod/v1/operations/"+id || r.json["statusUrl"] != "/prod/v1/operations/"+id {
		t.Fatalf("location %s body %s", r.header.Get("Location"), r.body)
	}
}

// Exactly one DynamoDB round trip per first admission, per replay and per key conflict.
// Round trips are measured in wall time (a request that starts after another ended is a
// second one), so a goroutine the scheduler starts late, under the race detector on a busy
// machine, can make a right implementation look serial once; one that sends its requests
// one after the other is serial every time. So the steps run up to five times, on fresh
// keys and targets, and one clean run passes.
func TestOneRoundTripPerAdmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var last string
	for attempt := range 5 {
		if last = roundTripsPerAdmission(e, attempt); last == "" {
			return
		}
		t.Logf("attempt %d: %s", attempt+1, last)
	}
	t.Fatal(last)
}

// roundTripsPerAdmission runs the steps once; it returns what went wrong, "" when nothing.
func roundTripsPerAdmission(e *env, attempt int) string {
	key := func(k string) string { return fmt.Sprintf("%s-%d", k, attempt) }
	body := func(t string) string { return demo(fmt.Sprintf("%s-%d", t, attempt)) }
	for _, step := range []struct {
		name, key, body string
	}{
		{"first", key("k-rt"), body("rt")},
		{"replay", key("k-rt"), body("rt")},
		{"conflict", key("k-rt"), body("rt2")},
		{"target busy", key("k-rt3"), body("rt")},
	} {
		e.store.Drain() // the previous step's request left in flight, if any
		e.calls.Reset()
		e.admit(step.key, step.body)
		e.store.Drain()
		var ops []string
		for _, c := range e.calls.Calls() {
			ops = append(ops, c.Operation)
		}
		slices.Sort(ops)
		// Whichever request answers first abandons the other, which may then never be sent.
		switch got := fmt.Sprint(ops); {
		case got == "[GetItem TransactWriteItems]", got == "[TransactWriteItems]":
		case got == "[GetItem]" && step.name == "replay":
		default:
			e.t.Fatalf("%s: requests %v, want one TransactWriteItems beside at most one GetItem", step.name, ops)
		}
		// One transaction, with the consistent read of the key's record beside it (it
		// answers a replay early): two requests, one round trip of latency.
		if n := e.calls.RoundTrips(); n != 1 {
			return fmt.Sprintf("%s: %d round trips, want 1: %+v", step.name, n, e.calls.Calls())
		}
	}
	return ""
}

func TestStatusReadIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.calls.Reset()
	e.do(req{method: http.MethodGet, path: "/v1/operations/op_01ARYZ6S410000000000000000", caller: "alice"})
	if n := e.calls.Load(); n != 1 {
		t.Fatalf("status read: %d round trips, want 1", n)
	}
}

// finish drives an operation to succeeded through the store, as a worker and the recorder
// will, releasing its target lock and quota slot.
func (e *env) finish(id string) {
	e.t.Helper()
	ctx := context.Background()
	op, err := e.store.Load(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	now := e.clock.Now()
	if _, err := e.store.Append(ctx, op,
		operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher, Execution: "arn:aws:states:us-east-1:123456789012:execution:x:" + id},
		operation.Fact{Kind: operation.KindStarted, At: now, Source: operation.SourceExecutor},
		operation.Fact{Kind: operation.KindSucceeded, At: now, Source: operation.SourceExecutor, Result: []byte(`{"rowCount":3}`)},
	); err != nil {
		e.t.Fatal(err)
	}
}
