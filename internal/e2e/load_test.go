package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Issue #8's load test, through the whole stack with its DynamoDB behind the conflict proxy:
// 1,000 admissions at concurrency 32, 30% of them duplicates of others (same key, same
// body), give no 5xx, exactly one operation per key, and every operation ends.
func TestThousandAdmissionsWithDuplicatesUnderConflicts(t *testing.T) {
	if conflicts == nil {
		t.Log("DynamoDB is not behind the conflict proxy here: this run proves the plain case")
	}
	c := alice(t)
	const total, unique, concurrency = 1000, 700, 32
	run := time.Now().UnixNano()
	keys := make([]string, total)
	for i := range total {
		keys[i] = fmt.Sprintf("e2e-load-%d-%d", run, i%unique) // requests 700… repeat keys 0…299
	}
	bodyOf := func(k int) string {
		return fmt.Sprintf(`{"type":"demo.task","input":{"target":"e2e-load-%d-%d"}}`, run, k%unique)
	}
	var before int64
	if conflicts != nil {
		before = conflicts.Stats().Cancelled
	}
	results := make([]response, total)
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	// Duplicates are interleaved with their originals' neighbourhood, so many race them.
	order := make([]int, 0, total)
	for i := range unique {
		order = append(order, i)
		if i < total-unique {
			order = append(order, unique+i)
		}
	}
	for _, i := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = c.do(http.MethodPost, "/v1/operations", keys[i], bodyOf(i))
		}()
	}
	wg.Wait()

	byKey := map[string]string{}
	for i, r := range results {
		if r.status != http.StatusAccepted {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
		id, _ := r.json["operationId"].(string)
		if prev, ok := byKey[keys[i]]; ok && prev != id {
			t.Fatalf("key %s admitted two operations: %s and %s", keys[i], prev, id)
		}
		byKey[keys[i]] = id
	}
	if len(byKey) != unique {
		t.Fatalf("%d keys, want %d", len(byKey), unique)
	}
	if conflicts != nil {
		t.Logf("transactions cancelled by conflicts during the load: %d", conflicts.Stats().Cancelled-before)
	}

	// Every operation ends: poll each until it is terminal.
	deadline := time.Now().Add(3 * time.Minute)
	pending := make([]string, 0, unique)
	for _, id := range byKey {
		pending = append(pending, id)
	}
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d operations not terminal after 3 minutes, e.g. %s", len(pending), pending[0])
		}
		var mu sync.Mutex
		var still []string
		for _, id := range pending {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
				if r.status != http.StatusOK || r.json["terminal"] != true {
					if r.status >= 500 {
						t.Errorf("GET %s: %d %s", id, r.status, r.body)
					}
					mu.Lock()
					still = append(still, id)
					mu.Unlock()
				} else if r.json["state"] != "succeeded" {
					t.Errorf("%s ended %s: %s", id, r.json["state"], r.body)
				}
			}()
		}
		wg.Wait()
		pending = still
		if len(pending) > 0 {
			time.Sleep(time.Second)
		}
	}
}
