package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

func percentile(d []time.Duration, p float64) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
}

// BenchmarkAcceptToTerminal measures demo.task (one step, sleepMs 0) from admission to a
// terminal state on the local stack, one operation at a time. "client" is what a client
// polling every 5 ms sees; "facts" is the same span from the facts' own timestamps (the
// accepted fact to the terminal one); "outbox" is the part from the accepted fact to the
// execution's first fact, which contains the stream poller's idle interval.
func BenchmarkAcceptToTerminal(b *testing.B) {
	c := alice(b)
	var client, facts, outbox []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		id := c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"bench-%d-%d"}}`, time.Now().UnixNano(), i))
		for {
			r := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
			if r.json["terminal"] == true {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		client = append(client, time.Since(start))
		fs, err := store().Facts(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		facts = append(facts, fs[len(fs)-1].At.Sub(fs[0].At))
		outbox = append(outbox, fs[1].At.Sub(fs[0].At))
	}
	b.ReportMetric(percentile(client, 0.5), "client-p50-ms")
	b.ReportMetric(percentile(client, 0.99), "client-p99-ms")
	b.ReportMetric(percentile(facts, 0.5), "facts-p50-ms")
	b.ReportMetric(percentile(facts, 0.99), "facts-p99-ms")
	b.ReportMetric(percentile(outbox, 0.5), "outbox-p50-ms")
	b.ReportMetric(percentile(outbox, 0.99), "outbox-p99-ms")
}

// BenchmarkDispatchThroughput admits operations with the stream consumer paused, then
// resumes it and measures how fast the dispatcher moves them all out of accepted.
func BenchmarkDispatchThroughput(b *testing.B) {
	c := alice(b)
	const batch = 100
	var rates []float64
	// One untimed round first: the first burst after start-up pays for warming DynamoDB
	// Local's JVM and kumo, and would otherwise be the only sample of a short run.
	for i := -1; i < b.N; i++ {
		stack.Pause("dispatcher", "reconciler")
		time.Sleep(300 * time.Millisecond)
		ids := make([]string, batch)
		var wg sync.WaitGroup
		for j := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids[j] = c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"tp-%d-%d-%d"}}`, time.Now().UnixNano(), i, j))
			}()
		}
		wg.Wait()
		start := time.Now()
		stack.Resume("dispatcher", "reconciler")
		for _, id := range ids {
			for {
				op, err := store().Load(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				if op.State != operation.Accepted {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if i >= 0 {
			rates = append(rates, batch/time.Since(start).Seconds())
		}
	}
	sort.Float64s(rates)
	b.ReportMetric(rates[len(rates)/2], "dispatched/s")
}

// BenchmarkSignalToNextStep measures how soon a signal starts the step that waits for it:
// demo.task with "await": "approval" on the local stack, one operation at a time. Each
// round admits one, waits until its representation says it awaits the approval (the
// execution has ended: nothing runs), sends the signal a random 0–250 ms later, and polls
// every 10 ms until the operation ends. The random delay makes the signal meet the stream
// poller anywhere in its cycle, as a signal from the world does: without it each round
// would reach the poller at the same point of its cycle (every round's timing follows
// from the poller's own reads of the round's earlier records), and the figures would
// measure that point. The step is taken to start at the first executor fact after the signaled
// fact: the fact with which the woken execution's Run takes the step's lease, written just
// before it invokes the worker. "answer" spans from the moment the signal's 202 reached the
// client to that fact; "fact" from the signaled fact to it (both facts' own clocks). The
// reconciler is held for the benchmark, so the dispatcher always wakes the work, as it does
// on AWS, where the reconciler comes every minute.
func BenchmarkSignalToNextStep(b *testing.B) {
	c := alice(b)
	stack.Pause("reconciler")
	defer stack.Resume("reconciler")
	var answer, fact []time.Duration
	for i := 0; i < b.N; i++ {
		id := c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"bench-signal-%d-%d","await":"approval"}}`, time.Now().UnixNano(), i))
		c.awaiting(id, 30*time.Second)
		time.Sleep(rand.N(250 * time.Millisecond))
		r := c.signal(id, "approval", newKey(), "", `{"approved": true, "by": "bench"}`)
		answered := time.Now()
		if r.status != http.StatusAccepted {
			b.Fatalf("signal: %d %s", r.status, r.body)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			r := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
			if r.json["terminal"] == true {
				if r.json["state"] != "succeeded" {
					b.Fatalf("%s: %s", id, r.body)
				}
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s did not end within 30 s of its signal: %s", id, r.body)
			}
		}
		fs, err := store().Facts(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		var signaled, step *operation.Fact
		for k := range fs {
			switch {
			case signaled == nil && fs[k].Kind == operation.KindSignaled:
				signaled = &fs[k]
			case signaled != nil && fs[k].Source == operation.SourceExecutor:
				step = &fs[k]
			}
			if step != nil {
				break
			}
		}
		if signaled == nil || step == nil || step.Lease == nil {
			b.Fatalf("%s: no signaled fact, or no executor fact taking the step's lease after it: %+v", id, fs)
		}
		answer = append(answer, step.At.Sub(answered))
		fact = append(fact, step.At.Sub(signaled.At))
	}
	b.ReportMetric(percentile(answer, 0.5), "answer-p50-ms")
	b.ReportMetric(percentile(answer, 0.9), "answer-p90-ms")
	b.ReportMetric(percentile(answer, 0.99), "answer-p99-ms")
	b.ReportMetric(percentile(fact, 0.5), "fact-p50-ms")
	b.ReportMetric(percentile(fact, 0.99), "fact-p99-ms")
}
