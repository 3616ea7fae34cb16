package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// BenchmarkAdmission measures admission through the whole handler against DynamoDB Local:
// latency percentiles, throughput and DynamoDB round trips per request, for first
// admissions and replays at concurrency 1 and 8. `make bench` prints it.
func BenchmarkAdmission(b *testing.B) {
	for _, mode := range []string{"first", "replay"} {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/c%d", mode, workers), func(b *testing.B) {
				e := newEnv(b)
				event := func(i int64) events.APIGatewayProxyRequest {
					key, target := fmt.Sprintf("bench-%d", i), fmt.Sprintf("bench-%d", i)
					if mode == "replay" {
						key, target = "bench-replay", "bench-replay"
					}
					return events.APIGatewayProxyRequest{HTTPMethod: http.MethodPost, Path: "/v1/operations",
						Headers:        map[string]string{"Content-Type": "application/json", "Idempotency-Key": key},
						Body:           demo(target),
						RequestContext: events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"tenant": "acme", "principal": "alice"}}}
				}
				e.service.Quota = 0 // measure admission, not the benchmark's own quota
				if mode == "replay" {
					if out, _ := e.handler.Handle(context.Background(), event(0)); out.StatusCode != 202 {
						b.Fatalf("setup: %d %s", out.StatusCode, out.Body)
					}
				}
				latencies := make([]time.Duration, b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				e.calls.Reset()
				b.ResetTimer()
				start := time.Now()
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							t := time.Now()
							out, _ := e.handler.Handle(context.Background(), event(i+1))
							latencies[i] = time.Since(t)
							if out.StatusCode != 202 {
								b.Errorf("request %d: %d %s", i, out.StatusCode, out.Body)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
				pct := func(p float64) float64 {
					return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
				}
				b.ReportMetric(pct(0.50), "p50-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(e.calls.Load())/float64(b.N), "roundtrips/op")
			})
		}
	}
}
