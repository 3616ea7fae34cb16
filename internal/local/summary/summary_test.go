package summary_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/local/summary"
)

var at = time.Date(2026, 11, 30, 10, 0, 10, 0, time.UTC)

// stack writes what a function of the local stack writes: its EMF lines, each prefixed
// with the function's name as devstack prefixes every line.
type stack struct {
	t   *testing.T
	sum *summary.Summary
}

func (s stack) metric(fn, name, unit string, value float64, dims ...string) {
	s.t.Helper()
	enc := &emf.Encoder{W: &bytes.Buffer{}, Namespace: emf.DefaultNamespace, Dimensions: []string{"Service", "longrun-" + fn},
		Now: func() time.Time { return at }}
	line, err := enc.Line(name, unit, value, dims...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.raw(fn + " | " + string(line))
}

func (s stack) raw(line string) {
	s.t.Helper()
	if n, err := s.sum.Write([]byte(line)); err != nil || n != len(line) {
		s.t.Fatalf("wrote %d of %d: %v", n, len(line), err)
	}
}

func (s stack) admit(outcome string, n int) {
	for range n {
		s.metric("api", "Admissions", "Count", 1, "Outcome", outcome)
	}
}

func (s stack) ended(outcome string, ms float64) {
	s.metric("recorder", "OperationLatency", "Milliseconds", ms, "Type", "demo.task", "Outcome", outcome)
}

// A window's line counts its admissions by outcome, the transaction conflicts, the
// outcomes and their median latency; in flight is created minus ended since the start.
// A window without traffic prints nothing, however many operations are in flight.
func TestWindowsAndInFlight(t *testing.T) {
	var next bytes.Buffer
	s := stack{t, summary.New(&next)}
	s.admit("created", 5)
	s.admit("replayed", 2)
	s.admit("key_reused", 1)
	s.admit("quota_exceeded", 1)
	s.metric("api", "TransactionConflicts", "Count", 1, "Call", "admit")
	s.metric("recorder", "TransactionConflicts", "Count", 2, "Call", "append")
	s.metric("api", "StoreRetries", "Count", 3, "Call", "admit") // not on the line
	s.metric("dispatcher", "DispatchLag", "Milliseconds", 40, "Type", "demo.task")
	for _, ms := range []float64{300, 100, 200, 400} {
		s.ended("succeeded", ms)
	}
	line, ok := s.sum.Line(at, 10*time.Second)
	if want := "summary 10:00:10, last 10s: admissions 9 (created 5, replayed 2, key_reused 1, quota_exceeded 1) · conflicts 3 · ended 4, p50 accept→terminal 200ms · in flight 1"; !ok || line != want {
		t.Fatalf("line\n%q, want\n%q", line, want)
	}

	// The next window: outcomes only, one of them from the reconciler.
	s.ended("failed", 12345)
	s.metric("reconciler", "OperationLatency", "Milliseconds", 1234, "Type", "demo.task", "Outcome", "outcome_unknown")
	s.ended("succeeded", 99999)
	line, ok = s.sum.Line(at.Add(10*time.Second), 10*time.Second)
	if want := "summary 10:00:20, last 10s: admissions 0 · conflicts 0 · ended 3, p50 accept→terminal 12.3s · in flight 0"; !ok || line != want {
		t.Fatalf("line\n%q, want\n%q", line, want)
	}

	// A quiet window: nothing, even with work in flight.
	s.admit("created", 2)
	if _, ok := s.sum.Line(at.Add(20*time.Second), 10*time.Second); !ok {
		t.Fatal("a window with admissions printed nothing")
	}
	if line, ok := s.sum.Line(at.Add(30*time.Second), 10*time.Second); ok {
		t.Fatalf("a quiet window printed %q", line)
	}
	// In flight is never negative, though more may end than were created since the start.
	s.ended("succeeded", 10)
	s.ended("succeeded", 20)
	s.ended("succeeded", 30)
	if line, _ := s.sum.Line(at.Add(40*time.Second), time.Minute); !strings.HasSuffix(line, "ended 3, p50 accept→terminal 20ms · in flight 0") ||
		!strings.Contains(line, "last 1m0s:") {
		t.Fatalf("%q", line)
	}
	if !strings.Contains(next.String(), `api | {"Admissions":1,"Outcome":"created"`) || strings.Count(next.String(), "\n") != 25 {
		t.Fatalf("not every line went on:\n%s", next.String())
	}
}

// Whatever is not an EMF line goes on byte for byte and counts nothing.
func TestOtherLinesPassThroughUntouched(t *testing.T) {
	var next bytes.Buffer
	s := stack{t, summary.New(&next)}
	in := []string{
		`api | {"level":"INFO","message":"request","status":202,"service":"longrun-api"}` + "\n",
		"kumo: delivered event to queue\n",
		`recorder | process exited (signal: killed); starting a new one` + "\n",
		`notifier | {"message":"mentions _aws","_aws":"not metadata"}` + "\n",
		"\n",
		"  a line with trailing spaces   \n",
	}
	for _, l := range in {
		s.raw(l)
	}
	if next.String() != strings.Join(in, "") {
		t.Fatalf("got\n%q\nwant\n%q", next.String(), strings.Join(in, ""))
	}
	if line, ok := s.sum.Line(at, 10*time.Second); ok {
		t.Fatalf("counted %q", line)
	}
}

// A malformed EMF line, or one of another namespace, is ignored; the good lines around it
// still count. A line split over writes counts once, when its end arrives.
func TestMalformedLinesAreIgnored(t *testing.T) {
	var next bytes.Buffer
	s := stack{t, summary.New(&next)}
	good := func(v string) string {
		return `{"Admissions":` + v + `,"Outcome":"created","Service":"longrun-api","_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"longrun","Dimensions":[["Service","Outcome"]],"Metrics":[{"Name":"Admissions","Unit":"Count"}]}]}}`
	}
	bad := []string{
		`api | {"Admissions":1,"Outcome":"created","_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"longrun"`, // cut short
		`api | ` + good(`"one"`), // not a number
		`api | ` + good(`[1,"x"]`),
		`api | ` + strings.Replace(good("1"), `"Namespace":"longrun"`, `"Namespace":"other"`, 1),
		`api | ` + strings.Replace(good("1"), `"Outcome":"created",`, ``, 1),                               // no outcome
		`api | ` + strings.Replace(good("1"), `"CloudWatchMetrics":[`, `"CloudWatchMetrics":7,"Was":[`, 1), // directives not a list
		`api | {"Admissions":1,"_aws":null}`,
	}
	for _, l := range bad {
		s.raw(l + "\n")
	}
	s.raw("api | " + good("[1,1]") + "\n") // an array of values is two
	whole := "api | " + good("1") + "\n"
	s.raw(whole[:40])
	if line, ok := s.sum.Line(at, 10*time.Second); !ok || !strings.Contains(line, "admissions 2 (created 2)") {
		t.Fatalf("%q: a half line counted, or the good ones did not", line)
	}
	s.raw(whole[40:])
	if line, ok := s.sum.Line(at, 10*time.Second); !ok || !strings.Contains(line, "admissions 1 (created 1)") || !strings.HasSuffix(line, "in flight 3") {
		t.Fatalf("%q", line)
	}
}

// The namespace is the functions' (LONGRUN_METRICS_NAMESPACE): the default one's lines do
// not count under another.
func TestNamespace(t *testing.T) {
	s := stack{t, summary.New(nil)}
	s.sum.Namespace = "shop"
	s.admit("created", 1)
	if line, ok := s.sum.Line(at, 10*time.Second); ok {
		t.Fatalf("counted %q", line)
	}
	line, err := (&emf.Encoder{W: &bytes.Buffer{}, Namespace: "shop", Dimensions: []string{"Service", "longrun-api"}}).Line("Admissions", "Count", 1, "Outcome", "replayed")
	if err != nil {
		t.Fatal(err)
	}
	s.raw("api | " + string(line))
	if line, ok := s.sum.Line(at, 10*time.Second); !ok || !strings.Contains(line, "(replayed 1)") {
		t.Fatalf("%q", line)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// Print writes one line per tick with traffic, none for a quiet one, and stops with its
// context; writers may write while it runs.
func TestPrintOnTicks(t *testing.T) {
	s := stack{t, summary.New(nil)}
	var out syncBuffer
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.sum.Print(ctx, ticks, 10*time.Second, &out); close(done) }()

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.metric("api", "Admissions", "Count", 1, "Outcome", "created")
			s.ended("succeeded", float64(100*(i+1)))
		}()
	}
	wg.Wait()
	ticks <- at
	ticks <- at.Add(10 * time.Second) // quiet: every write came before the tick at
	// Taking a tick means Print finished the one before, but not yet this one: the
	// replay below may land in the window that ends at +20s or in the one at +30s.
	ticks <- at.Add(20 * time.Second)
	s.admit("replayed", 1)
	ticks <- at.Add(30 * time.Second)
	ticks <- at.Add(40 * time.Second) // Print took it, so the line at +30s is written
	cancel()
	<-done
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	first := "summary 10:00:10, last 10s: admissions 8 (created 8) · conflicts 0 · ended 8, p50 accept→terminal 400ms · in flight 0"
	replay := " last 10s: admissions 1 (replayed 1) · conflicts 0 · ended 0 · in flight 0"
	if len(lines) != 2 || lines[0] != first ||
		(lines[1] != "summary 10:00:30,"+replay && lines[1] != "summary 10:00:40,"+replay) {
		t.Fatalf("printed\n%s\nwant\n%s\nsummary 10:00:30 or 10:00:40,%s", strings.Join(lines, "\n"), first, replay)
	}
}
