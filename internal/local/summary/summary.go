// Package summary turns the local stack's function output into the one line `make run`
// prints every interval while there is traffic:
//
//	summary 10:00:10, last 10s: admissions 42 (created 30, replayed 12) · conflicts 3 · ended 28, p50 accept→terminal 180ms · in flight 5
//
// It reads the same CloudWatch Embedded Metric Format lines the functions write for
// CloudWatch (internal/aws/emf; the metrics are in docs/observability.md), so the line
// counts what a dashboard on AWS would: admissions by outcome (Admissions), DynamoDB
// transaction conflicts (TransactionConflicts), and outcomes with their accept → outcome
// latency (OperationLatency). A Summary is an io.Writer to put in front of the stack's
// output (devstack.Options.Output): every byte goes on to Next untouched.
package summary

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/emf"
)

// maxLine bounds a line kept while its end has not arrived; longer ones are not metrics.
const maxLine = 1 << 20

// outcomes is the order admissions' outcomes are listed in (httpapi's Outcome values);
// any other follows, sorted.
func outcomes() []string {
	return []string{"created", "replayed", "key_reused", "target_busy", "quota_exceeded", "invalid", "unavailable", "internal"}
}

// Summary reads EMF lines from what is written to it and keeps the counts of the current
// window and since it started. Use New.
type Summary struct {
	// Next receives everything written, unchanged; nil discards it.
	Next io.Writer
	// Namespace is the functions' metric namespace (LONGRUN_METRICS_NAMESPACE); lines of
	// another namespace are not counted.
	Namespace string

	mu      sync.Mutex
	partial []byte
	win     window
	// created and ended are counted since the start: in flight is their difference.
	created, ended float64
}

// window is what one interval saw.
type window struct {
	admissions map[string]float64 // by outcome
	conflicts  float64
	latencies  []float64 // milliseconds, one per outcome
}

// New is a Summary of the functions' metrics in the default namespace, passing what it
// reads on to next.
func New(next io.Writer) *Summary {
	return &Summary{Next: next, Namespace: emf.DefaultNamespace}
}

// Write passes p on to Next and counts the metrics of the complete lines in it. A line
// that is not an EMF line of Namespace (a log line, kumo's chatter, a malformed object)
// counts nothing.
func (s *Summary) Write(p []byte) (int, error) {
	n, err := len(p), error(nil)
	if s.Next != nil {
		n, err = s.Next.Write(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data := p
	if len(s.partial) > 0 {
		data = append(s.partial, p...)
		s.partial = nil
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		s.read(data[:i])
		data = data[i+1:]
	}
	if len(data) > 0 && len(data) <= maxLine {
		s.partial = append([]byte(nil), data...)
	}
	return n, err
}

// read counts one line: an EMF object, alone or after the stack's "<function> | " prefix.
func (s *Summary) read(line []byte) {
	if _, rest, ok := bytes.Cut(line, []byte(" | ")); ok && !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
		line = rest
	}
	line = bytes.TrimSpace(line)
	if !bytes.HasPrefix(line, []byte("{")) || !bytes.Contains(line, []byte(`"_aws"`)) {
		return
	}
	var root map[string]json.RawMessage
	if json.Unmarshal(line, &root) != nil {
		return
	}
	var meta struct {
		CloudWatchMetrics []struct {
			Namespace string
			Metrics   []struct{ Name string }
		}
	}
	if json.Unmarshal(root["_aws"], &meta) != nil {
		return
	}
	for _, d := range meta.CloudWatchMetrics {
		if d.Namespace != s.Namespace {
			continue
		}
		for _, m := range d.Metrics {
			values, ok := numbers(root[m.Name])
			if !ok {
				continue
			}
			s.count(m.Name, values, root)
		}
	}
}

// count adds one metric's values (a member is a number or an array of them).
func (s *Summary) count(name string, values []float64, root map[string]json.RawMessage) {
	switch name {
	case "Admissions":
		var outcome string
		if json.Unmarshal(root["Outcome"], &outcome) != nil || outcome == "" {
			return
		}
		if s.win.admissions == nil {
			s.win.admissions = map[string]float64{}
		}
		for _, v := range values {
			s.win.admissions[outcome] += v
			if outcome == "created" {
				s.created += v
			}
		}
	case "TransactionConflicts":
		for _, v := range values {
			s.win.conflicts += v
		}
	case "OperationLatency":
		s.win.latencies = append(s.win.latencies, values...)
		s.ended += float64(len(values))
	}
}

func numbers(raw json.RawMessage) ([]float64, bool) {
	var v float64
	if json.Unmarshal(raw, &v) == nil {
		return []float64{v}, finite(v)
	}
	var vs []float64
	if json.Unmarshal(raw, &vs) != nil || len(vs) == 0 {
		return nil, false
	}
	for _, v := range vs {
		if !finite(v) {
			return nil, false
		}
	}
	return vs, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Line ends the current window at now and returns its line; ok is false, and there is no
// line, when the window saw no admission, conflict or outcome. every is the window's
// length as the line states it.
func (s *Summary) Line(now time.Time, every time.Duration) (line string, ok bool) {
	s.mu.Lock()
	w := s.win
	s.win = window{}
	inFlight := max(s.created-s.ended, 0) // operations admitted before the start may end during it
	s.mu.Unlock()

	var total float64
	for _, v := range w.admissions {
		total += v
	}
	if total == 0 && w.conflicts == 0 && len(w.latencies) == 0 {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "summary %s, last %s: admissions %s", now.Format("15:04:05"), every, num(total))
	if total > 0 {
		var parts []string
		for _, o := range order(w.admissions) {
			if v := w.admissions[o]; v != 0 {
				parts = append(parts, o+" "+num(v))
			}
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, " · conflicts %s · ended %d", num(w.conflicts), len(w.latencies))
	if len(w.latencies) > 0 {
		fmt.Fprintf(&b, ", p50 accept→terminal %s", duration(median(w.latencies)))
	}
	fmt.Fprintf(&b, " · in flight %s", num(inFlight))
	return b.String(), true
}

// order lists the outcomes seen: the known ones first, in their order, then any other.
func order(seen map[string]float64) []string {
	known := outcomes()
	var rest []string
	for o := range seen {
		if !slices.Contains(known, o) {
			rest = append(rest, o)
		}
	}
	slices.Sort(rest)
	return append(known, rest...)
}

// median is the nearest-rank 50th percentile: the smallest value at least half of the
// values are at or below.
func median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	v := slices.Clone(values)
	slices.Sort(v)
	return v[(len(v)+1)/2-1]
}

func num(v float64) string { return fmt.Sprint(math.Round(v)) }

// duration writes milliseconds as a Go duration rounded to what a reader takes in:
// 180ms, 1.24s, 12.3s.
func duration(ms float64) string {
	d := time.Duration(math.Round(ms)) * time.Millisecond
	switch {
	case d >= 10*time.Second:
		d = d.Round(100 * time.Millisecond)
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	}
	return d.String()
}

// Print writes each tick's line to out until ctx ends (ticks from a time.Ticker, or a
// test's channel).
func (s *Summary) Print(ctx context.Context, ticks <-chan time.Time, every time.Duration, out io.Writer) {
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticks:
			if line, ok := s.Line(now, every); ok {
				fmt.Fprintln(out, line)
			}
		}
	}
}

// Run is Print on a ticker of every.
func (s *Summary) Run(ctx context.Context, every time.Duration, out io.Writer) {
	t := time.NewTicker(every)
	defer t.Stop()
	s.Print(ctx, t.C, every, out)
}
