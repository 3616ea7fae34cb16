package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// waitState polls (quickly: this is a test watching a transition) until id is in state.
func (c client) waitState(id, state string, within time.Duration) response {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := c.do(http.MethodGet, "/v1/operations/"+id, "", "")
		if r.json["state"] == state {
			return r
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s is %s, not %s, after %v: %s", id, r.json["state"], state, within, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c client) cancel(id string, ifMatch string) response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, stack.APIURL+"/v1/operations/"+id+"/cancel", nil)
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	return c.send(req)
}

func executionOutput(t *testing.T, id string) (sfntypes.ExecutionStatus, string) {
	t.Helper()
	out, err := stack.StepFunctions.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{
		ExecutionArn: aws.String(strings.Replace(stack.StateMachines["demo-task"], ":stateMachine:", ":execution:", 1) + ":" + id)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Status, aws.ToString(out.Output)
}

// Cancel during a run: the workflow stops at the worker's next intent check, records
// canceled itself, and the remaining steps never run.
func TestCancelDuringARun(t *testing.T) {
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"cancel-run","steps":10,"sleepMs":400}}`)
	c.waitState(id, "running", 10*time.Second)
	start := time.Now()
	r := c.cancel(id, "")
	if r.status != http.StatusAccepted || r.json["state"] != "cancelling" || r.json["cancelRequested"] != true {
		t.Fatalf("%d %s", r.status, r.body)
	}
	done := c.poll(id, 20*time.Second)
	if done.json["state"] != "canceled" || time.Since(start) > 3*time.Second {
		t.Fatalf("after %v: %s", time.Since(start), done.body)
	}
	status, output := executionOutput(t, id)
	var state struct {
		Task struct{ Report struct{ Step int } }
	}
	_ = json.Unmarshal([]byte(output), &state)
	if status != sfntypes.ExecutionStatusSucceeded || state.Task.Report.Step >= 9 {
		t.Fatalf("execution %s stopped at step %d: %s", status, state.Task.Report.Step, output)
	}
	// A late success for it (a retried recorder, a stale worker) changes nothing.
	payload := fmt.Sprintf(`{"operationId":%q,"task":{"report":{"done":true,"outcome":"succeeded","result":{}}}}`, id)
	if _, err := stack.Lambda.Invoke(context.Background(), invokeInput(stack.function("recorder"), []byte(payload))); err != nil {
		t.Fatal(err)
	}
	if g := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); g.json["state"] != "canceled" || g.json["version"] != done.json["version"] {
		t.Fatalf("a late result moved a canceled operation: %s", g.body)
	}
	checkEvents(t, id, int(done.json["version"].(float64)), "canceled")
}

func TestCancelBeforeDispatchThroughTheAPI(t *testing.T) {
	c := alice(t)
	var id string
	paused(t, func() {
		id = c.admit(`{"type":"demo.task","input":{"target":"cancel-early"}}`)
		r := c.cancel(id, `"1"`)
		if r.status != http.StatusAccepted || r.json["state"] != "canceled" {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
	time.Sleep(time.Second) // the dispatcher gets the record now, and must start nothing
	if n := executions(t, id); n != 0 {
		t.Fatalf("%d executions", n)
	}
	if r := c.cancel(id, ""); r.status != http.StatusOK || r.json["state"] != "canceled" {
		t.Fatalf("repeat: %d %s", r.status, r.body)
	}
}

// A cancel racing dispatch, in each ordering, ends canceled in exactly one right way:
//   - the cancel lands before the worker starts (between the dispatcher's read and
//     StartExecution, or after StartExecution but before the worker's started): the API
//     cancels at once (cancel_requested and canceled, by the client), no step runs, the
//     dispatcher loses its append and stops the only execution;
//   - the worker starts first (issue #12, lifecycle defect 1): the API records only the
//     intent, the dispatcher's append loses and it records nothing and stops nothing (nor does
//     the record the stream delivers later), and the workflow ends by itself at the worker's
//     next intent check, its recorder recording canceled. Before the fix the dispatcher saw
//     "cancel requested, no execution recorded", recorded canceled and stopped the execution
//     mid-step.
//
// "after start" leaves the ordering to the race and checks whichever happened.
func TestCancelRacingDispatch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before      bool // cancel before StartExecution
		waitRunning bool // after StartExecution, wait for the worker's started, then cancel
	}{
		{name: "before start", before: true},
		{name: "after start"},
		{name: "after the worker started", waitRunning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := alice(t)
			var id string
			cancel := func() {
				if tc.waitRunning {
					deadline := time.Now().Add(10 * time.Second)
					for state(t, id).State != operation.Running {
						if time.Now().After(deadline) {
							t.Fatalf("the worker did not start: %s", state(t, id).State)
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
				if r := c.cancel(id, ""); r.status != http.StatusAccepted {
					t.Errorf("cancel: %d %s", r.status, r.body)
				}
			}
			paused(t, func() {
				id = c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"cancel-race-%d","steps":5,"sleepMs":300}}`, time.Now().UnixNano()))
				h := hookExecutor{crashingExecutor: crashingExecutor{Executor: realExecutor()}, after: cancel}
				if tc.before {
					h = hookExecutor{crashingExecutor: h.crashingExecutor, before: cancel}
				}
				if err := dispatcher(h).Dispatch(context.Background(), id); err != nil {
					t.Fatal(err)
				}
			})
			r := c.poll(id, 20*time.Second)
			if r.json["state"] != "canceled" || executions(t, id) != 1 {
				t.Fatalf("%s, %d executions", r.body, executions(t, id))
			}
			var status sfntypes.ExecutionStatus
			var output string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if status, output = executionOutput(t, id); status != sfntypes.ExecutionStatusRunning {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the execution is still running after cancellation")
				}
			}
			time.Sleep(500 * time.Millisecond) // the record the stream held reaches the dispatcher
			history, err := store().Facts(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			started := false
			for _, f := range history {
				got = append(got, string(f.Kind)+"/"+string(f.Source))
				started = started || f.Kind == operation.KindStarted
			}
			switch {
			case tc.before && started, tc.waitRunning && !started:
				t.Fatalf("the ordering was not the one forced: %v", got)
			case !started:
				// The cancel came first: canceled at once by the API, nothing ran.
				if want := "accepted/admission cancel_requested/client canceled/client"; strings.Join(got, " ") != want {
					t.Errorf("facts %v, want %s", got, want)
				}
				if r.json["observedAt"] != nil {
					t.Errorf("an executor reported, though nothing ran: %s", r.body)
				}
			default:
				// The worker came first: the workflow stopped itself at the next intent check
				// and recorded canceled; nobody recorded for it, and nobody stopped it.
				if want := "accepted/admission started/executor cancel_requested/client canceled/executor"; strings.Join(got, " ") != want {
					t.Errorf("facts %v, want %s", got, want)
				}
				var end struct {
					Gate struct{ Decision struct{ Next string } }
				}
				_ = json.Unmarshal([]byte(output), &end)
				if status != sfntypes.ExecutionStatusSucceeded || end.Gate.Decision.Next != "done" {
					t.Errorf("the execution did not end by itself at an intent check: %s %s", status, output)
				}
			}
			if g := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); g.json["state"] != "canceled" || g.json["version"] != r.json["version"] {
				t.Fatalf("moved after cancel: %s", g.body)
			}
			t.Logf("facts %v; execution %s", got, status)
		})
	}
}

type hookExecutor struct {
	crashingExecutor
	before, after func()
}

func (h hookExecutor) Start(ctx context.Context, workflow, name string, input []byte) (string, error) {
	if h.before != nil {
		h.before()
	}
	ref, err := h.crashingExecutor.Start(ctx, workflow, name, input)
	if h.after != nil {
		h.after()
	}
	return ref, err
}

func TestCancelAfterSuccessAndStaleIfMatch(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"cancel-late"}}`)
	done := c.poll(id, 20*time.Second)
	r := c.cancel(id, "")
	if r.status != http.StatusConflict || r.json["code"] != "already_terminal" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	other := c.admit(`{"type":"demo.task","input":{"target":"cancel-stale","steps":5,"sleepMs":300}}`)
	c.waitState(other, "running", 10*time.Second)
	if r := c.cancel(other, `"1"`); r.status != http.StatusPreconditionFailed || r.json["code"] != "version_mismatch" {
		t.Fatalf("stale If-Match: %d %s", r.status, r.body)
	}
	_ = done
}

// The worker acts and then its result is lost: outcome_unknown, said out loud, not retried;
// an operator settles it, and a normal caller may not.
func TestUnknownOutcomeAndRepair(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"repair","steps":2,"outcome":"unknown"}}`)
	r := c.poll(id, 20*time.Second)
	p, _ := r.json["problem"].(map[string]any)
	if r.json["state"] != "outcome_unknown" || p["code"] != "worker_error" {
		t.Fatalf("%s", r.body)
	}
	time.Sleep(4 * time.Second) // past the reconciler's check lease: it must not retry either
	facts, err := store().Facts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, f := range facts {
		if f.Kind == operation.KindStarted {
			started++
		}
	}
	if executions(t, id) != 1 || started != 1 || facts[len(facts)-1].Kind != operation.KindOutcomeUnknown {
		t.Fatalf("retried: %d executions, %d starts, last %s", executions(t, id), started, facts[len(facts)-1].Kind)
	}
	body := `{"outcome":"succeeded","reason":"The target confirms the build ran.","result":{"confirmedBy":"ops"}}`
	resolve := func(token string) response {
		req, _ := http.NewRequest(http.MethodPost, stack.APIURL+"/v1/operations/"+id+"/resolve", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return client{t, token}.send(req)
	}
	if f := resolve("alice-dev-token"); f.status != http.StatusForbidden || f.json["code"] != "forbidden" {
		t.Fatalf("alice resolved: %d %s", f.status, f.body)
	}
	s := resolve("ops-dev-token")
	if s.status != http.StatusOK || s.json["state"] != "succeeded" {
		t.Fatalf("%d %s", s.status, s.body)
	}
	if g := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); g.json["state"] != "succeeded" {
		t.Fatalf("%s", g.body)
	}
	checkEvents(t, id, int(s.json["version"].(float64)), "succeeded")
}

// The process dies after the outcome fact, before notification (the notifier is held):
// polling sees the terminal state at once; the event still arrives later.
func TestNotificationAfterACrash(t *testing.T) {
	c := alice(t)
	stack.Pause("notifier")
	time.Sleep(300 * time.Millisecond) // a batch already in flight finishes
	id := c.admit(`{"type":"demo.task","input":{"target":"notify-late"}}`)
	r := c.waitState(id, "succeeded", 20*time.Second)
	time.Sleep(500 * time.Millisecond)
	if n := len(bus.of(id)); n != 0 {
		stack.Resume("notifier")
		t.Fatalf("%d events while the notifier was held", n)
	}
	stack.Resume("notifier")
	checkEvents(t, id, int(r.json["version"].(float64)), "succeeded")
}

func TestEventsForEveryEnd(t *testing.T) {
	t.Parallel()
	c := alice(t)
	for _, tc := range []struct{ input, state string }{
		{`{"target":"ev-ok","steps":2}`, "succeeded"},
		{`{"target":"ev-fail","outcome":"fail"}`, "failed"},
	} {
		id := c.admit(`{"type":"demo.task","input":` + tc.input + `}`)
		r := c.poll(id, 20*time.Second)
		if r.json["state"] != tc.state {
			t.Fatalf("%s", r.body)
		}
		checkEvents(t, id, int(r.json["version"].(float64)), tc.state)
	}
}

// With the stream consumer off, the reconciler dispatches accepted operations once each.
func TestReconcilerDispatchesWhenTheStreamIsOff(t *testing.T) {
	c := alice(t)
	stack.Pause("dispatcher")
	var ids []string
	for i := range 3 {
		ids = append(ids, c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"rec-%d-%d"}}`, time.Now().UnixNano(), i)))
	}
	for _, id := range ids {
		if r := c.poll(id, 30*time.Second); r.json["state"] != "succeeded" {
			stack.Resume("dispatcher")
			t.Fatalf("%s", r.body)
		}
	}
	stack.Resume("dispatcher")
	time.Sleep(time.Second) // the held records now reach the dispatcher, which must start nothing
	for _, id := range ids {
		if n := executions(t, id); n != 1 {
			t.Errorf("%s: %d executions", id, n)
		}
	}
}

// An execution stopped behind the system's back is noticed and recorded. StopExecution does
// not stop the recorder's Run in flight (nor, before Run, the step in flight): the Run goes
// on until it hands back to the workflow, here when the local Run budget (15 s) leaves no
// room for another 1 s step, and finds no workflow to go on. The reconciler, seeing no fact
// for its check lease, the execution aborted and no step in flight (the Run's lease was
// over), says the work failed: nothing can have acted unseen.
func TestExecutionStoppedBehindTheBack(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(`{"type":"demo.task","input":{"target":"stopped","steps":20,"sleepMs":1000}}`)
	c.waitState(id, "running", 10*time.Second)
	arn := strings.Replace(stack.StateMachines["demo-task"], ":stateMachine:", ":execution:", 1) + ":" + id
	if _, err := stack.StepFunctions.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	r := c.poll(id, 45*time.Second)
	p, _ := r.json["problem"].(map[string]any)
	if r.json["state"] != "failed" || p["code"] != "execution_ended" {
		t.Fatalf("%s", r.body)
	}
}

func TestListAcrossTenants(t *testing.T) {
	a, b := alice(t), client{t, "bob-dev-token"}
	tag := fmt.Sprint(time.Now().UnixNano())
	var mine, theirs []string
	for i := range 3 {
		mine = append(mine, a.admit(fmt.Sprintf(`{"type":"export.orders","input":{"from":"2025-01-0%d","to":"2025-02-01"}}`, i+1)))
	}
	theirs = append(theirs, b.admit(`{"type":"demo.task","input":{"target":"list-`+tag+`"}}`))
	seen := map[string]bool{}
	cursor := ""
	for range 50 {
		path := "/v1/operations?type=export.orders&limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := a.do(http.MethodGet, path, "", "")
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		for _, it := range r.json["items"].([]any) {
			item := it.(map[string]any)
			if item["type"] != "export.orders" {
				t.Fatalf("filter: %v", item)
			}
			seen[item["operationId"].(string)] = true
		}
		next, _ := r.json["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	for _, id := range mine {
		if !seen[id] {
			t.Errorf("alice's %s missing from her list", id)
		}
	}
	for _, id := range theirs {
		if seen[id] {
			t.Errorf("bob's %s in alice's list", id)
		}
	}
	if r := b.do(http.MethodGet, "/v1/operations?cursor="+cursor, "", ""); cursor != "" && r.status != 400 {
		t.Fatalf("bob used alice's cursor: %d", r.status)
	}
}
