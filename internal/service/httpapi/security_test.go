package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Issue #12, low findings, through the API: each is a 4xx problem that changes nothing.

// A body with hundreds of bad fields gets a bounded list of them.
func TestFieldErrorListsAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.snapshot()
	e.calls.Reset()
	var b strings.Builder
	b.WriteString(`{"type":"demo.task","input":{"target":"x"`)
	for i := range 500 {
		fmt.Fprintf(&b, `,"unknown%d":1`, i)
	}
	b.WriteString(`}}`)
	r := e.admit("k-many-fields", b.String())
	wantProblem(t, r, http.StatusBadRequest, "invalid_input")
	errs, _ := r.json["errors"].([]any)
	if len(errs) != 20 || !strings.Contains(r.json["detail"].(string), "of 500") {
		t.Fatalf("%d field errors listed, detail %q", len(errs), r.json["detail"])
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls for a rejected body", n)
	}
	e.unchanged(before)
}

// An integer a double cannot hold exactly is refused with its pointer, so two requests that
// differ only there never share a fingerprint.
func TestUnsafeIntegersAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.snapshot()
	r := e.admit("k-big-int", `{"type":"demo.task","input":{"target":"x","steps":9007199254740993}}`)
	wantProblem(t, r, http.StatusBadRequest, "invalid_input")
	if errs, _ := r.json["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["pointer"] != "/input/steps" {
		t.Fatalf("errors %v", r.json["errors"])
	}
	e.unchanged(before)
}

// A target that reads like another (bidi override, zero-width space) is refused, and two
// Unicode spellings of one target are one target: the second is target_busy.
func TestTargetsAreVisibleAndNormalized(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.snapshot()
	for _, target := range []string{`invoice\u202egpj.exe`, `ab\u200bc`} {
		r := e.admit("k-invisible-"+target, `{"type":"demo.task","input":{"target":"`+target+`"}}`)
		wantProblem(t, r, http.StatusBadRequest, "invalid_input")
	}
	e.unchanged(before)
	first := e.admit("k-nfc", `{"type":"demo.task","input":{"target":"caf\u00e9"}}`)
	if first.status != http.StatusAccepted {
		t.Fatalf("%d %s", first.status, first.body)
	}
	second := e.admit("k-nfd", `{"type":"demo.task","input":{"target":"cafe\u0301"}}`)
	wantProblem(t, second, http.StatusConflict, "target_busy")
	if second.json["operationId"] != first.json["operationId"] {
		t.Fatalf("target_busy names %v, want %v", second.json["operationId"], first.json["operationId"])
	}
}

// An operator's resolution over 64 KiB is 413 payload_too_large, as admission's is.
func TestResolveBodyOverLimitIs413(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.admit("k-resolve-big", demo("resolve-big")).json["operationId"].(string)
	before := e.snapshot()
	r := e.do(req{caller: "ops", path: "/v1/operations/" + id + "/resolve",
		body: `{"outcome":"failed","reason":"` + strings.Repeat("x", 64<<10) + `"}`})
	wantProblem(t, r, http.StatusRequestEntityTooLarge, "payload_too_large")
	e.unchanged(before)
}

// Targets that display alike take one lock, or are refused (issue #20, item 5): a
// no-break or ideographic space is a space, a run of spaces is one, full-width letters and
// digits are ASCII; a Cyrillic letter inside a Latin word is refused, and changes nothing.
func TestLookAlikeTargetsTakeOneLockOrAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.admit("k-look-alike", demo("build 42"))
	if first.status != http.StatusAccepted || first.json["target"] != "demo:build 42" {
		t.Fatalf("%d %s", first.status, first.body)
	}
	before := e.snapshot()
	e.calls.Reset()
	for _, target := range []string{`bu\u0456ld 42`, `b\u0430d 42`, `\uff42\u0430\uff44`} {
		r := e.admit("k-mixed-"+target, demo(target))
		wantProblem(t, r, http.StatusBadRequest, "invalid_input")
		if errs, _ := r.json["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["pointer"] != "/input/target" {
			t.Fatalf("%s: errors %v", target, r.json["errors"])
		}
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls for refused targets", n)
	}
	for _, target := range []string{`build\u00a042`, `build\u300042`, `build  42`, `\uff42\uff55\uff49\uff4c\uff44\u3000\uff14\uff12`} {
		r := e.admit("k-look-alike-"+target, demo(target))
		wantProblem(t, r, http.StatusConflict, "target_busy")
		if r.json["operationId"] != first.json["operationId"] {
			t.Fatalf("%s: target_busy names %v, want %v", target, r.json["operationId"], first.json["operationId"])
		}
	}
	e.unchanged(before)
}
