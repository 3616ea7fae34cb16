package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

// The generator's output is pinned: the same range gives the same file, byte for byte, as
// it did in internal/service/worker, so digests already handed out stay true.
func TestOrdersCSVIsPinned(t *testing.T) {
	for _, tc := range []struct {
		from, to    string
		rows, bytes int
		sha256      string
	}{
		{"2026-09-01", "2026-09-23", 92, 2879, "1fac0156748ab9d31492d9e4eb657ec2510d8afff6771af5d7a14277b60a04a1"},
		{"2026-01-01", "2026-12-31", 1458, 45225, "d3b5388dd664d4b3620290c286604a12ec0f6ec2b98e1211ad11096585e6493f"},
		{"2026-09-01", "2026-09-01", 7, 244, "675194d7fa5bd379ee11e5ef289c9b512bb3497647704ffbb6414f7513ed87a6"},
		{"2026-09-02", "2026-09-01", 0, 27, "d784a9f43f025380a986d6f4c83fd4a8452d87fc0ebbc662af22a6e3dadd8d7a"}, // the header alone
	} {
		csv, rows, err := OrdersCSV(tc.from, tc.to)
		sum := sha256.Sum256(csv)
		if err != nil || rows != tc.rows || len(csv) != tc.bytes || hex.EncodeToString(sum[:]) != tc.sha256 {
			t.Errorf("%s..%s: %d rows, %d bytes, %x, %v", tc.from, tc.to, rows, len(csv), sum, err)
		}
		if lines := strings.Count(string(csv), "\n"); lines != rows+1 {
			t.Errorf("%s..%s: %d lines for %d rows", tc.from, tc.to, lines, rows)
		}
	}
	csv, _, _ := OrdersCSV("2026-09-01", "2026-09-02")
	if !strings.HasPrefix(string(csv), "order_id,date,amount_cents\nord-20260901-0,2026-09-01,1028\nord-20260901-1,2026-09-01,1129\n") ||
		!strings.HasSuffix(string(csv), "ord-20260902-0,2026-09-02,1065\n") {
		t.Fatalf("csv:\n%s", csv)
	}
}

func run(t *testing.T, input string) (string, error) {
	t.Helper()
	payload, _ := json.Marshal(worker.Request{
		Protocol: worker.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Type: "export.orders", Version: 1,
		Input: json.RawMessage(input), Step: 1, MaxSteps: 1, Deadline: time.Now().Add(time.Hour), StepTimeoutSeconds: 60,
	})
	out, err := worker.Handler(exportOrders)(context.Background(), payload)
	return string(out), err
}

// One step: the row count, digest and size of the file, as the operation's result.
func TestOneStepSucceedsWithTheDigest(t *testing.T) {
	got, err := run(t, `{"from":"2026-09-01","to":"2026-09-23"}`)
	want := `{"status":"succeeded","result":{"bytes":2879,"rowCount":92,"sha256":"1fac0156748ab9d31492d9e4eb657ec2510d8afff6771af5d7a14277b60a04a1"}}`
	if err != nil || got != want {
		t.Fatalf("%s %v, want %s", got, err, want)
	}
}

// A date that is not one is refused before anything is generated: a failed report.
func TestABadDateFails(t *testing.T) {
	for _, in := range []string{`{"from":"2026-09-31","to":"2026-10-01"}`, `{"from":"2026-09-01"}`, `{"from":1}`} {
		got, err := run(t, in)
		var rep worker.Report
		if err != nil || json.Unmarshal([]byte(got), &rep) != nil || rep.Status() != worker.StatusFailed || rep.Problem().Code != "invalid_input" {
			t.Errorf("%s: %s %v", in, got, err)
		}
	}
}
