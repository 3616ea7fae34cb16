package httpapi_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/local/conflictproxy"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// The admission tests again, under DynamoDB's real transaction semantics: every transaction
// holds its items for 10–20 ms and overlapping work is refused with TransactionConflict, as
// on AWS (internal/local/conflictproxy). The plain runs above stay: they pin the contract;
// these prove it holds when DynamoDB refuses what DynamoDB Local would serialize.

const conflictHold = 10 * time.Millisecond

// withConflicts puts the conflict-faithful proxy between the API and DynamoDB Local. The
// store keeps its production retries: they count attempts, so DynamoDB Local's queue (it
// answers one request at a time, more slowly the more the suite wrote before) lengthens a
// test without spending them.
func withConflicts(proxy **conflictproxy.Proxy) option {
	return withSlowConflicts(proxy, 0)
}

// withSlowConflicts is withConflicts on a slow store: every request the proxy passes on
// waits latency first, as on a loaded machine.
func withSlowConflicts(proxy **conflictproxy.Proxy, latency time.Duration) option {
	return func(e *env) {
		client, calls, p := dynamotest.NewSlowConflictClient(e.t, conflictHold, latency)
		e.client, e.calls, e.store.Client = client, calls, client
		*proxy = p
	}
}

// parallelN runs n calls, at most concurrency at a time.
func parallelN(n, concurrency int, call func(i int) res) []res {
	results := make([]res, n)
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() { defer wg.Done(); defer func() { <-sem }(); results[i] = call(i) }()
	}
	wg.Wait()
	return results
}

// 64 identical first requests, 10 times: every racer gets 202 with the one operation's body
// (`make bench` runs 1,000 such trials, `make stress` this test 20 times in a row).
func TestIdenticalRacersUnderConflicts(t *testing.T) {
	t.Parallel()
	var proxy *conflictproxy.Proxy
	identicalRacers(t, newEnv(t, withConflicts(&proxy)), proxy, 10)
}

// slowStore is the latency of the slow-store tests: with the 2 s time budget the retries
// once had, a racer or an admission near the quota that met a few conflicts spent it on
// waiting and answered 503, as the first `make test` on a busy machine did (issue 21).
const slowStore = 150 * time.Millisecond

// The racers on a slow store, where every request waits 150 ms: still every racer a 202.
func TestIdenticalRacersOnASlowStore(t *testing.T) {
	t.Parallel()
	var proxy *conflictproxy.Proxy
	identicalRacers(t, newEnv(t, withSlowConflicts(&proxy, slowStore)), proxy, 5)
}

func identicalRacers(t *testing.T, e *env, proxy *conflictproxy.Proxy, trials int) {
	t.Helper()
	const racers = 64
	for trial := range trials {
		key, body := fmt.Sprintf("k-race-%d", trial), demo(fmt.Sprintf("race-%d", trial))
		results := parallel(racers, func(int) res { return e.admit(key, body) })
		replays := 0
		for i, r := range results {
			if r.status != 202 || !bytes.Equal(r.body, results[0].body) {
				t.Fatalf("trial %d request %d: %d %s (first: %s)", trial, i, r.status, r.body, results[0].body)
			}
			if r.header.Get("Idempotent-Replayed") == "true" {
				replays++
			}
		}
		if replays != racers-1 {
			t.Fatalf("trial %d: %d replays, want %d", trial, replays, racers-1)
		}
	}
	if n := e.operations(); n != trials {
		t.Fatalf("%d operations, want %d", n, trials)
	}
	if proxy.Stats().Cancelled == 0 {
		t.Fatal("no transaction conflicted: the test proved nothing")
	}
}

// Sixteen bodies on one key: one 202, fifteen 409s naming the first operation.
func TestDifferentBodiesOneKeyUnderConflicts(t *testing.T) {
	t.Parallel()
	var proxy *conflictproxy.Proxy
	e := newEnv(t, withConflicts(&proxy))
	results := parallel(16, func(i int) res { return e.admit("k-mixed", demo(fmt.Sprintf("mixed-%d", i))) })
	accepted, conflicts, first := 0, 0, ""
	for _, r := range results {
		if r.status == 202 {
			accepted++
			first, _ = r.json["operationId"].(string)
		}
	}
	for _, r := range results {
		switch {
		case r.status == 202:
		case r.status == 409 && r.json["code"] == "idempotency_key_reused" && r.json["operationId"] == first:
			conflicts++
		default:
			t.Fatalf("unexpected %d %s", r.status, r.body)
		}
	}
	if accepted != 1 || conflicts != 15 || e.operations() != 1 {
		t.Fatalf("accepted %d conflicts %d operations %d", accepted, conflicts, e.operations())
	}
}

// One tenant, default quota, 400 distinct keys and targets at concurrency 32: all admitted,
// no 5xx. (Before the quota was sharded, 18 of 400 got 202 and 382 got 503.)
func TestOneTenantAdmits400UnderConflicts(t *testing.T) {
	t.Parallel()
	var proxy *conflictproxy.Proxy
	e := newEnv(t, withConflicts(&proxy))
	results := parallelN(400, 32, func(i int) res { return e.admit(fmt.Sprintf("k-%d", i), demo(fmt.Sprintf("t-%d", i))) })
	for i, r := range results {
		if r.status != 202 {
			t.Fatalf("admission %d: %d %s", i, r.status, r.body)
		}
	}
	if n := e.operations(); n != 400 {
		t.Fatalf("%d operations, want 400", n)
	}
	t.Logf("proxy: %+v", proxy.Stats())
}

// The quota holds exactly under conflicts: with a quota of 40, 40 of 100 distinct
// admissions are 202 and the other 60 are 429, none 5xx.
func TestQuotaExactUnderConflicts(t *testing.T) {
	t.Parallel()
	var proxy *conflictproxy.Proxy
	quotaExact(t, newEnv(t, withConflicts(&proxy), withQuota(40)), proxy, 40)
}

// The same on a slow store, where every request waits 150 ms.
func TestQuotaExactOnASlowStore(t *testing.T) {
	t.Parallel()
	var proxy *conflictproxy.Proxy
	quotaExact(t, newEnv(t, withSlowConflicts(&proxy, slowStore), withQuota(40)), proxy, 40)
}

func quotaExact(t *testing.T, e *env, proxy *conflictproxy.Proxy, quota int) {
	t.Helper()
	results := parallelN(100, 32, func(i int) res { return e.admit(fmt.Sprintf("k-%d", i), demo(fmt.Sprintf("t-%d", i))) })
	accepted, over := 0, 0
	for i, r := range results {
		switch {
		case r.status == 202:
			accepted++
		case r.status == 429 && r.json["code"] == "quota_exceeded":
			over++
		default:
			t.Fatalf("admission %d: %d %s", i, r.status, r.body)
		}
	}
	if accepted != quota || over != 100-quota || e.operations() != quota {
		t.Fatalf("accepted %d, over quota %d, operations %d; want %d, %d, %d", accepted, over, e.operations(), quota, 100-quota, quota)
	}
	t.Logf("proxy: %+v", proxy.Stats())
}
