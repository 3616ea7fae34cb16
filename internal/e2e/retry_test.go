package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// resolveAs POSTs body to id's resolve as token, with If-Match ifMatch when it is not "".
func resolveAs(t *testing.T, token, id, ifMatch, body string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, stack.APIURL+"/v1/operations/"+id+"/resolve", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	return client{t, token}.send(req)
}

// An operator retries the step whose outcome was unknown, through the stack: the refusals
// change nothing; the retry runs the same step again as its second attempt, in an execution
// of its own, and the operation succeeds under the same id. The retried fact says who, when
// and why; the representation and the events carry the retry.
func TestAnOperatorRetriesAnUnknownStep(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"e2e-retry","steps":2,"outcome":"flaky"}}`)
	r := c.poll(id, 30*time.Second)
	if r.json["state"] != "outcome_unknown" {
		t.Fatalf("%s", r.body)
	}
	version := int(r.json["version"].(float64))
	etag := strconv.Quote(strconv.Itoa(version))
	body := `{"outcome":"retry","reason":"The target shows no trace of step 2."}`
	for _, refused := range []struct {
		token, ifMatch, body string
		status               int
		code                 string
	}{
		{"alice-dev-token", etag, body, http.StatusForbidden, "forbidden"},
		{"ops-dev-token", "", body, http.StatusBadRequest, "invalid_input"},
		{"ops-dev-token", strconv.Quote(strconv.Itoa(version - 1)), body, http.StatusPreconditionFailed, "version_mismatch"},
		{"ops-dev-token", etag, `{"outcome":"retry","reason":"x","result":{}}`, http.StatusBadRequest, "invalid_input"},
		{"ops-dev-token", etag, `{"outcome":"retry"}`, http.StatusBadRequest, "invalid_input"},
	} {
		if f := resolveAs(t, refused.token, id, refused.ifMatch, refused.body); f.status != refused.status || f.json["code"] != refused.code {
			t.Fatalf("%+v: %d %s", refused, f.status, f.body)
		}
		if g := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); int(g.json["version"].(float64)) != version {
			t.Fatalf("a refused retry changed the operation: %s", g.body)
		}
	}
	s := resolveAs(t, "ops-dev-token", id, etag, body)
	if s.status != http.StatusOK || s.json["state"] == "outcome_unknown" || s.json["problem"] != nil {
		t.Fatalf("the retry: %d %s", s.status, s.body)
	}
	done := c.poll(id, 30*time.Second)
	var result struct {
		Attempt int `json:"attempt"`
		Steps   int `json:"steps"`
	}
	_ = json.Unmarshal(mustJSON(t, done.json["result"]), &result)
	retried, _ := done.json["retried"].(map[string]any)
	if done.json["state"] != "succeeded" || result.Attempt != 2 || result.Steps != 2 ||
		retried["step"] != 2.0 || retried["attempt"] != 2.0 || retried["reason"] != "The target shows no trace of step 2." {
		t.Fatalf("after the retry: %s", done.body)
	}
	facts, err := store().Facts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var fact *operation.Fact
	for i := range facts {
		if facts[i].Kind == operation.KindRetried {
			fact = &facts[i]
		}
	}
	if fact == nil || fact.Actor != "longrun/ops" || fact.Source != operation.SourceOperator || fact.Retry.Step != 2 || fact.Retry.Attempt != 2 {
		t.Fatalf("the retried fact: %+v", fact)
	}
	if executions(t, id) != 1 || executions(t, id+"-1") != 1 {
		t.Fatalf("executions: %d of %s, %d of %s-1", executions(t, id), id, executions(t, id+"-1"), id)
	}
	final := int(done.json["version"].(float64))
	checkEvents(t, id, final, "succeeded")
	for _, e := range bus.of(id) {
		if e.Detail.Version == fact.Version && (!strings.Contains(string(e.raw), `"previousState":"outcome_unknown"`) || !strings.Contains(string(e.raw), `"retried":{"step":2,"attempt":2`)) {
			t.Errorf("the retry's event: %s", e.raw)
		}
	}
}

// A retry past the operation's deadline is refused, and changes nothing.
func TestARetryPastTheDeadlineIsRefused(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"test.brief","input":{"name":"retry-late","steps":1,"outcome":"lost"}}`)
	r := c.poll(id, 30*time.Second)
	if r.json["state"] != "outcome_unknown" {
		t.Fatalf("%s", r.body)
	}
	created, _ := time.Parse(time.RFC3339, r.json["createdAt"].(string))
	time.Sleep(time.Until(created.Add(21 * time.Second))) // test.brief's deadline is 20 s
	etag := strconv.Quote(strconv.Itoa(int(r.json["version"].(float64))))
	f := resolveAs(t, "ops-dev-token", id, etag, `{"outcome":"retry","reason":"too late"}`)
	if f.status != http.StatusConflict || f.json["code"] != "deadline_passed" {
		t.Fatalf("%d %s", f.status, f.body)
	}
	if g := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); g.json["version"] != r.json["version"] || g.json["state"] != "outcome_unknown" {
		t.Fatalf("a refused retry changed the operation: %s", g.body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
