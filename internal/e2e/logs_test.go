package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// One operation's log lines across the api, dispatcher, worker, recorder and notifier share its
// correlation_id (born at admission from the caller's traceparent) and operation_id, in the
// field names Powertools uses; its events carry the correlation id too.
func TestOneOperationsLogsShareItsCorrelationID(t *testing.T) {
	t.Parallel()
	if stack.local == nil {
		return // the log file is the local stack's
	}
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	c := alice(t)
	id := c.runTraced(`{"type":"demo.task","input":{"target":"e2e-logs","steps":2}}`, "00-"+trace+"-00f067aa0ba902b7-01")
	evs := bus.waitVersions(t, id, int(c.poll(id, time.Second).json["version"].(float64)), 30*time.Second)
	for _, e := range evs {
		if e.Detail.CorrelationID != trace {
			t.Errorf("event v%d carries correlation id %q", e.Detail.Version, e.Detail.CorrelationID)
		}
	}
	// The notifier logs after it published; give the file a moment.
	want := map[string]bool{"api": false, "dispatcher": false, "recorder": false, "notifier": false, "worker-demo-task": false}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		missing := false
		for fn, lines := range linesOf(t, id) {
			for _, line := range lines {
				if line["correlation_id"] != trace || line["operation_id"] != id || line["message"] == nil || line["level"] == nil ||
					line["timestamp"] == nil || line["service"] == nil {
					t.Fatalf("%s: a line of %s without its ids or Powertools' keys: %v", fn, id, line)
				}
			}
			if _, ok := want[fn]; ok && len(lines) > 0 {
				want[fn] = true
			}
		}
		for _, seen := range want {
			missing = missing || !seen
		}
		if !missing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("functions with lines for %s: %v", id, want)
		}
	}
}

// linesOf reads the stack's log file for the JSON lines that name operation id, by function.
func linesOf(t *testing.T, id string) map[string][]map[string]any {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]map[string]any{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fn, rest, ok := strings.Cut(sc.Text(), " | ")
		if !ok || !strings.Contains(rest, id) || !strings.HasPrefix(rest, "{") {
			continue
		}
		var line map[string]any
		if json.Unmarshal([]byte(rest), &line) == nil && line["operation_id"] == id {
			out[fn] = append(out[fn], line)
		}
	}
	return out
}

// runTraced admits body with the caller's traceparent and waits for the operation to
// succeed; it returns the operation's id.
func (c client) runTraced(body, traceparent string) string {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, stack.APIURL+"/v1/operations", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", newKey())
	req.Header.Set("traceparent", traceparent)
	r := c.send(req)
	id, _ := r.json["operationId"].(string)
	if r.status != http.StatusAccepted || id == "" {
		c.t.Fatalf("%d %s", r.status, r.body)
	}
	if done := c.poll(id, 30*time.Second); done.json["state"] != "succeeded" {
		c.t.Fatalf("%s", done.body)
	}
	return id
}
