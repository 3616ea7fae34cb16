package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// BenchmarkAdmission measures admission through the whole handler against DynamoDB Local:
// latency percentiles, throughput, and DynamoDB requests per admission, for first
// admissions and replays at concurrency 1 and 8; "replay-noread" is a replay with
// Store.ReplayRead off, answered by the transaction alone, to show what the read beside it
// costs or saves. At concurrency 1 it also reports round trips per admission (the latency
// depth of those requests; see dynamotest.Counter): with requests from several admissions in
// flight at once, the depth is not one admission's, so it is not reported there. `make
// bench` prints it.
func BenchmarkAdmission(b *testing.B) {
	// One table for every case and round, with keys unique per round: DynamoDB Local serves a
	// table of this schema more slowly the more was written, before it was created, to other
	// such tables, deleted or not (docs/performance.md), so a table per round would slow every
	// later row for that alone. A benchmark with sub-benchmarks runs its body once.
	e := newEnv(b)
	e.service.Quota = 0 // measure admission, not the benchmark's own quota
	warmUp(b, e)
	round := 0
	for _, mode := range []string{"first", "replay", "replay-noread"} {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/c%d", mode, workers), func(b *testing.B) {
				round++
				replay := mode != "first"
				e.store.ReplayRead = mode != "replay-noread"
				defer func() { e.store.ReplayRead = true }() // the store's default, for the next case
				event := func(i int) events.APIGatewayProxyRequest {
					key := fmt.Sprintf("bench-%d-%d", round, i)
					if replay {
						key = fmt.Sprintf("bench-%d-replay", round)
					}
					return admitEvent("acme", key, key)
				}
				if replay {
					if out, _ := e.handler.Handle(context.Background(), event(0)); out.StatusCode != 202 {
						b.Fatalf("setup: %d %s", out.StatusCode, out.Body)
					}
				}
				latencies := make([]time.Duration, b.N)
				e.calls.Reset()
				b.ResetTimer()
				elapsed := drive(b.N, workers, func(i int) {
					t := time.Now()
					out, _ := e.handler.Handle(context.Background(), event(i+1))
					latencies[i] = time.Since(t)
					if out.StatusCode != 202 && !b.Failed() {
						b.Errorf("request %d: %d %s", i, out.StatusCode, out.Body)
					}
				})
				b.StopTimer()
				p50, p99 := percentiles(latencies)
				b.ReportMetric(p50, "p50-ms")
				b.ReportMetric(p99, "p99-ms")
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(e.calls.Load())/float64(b.N), "requests/op")
				if workers == 1 {
					b.ReportMetric(float64(e.calls.RoundTrips())/float64(b.N), "round-trips/op")
				}
			})
		}
	}
}

// warmUp sends untimed first admissions and replays, so that the first case does not pay
// for DynamoDB Local's JIT warming up on transactions (bench.mjs warms the peer up likewise).
func warmUp(b *testing.B, e *env) {
	b.Helper()
	for i := range 200 {
		for _, key := range []string{fmt.Sprintf("warm-%d", i), "warm-replay"} {
			if out, _ := e.handler.Handle(context.Background(), admitEvent("acme", key, key)); out.StatusCode != 202 {
				b.Fatalf("warm-up: %d %s", out.StatusCode, out.Body)
			}
		}
	}
}

// admitEvent is a demo.task admission as API Gateway hands it to the function, with a
// Lambda authorizer's tenant and principal.
func admitEvent(tenant, key, target string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{HTTPMethod: http.MethodPost, Path: "/v1/operations",
		Headers:        map[string]string{"Content-Type": "application/json", "Idempotency-Key": key},
		Body:           demo(target),
		RequestContext: events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": tenant, "principal": "alice"}}}
}

// drive runs call(0) … call(n-1) from `workers` goroutines, each issuing its next call as
// soon as its previous one returned (a closed loop), and returns how long they all took.
func drive(n, workers int, call func(i int)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				call(int(i))
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// percentiles returns the p50 and p99 of d in milliseconds (nearest rank below); it sorts d.
func percentiles(d []time.Duration) (p50, p99 float64) {
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	return at(0.50), at(0.99)
}
