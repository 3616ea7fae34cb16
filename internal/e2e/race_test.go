package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// Issue #8: a cancel racing dispatch, the steps and the outcome's recording, with the
// stack's DynamoDB refusing overlapping transactions as on AWS, never loses the cancel or
// the outcome. Each of 24 operations is cancelled at a random moment between its admission
// and its end; whatever the interleaving:
//   - no request is answered 5xx;
//   - an accepted cancel (202) is in the facts (cancel_requested, or canceled straight from
//     accepted), and the operation ends canceled, or with the outcome that raced it and won;
//   - a refused cancel (409) came after the end;
//   - the facts are one legal history with exactly one terminal fact, and the operation
//     let go of its target (a new operation on the same target is admitted).
func TestCancelRacingTheLifecycleUnderConflicts(t *testing.T) {
	t.Parallel()
	c := alice(t)
	run := time.Now().UnixNano()
	const n = 24
	var mu sync.Mutex
	outcomes := map[string]int{} // "cancel answer → final state", to show the interleavings seen
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := fmt.Sprintf("e2e-cancel-race-%d-%d", run, i)
			body := fmt.Sprintf(`{"type":"demo.task","input":{"target":%q,"steps":3,"sleepMs":40}}`, target)
			id := c.admit(body)
			time.Sleep(time.Duration(rand.N(int64(300 * time.Millisecond))))
			cancel := c.cancel(id, "")
			final := c.poll(id, 60*time.Second)
			op := state(t, id)
			checkCancelRace(t, id, cancel, final, op)
			mu.Lock()
			outcomes[fmt.Sprintf("%d %v → %s", cancel.status, cancel.json["state"], op.State)]++
			mu.Unlock()
			// The target is free again: the terminal fact released its lock.
			if r := c.do(http.MethodPost, "/v1/operations", newKey(), body); r.status != http.StatusAccepted {
				t.Errorf("%s: the target is still held after the end: %d %s", id, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	t.Logf("cancel answer → final state: %v", outcomes)
	if conflicts != nil {
		t.Logf("proxy: %+v", conflicts.Stats())
	}
}

func checkCancelRace(t *testing.T, id string, cancel, final response, op operation.Operation) {
	t.Helper()
	facts, err := store().Facts(context.Background(), id)
	if err != nil {
		t.Errorf("%s: %v", id, err)
		return
	}
	if _, err := operation.Fold(id, facts); err != nil {
		t.Errorf("%s: not a legal history: %v", id, err)
	}
	terminal, intent := 0, false
	for _, f := range facts {
		switch f.Kind {
		case operation.KindSucceeded, operation.KindFailed, operation.KindCanceled:
			terminal++
		}
		if f.Kind == operation.KindCancelRequested {
			intent = true
		}
	}
	if terminal != 1 || !op.State.Terminal() {
		t.Errorf("%s: %d terminal facts, state %s", id, terminal, op.State)
	}
	switch {
	case cancel.status >= 500:
		t.Errorf("%s: cancel answered %d %s", id, cancel.status, cancel.body)
	case cancel.status == http.StatusAccepted:
		// The intent must be in the facts, whichever way the race ended.
		if !intent {
			t.Errorf("%s: cancel was accepted (%s) but no cancel_requested fact exists; facts end %s", id, cancel.json["state"], op.State)
		}
		if op.State != operation.Canceled && op.State != operation.Succeeded {
			t.Errorf("%s: cancelled, then ended %s", id, op.State)
		}
	case cancel.status == http.StatusConflict && cancel.json["code"] == "already_terminal":
		if intent {
			t.Errorf("%s: a refused cancel left an intent", id)
		}
	default:
		t.Errorf("%s: cancel answered %d %s", id, cancel.status, cancel.body)
	}
	if final.json["state"] != string(op.State) {
		t.Errorf("%s: the API says %s, the facts %s", id, final.json["state"], op.State)
	}
}
