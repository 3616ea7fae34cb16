package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/local/conflictproxy"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// Figures for issue 8: admission under DynamoDB's transaction conflicts, with
// internal/local/conflictproxy between the API and DynamoDB Local. `make bench` prints them;
// docs/performance.md records them.

// withHold is withConflicts with every transaction holding its items for exactly hold
// (withConflicts draws each hold from conflictHold to 2×conflictHold), so that a figure
// names one transaction duration.
func withHold(hold time.Duration, proxy **conflictproxy.Proxy) option {
	return func(e *env) {
		p, err := conflictproxy.Start(conflictproxy.Options{Upstream: os.Getenv(dynamotest.EndpointEnv), HoldMin: hold, HoldMax: hold})
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = p.Close() })
		client, calls := dynamotest.Client(p.Endpoint)
		e.client, e.calls, e.store.Client = client, calls, client
		*proxy = p
	}
}

// benchTenant is the tenant of a benchmark round's i-th admission under a quota. Operations
// never end in these benchmarks, so a fresh tenant takes over after every half quota: its 16
// counters stay far from full (filling them is TestQuotaExactUnderConflicts's subject) and
// what is measured is admissions contending for one tenant's counters.
func benchTenant(round, i, quota int) string {
	return fmt.Sprintf("bench-%d-%d", round, i/max(quota/2, 1))
}

// BenchmarkAdmissionUnderConflicts: one tenant's first admissions (distinct keys and
// targets, the default quota) in a closed loop at concurrency 1, 8 and 32, while every
// transaction holds its items for exactly 5, 15 or 25 ms; hold 0 is the same path through
// the proxy without holding, the ceiling that DynamoDB Local and the proxy set in the same
// run. It reports admissions per second, the shares of 5xx (the goal is none) and of 429,
// transactions the proxy cancelled for a conflict per admission, and DynamoDB requests per
// admission (retries included).
func BenchmarkAdmissionUnderConflicts(b *testing.B) {
	e := newEnv(b) // one table for every case and round, as in BenchmarkAdmission
	round := 0
	for _, hold := range []time.Duration{0, 5 * time.Millisecond, 15 * time.Millisecond, 25 * time.Millisecond} {
		var proxy *conflictproxy.Proxy
		withHold(hold, &proxy)(e) // this hold's proxy, for its cases below
		for _, workers := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("hold=%s/c=%d", hold, workers), func(b *testing.B) {
				round++
				statuses := make([]int, b.N)
				latencies := make([]time.Duration, b.N)
				cancelled := proxy.Stats().Cancelled
				e.calls.Reset()
				b.ResetTimer()
				elapsed := drive(b.N, workers, func(i int) {
					key := fmt.Sprintf("k-%d-%d", round, i)
					tenant := benchTenant(round, i, e.service.Quota)
					t := time.Now()
					out, _ := e.handler.Handle(context.Background(), admitEvent(tenant, key, key))
					latencies[i], statuses[i] = time.Since(t), out.StatusCode
					if s := out.StatusCode; s != 202 && s != 429 && s < 500 && !b.Failed() {
						b.Errorf("admission %d: %d %s", i, s, out.Body)
					}
				})
				b.StopTimer()
				admitted, over, server := 0, 0, 0
				for _, s := range statuses {
					switch {
					case s == 202:
						admitted++
					case s == 429:
						over++
					case s >= 500:
						server++
					}
				}
				n := float64(b.N)
				p50, p99 := percentiles(latencies)
				b.ReportMetric(float64(admitted)/elapsed.Seconds(), "admissions/s")
				b.ReportMetric(float64(server)/n, "5xx-share")
				b.ReportMetric(float64(over)/n, "429-share")
				b.ReportMetric(float64(proxy.Stats().Cancelled-cancelled)/n, "conflicts/op")
				b.ReportMetric(float64(e.calls.Load())/n, "requests/op")
				b.ReportMetric(p50, "p50-ms")
				b.ReportMetric(p99, "p99-ms")
			})
		}
	}
}

// BenchmarkIdenticalRacersUnderConflicts: one op is a trial, 64 identical first requests
// (one key, one body, a key of its own per trial) released together while transactions hold
// their items for 10–20 ms (withConflicts, as the contention tests). All 64 should get 202
// with the one operation's body, 63 of them marked as replays. It reports how many trials
// were exactly that, the totals of everything else, and how long a trial took from release
// to its last answer; the log lists every outcome seen with its number of trials. `make
// bench` runs exactly 1,000 trials (-benchtime=1000x).
func BenchmarkIdenticalRacersUnderConflicts(b *testing.B) {
	const racers = 64
	var proxy *conflictproxy.Proxy
	e := newEnv(b, withConflicts(&proxy)) // one table for every round, as in BenchmarkAdmission
	round := 0
	b.Run(fmt.Sprintf("racers=%d", racers), func(b *testing.B) {
		round++
		var clean, replays, notAccepted, server, split int
		outcomes := map[string]int{} // a trial's outcome → trials with it
		durations := make([]time.Duration, b.N)
		cancelled := proxy.Stats().Cancelled
		e.calls.Reset()
		b.ResetTimer()
		for trial := range b.N {
			tenant, key := benchTenant(round, trial, e.service.Quota), fmt.Sprintf("race-%d-%d", round, trial)
			results, took := race(racers, func() events.APIGatewayProxyResponse {
				out, _ := e.handler.Handle(context.Background(), admitEvent(tenant, key, key))
				return out
			})
			durations[trial] = took
			statuses, bodies, replayed := map[int]int{}, map[string]bool{}, 0
			for _, r := range results {
				statuses[r.StatusCode]++
				if r.StatusCode == 202 {
					bodies[r.Body] = true
					if r.Headers["Idempotent-Replayed"] == "true" {
						replayed++
					}
				}
				if r.StatusCode >= 500 {
					server++
				}
			}
			if statuses[202] == racers && replayed == racers-1 && len(bodies) == 1 {
				clean++
			}
			if len(bodies) > 1 {
				split++ // more than one operation for one key: what idempotency exists to prevent
			}
			replays += replayed
			notAccepted += racers - statuses[202]
			outcomes[describeTrial(statuses, replayed, len(bodies))]++
		}
		b.StopTimer()
		n := float64(b.N)
		p50, p99 := percentiles(durations)
		b.ReportMetric(float64(clean), "clean-trials")
		b.ReportMetric(float64(notAccepted), "non-202")
		b.ReportMetric(float64(server), "5xx")
		b.ReportMetric(float64(split), "split-trials")
		b.ReportMetric(float64(replays)/n, "replays/trial")
		b.ReportMetric(float64(proxy.Stats().Cancelled-cancelled)/n, "conflicts/trial")
		b.ReportMetric(float64(e.calls.Load())/n, "requests/trial")
		b.ReportMetric(p50, "trial-p50-ms")
		b.ReportMetric(p99, "trial-p99-ms")
		var lines []string
		for _, o := range slices.Sorted(maps.Keys(outcomes)) {
			lines = append(lines, fmt.Sprintf("%5d × %s", outcomes[o], o))
		}
		b.Logf("%d trials of %d racers:\n%s", b.N, racers, strings.Join(lines, "\n"))
	})
}

// race calls call n times at once: n goroutines, released together once all have started.
// It returns their results and the time from the release to the last answer.
func race(n int, call func() events.APIGatewayProxyResponse) ([]events.APIGatewayProxyResponse, time.Duration) {
	results := make([]events.APIGatewayProxyResponse, n)
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-release
			results[i] = call()
		})
	}
	ready.Wait()
	start := time.Now()
	close(release)
	done.Wait()
	return results, time.Since(start)
}

// describeTrial names a trial's outcome: its statuses, replays and distinct 202 bodies.
func describeTrial(statuses map[int]int, replays, bodies int) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(statuses)) {
		parts = append(parts, fmt.Sprintf("%d×%d", statuses[s], s))
	}
	return fmt.Sprintf("%s, %d replays, %d distinct 202 bodies", strings.Join(parts, " "), replays, bodies)
}
