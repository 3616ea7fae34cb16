package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// The workers of the types test.node and test.python (testdata/workers, their local
// entries in testdata/e2e.types.yaml) are written with the TypeScript and Python SDKs
// (sdk/typescript, built; sdk/python) and run by the local stack's managed runtimes, as
// AWS's Node.js and Python runtimes would run them. Both do the same steps for the same
// input, so each test below holds both languages to the same results.
//
// managedRuntimesReady says what the local stack lacks to run those workers, before the
// stack starts: a worker that cannot load would stop it with an error far from the cause.
func managedRuntimesReady(root string) error {
	for _, bin := range []string{"node", "python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s is not on PATH: the local stack runs the test.node and test.python workers (testdata/workers) with node and python3", bin)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "sdk", "typescript", "dist", "src", "index.js")); err != nil {
		return fmt.Errorf("the TypeScript SDK is not built, and the test.node worker imports it (%v): run make sdk-typescript-build (make e2e-rest, e2e-load and e2e-plain do)", err)
	}
	return nil
}

// Carried state and progress: three steps (the schema's default, applied before the worker
// sees the input), each handing every step number so far to the next, the last succeeding
// with them.
func TestSDKWorkersSucceedWithCarriedStateAndProgress(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"node", "python"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			c := alice(t)
			name := fmt.Sprintf("e2e-sdk-ok-%d", time.Now().UnixNano())
			id := c.admit(fmt.Sprintf(`{"type":"test.%s","input":{"name":%q,"outcome":"succeed"}}`, lang, name))
			r := c.poll(id, 90*time.Second)
			result, _ := r.json["result"].(map[string]any)
			runtime, _ := result["runtime"].(string)
			if r.json["state"] != "succeeded" || result["name"] != name || fmt.Sprint(result["seen"]) != "[1 2 3]" ||
				result["maxSteps"] != 10.0 || !strings.HasPrefix(runtime, lang+" ") {
				t.Fatalf("%s", r.body)
			}
			p, _ := r.json["progress"].(map[string]any)
			if p["completedSteps"] != 3.0 || p["totalSteps"] != 3.0 || p["percent"] != 100.0 || p["message"] != "step 3 of 3" {
				t.Fatalf("progress %v", r.json["progress"])
			}
			if stack.local == nil {
				return // the log file is the local stack's
			}
			// The SDK's own line per step, from the worker's process: proof that the step ran
			// in that runtime, through the SDK's handler.
			fn := "worker-test-" + lang
			var statuses []string
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				statuses = statuses[:0]
				for _, line := range linesOf(t, id)[fn] {
					if line["message"] == "step" {
						statuses = append(statuses, fmt.Sprintf("%v:%v", line["step"], line["status"]))
					}
				}
				if len(statuses) >= 3 || time.Now().After(deadline) {
					break
				}
			}
			if fmt.Sprint(statuses) != "[1:continue 2:continue 3:succeeded]" {
				t.Fatalf("%s's step lines for %s: %v (the stack's log: %s)", fn, id, statuses, logPath)
			}
		})
	}
}

// A typed failure: the worker reports failed with its own problem code at step 2, and the
// API shows it as the operation's problem, with the code's problem type.
func TestSDKWorkersFailWithATypedProblem(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"node", "python"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			c := alice(t)
			id := c.admit(fmt.Sprintf(`{"type":"test.%s","input":{"name":"e2e-sdk-fail-%d","outcome":"fail"}}`, lang, time.Now().UnixNano()))
			r := c.poll(id, 90*time.Second)
			p, _ := r.json["problem"].(map[string]any)
			if r.json["state"] != "failed" || r.json["terminal"] != true || r.json["result"] != nil || p["code"] != "asked_to_fail" ||
				p["type"] != "https://longrun.dev/problems/asked_to_fail" || p["title"] != "The worker failed as asked." ||
				p["detail"] != fmt.Sprintf("The %s worker failed at step 2.", lang) {
				t.Fatalf("%s", r.body)
			}
			// Step 1 completed before the failing step: the carried state reached step 2.
			if progress, _ := r.json["progress"].(map[string]any); progress["completedSteps"] == nil || progress["completedSteps"].(float64) < 1 {
				t.Fatalf("progress %v", r.json["progress"])
			}
		})
	}
}

// A delay: step 1 asks for 2 seconds, the history says until when the work waits, and step
// 2 runs after that and succeeds, saying how long it waited since step 1.
func TestSDKWorkersWaitThenSucceed(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"node", "python"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			c := alice(t)
			id := c.admit(fmt.Sprintf(`{"type":"test.%s","input":{"name":"e2e-sdk-wait-%d","outcome":"wait"}}`, lang, time.Now().UnixNano()))
			r := c.poll(id, 90*time.Second)
			result, _ := r.json["result"].(map[string]any)
			waited, _ := result["waitedMs"].(float64)
			if r.json["state"] != "succeeded" || waited < 2000 || !strings.HasPrefix(fmt.Sprint(result["runtime"]), lang+" ") {
				t.Fatalf("%s", r.body)
			}
			if p, _ := r.json["progress"].(map[string]any); p["completedSteps"] != 2.0 || p["percent"] != 100.0 || p["message"] != "Waited." {
				t.Fatalf("progress %v", r.json["progress"])
			}

			h := c.do(http.MethodGet, "/v1/operations/"+id+"/history", "", "")
			entries, _ := h.json["entries"].([]any)
			if h.status != http.StatusOK || len(entries) == 0 {
				t.Fatalf("history: %d %s", h.status, h.body)
			}
			var until time.Time
			for i, e := range entries {
				e := e.(map[string]any)
				at, err := time.Parse(operation.TimeFormat, fmt.Sprint(e["at"]))
				if err != nil {
					t.Fatalf("history entry %d: %v", i, err)
				}
				if w, ok := e["waitingUntil"].(string); ok {
					// The wait's fact: after step 1, which asked for it with its progress.
					p, _ := e["progress"].(map[string]any)
					if until, err = time.Parse(operation.TimeFormat, w); err != nil || p["completedSteps"] != 1.0 || p["message"] != "Waiting 2 s." {
						t.Fatalf("the wait's entry %v (%v): %s", e, err, h.body)
					}
					if d := until.Sub(at); d <= 0 || d > 2*time.Second {
						t.Fatalf("waiting %v from %v: %s", d, at, h.body)
					}
				}
				if i == len(entries)-1 && (e["kind"] != "succeeded" || until.IsZero() || at.Before(until)) {
					t.Fatalf("the last entry %v, after a wait until %v: %s", e, until, h.body)
				}
			}
		})
	}
}
