package e2e

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/local/summary"
)

// The summary line `make run` prints (internal/local/summary) reads the EMF lines the
// functions really write, through the stack's prefixed output: an admission, its replay
// and the operation's outcome show on it.
func TestSummaryReadsTheFunctionsMetrics(t *testing.T) {
	if stack.local == nil {
		return // the log file is the local stack's
	}
	info, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	from := info.Size()
	c := alice(t)
	key, body := newKey(), `{"type":"demo.task","input":{"target":"e2e-summary","steps":1}}`
	first := c.do(http.MethodPost, "/v1/operations", key, body)
	replay := c.do(http.MethodPost, "/v1/operations", key, body)
	id, _ := first.json["operationId"].(string)
	if first.status != http.StatusAccepted || replay.status != http.StatusAccepted || replay.json["operationId"] != id {
		t.Fatalf("%d %s / %d %s", first.status, first.body, replay.status, replay.body)
	}
	if done := c.poll(id, 30*time.Second); done.json["state"] != "succeeded" {
		t.Fatalf("%s", done.body)
	}
	// The recorder's line reaches the file just after the outcome; give it a moment.
	var line string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		f, err := os.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		sum := summary.New(io.Discard)
		_, err = f.Seek(from, io.SeekStart)
		if err == nil {
			_, err = io.Copy(sum, f)
		}
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		line, _ = sum.Line(time.Now(), 10*time.Second)
		if strings.Contains(line, "(created ") && strings.Contains(line, ", replayed ") && strings.Contains(line, "p50 accept→terminal") {
			return
		}
		if time.Now().After(deadline) {
			// Say what the file held, by function: the two failures seen (issue 21) were
			// another stack's lines in the same file, a killed run's test binary still
			// writing to it (docs/development.md, "Facts learned").
			t.Fatalf("summary of the stack's output since the test began: %q; its lines by function: %v", line, linesByFunction(t, from))
		}
	}
}

// linesByFunction counts the log file's lines from offset on by their function prefix
// ("api | …"), and the api's lines that name the test's admissions' metric.
func linesByFunction(t *testing.T, from int64) map[string]int {
	data, err := os.ReadFile(logPath)
	if err != nil || int64(len(data)) < from {
		t.Logf("read %s: %v", logPath, err)
		return nil
	}
	out := map[string]int{}
	for _, l := range strings.Split(string(data[from:]), "\n") {
		if name, rest, ok := strings.Cut(l, " | "); ok {
			out[name]++
			if name == "api" && strings.Contains(rest, `"Admissions"`) {
				out["api EMF admissions"]++
			}
		}
	}
	return out
}
