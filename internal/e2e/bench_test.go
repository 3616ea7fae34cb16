package e2e

import (
	"context"
	"fmt"
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
