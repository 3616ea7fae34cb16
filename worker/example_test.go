package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

// exportInput is the input of a made-up "export.bucket" type.
type exportInput struct {
	Bucket string `json:"bucket"`
}

// job is the state export carries from step to step.
type job struct {
	ID string `json:"id"`
}

// jobs stands in for an external system that runs exports: a job is done after two polls.
var jobs struct {
	submitted map[string]string // operation id → job id: submit is deduplicated on it
	polls     map[string]int
}

func submit(_ context.Context, bucket, operationID string) (string, error) {
	if id, ok := jobs.submitted[operationID]; ok {
		return id, nil // a redelivered step request: the same job
	}
	id := fmt.Sprintf("job-%s-%d", bucket, len(jobs.submitted)+1)
	jobs.submitted[operationID] = id
	return id, nil
}

func finished(_ context.Context, id string) (bool, error) {
	jobs.polls[id]++
	return jobs.polls[id] > 2, nil
}

// export is the polling worker of the package documentation: it submits a job on the first
// step, then polls it once per step, longrun waiting between the steps.
func export(ctx context.Context, s worker.Step, in exportInput) (worker.Report, error) {
	var j job
	if ok, err := s.State(&j); err != nil {
		return worker.Report{}, err
	} else if !ok { // the first step: submit the job, once per operation
		id, err := submit(ctx, in.Bucket, s.OperationID)
		if err != nil {
			return worker.Report{}, err
		}
		return worker.Continue(job{ID: id}).After(30 * time.Second), nil
	}
	done, err := finished(ctx, j.ID)
	if err != nil {
		return worker.Report{}, err
	}
	if !done {
		return worker.Continue(j).Wait(), nil // again after the type's stepDelay
	}
	return worker.Succeed(map[string]string{"jobId": j.ID}), nil
}

// A worker that polls an external system, run step by step as longrun runs it: each report's
// state is the next request's.
func Example() {
	jobs.submitted, jobs.polls = map[string]string{}, map[string]int{}
	req := worker.Request{
		Protocol: worker.Protocol, OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3", Type: "export.bucket", Version: 1,
		Input: json.RawMessage(`{"bucket":"invoices"}`), Step: 1, MaxSteps: 20,
		Deadline: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), StepTimeoutSeconds: 60,
	}
	for {
		rep, err := worker.Run(context.Background(), export, req)
		if err != nil {
			fmt.Println("invocation failed:", err)
			return
		}
		out, _ := json.Marshal(rep)
		fmt.Printf("step %d: %s\n", req.Step, out)
		if rep.Status() != worker.StatusContinue {
			return
		}
		req.Step++
		req.State = rep.State()
	}
	// Output:
	// step 1: {"status":"continue","state":{"id":"job-invoices-1"},"delaySeconds":30}
	// step 2: {"status":"continue","state":{"id":"job-invoices-1"},"wait":true}
	// step 3: {"status":"continue","state":{"id":"job-invoices-1"},"wait":true}
	// step 4: {"status":"succeeded","result":{"jobId":"job-invoices-1"}}
}

// A team's unit test runs its Func on a Request, without Lambda, and looks at the Report.
func ExampleRun() {
	count := func(_ context.Context, s worker.Step, in struct {
		Items []string `json:"items"`
	}) (worker.Report, error) {
		if len(in.Items) == 0 {
			return worker.Fail("nothing_to_count", "There is nothing to count.", ""), nil
		}
		return worker.Succeed(map[string]int{"count": len(in.Items)}), nil
	}
	rep, err := worker.Run(context.Background(), count, worker.Request{Step: 1, Input: json.RawMessage(`{"items":["a","b"]}`)})
	fmt.Println(rep.Status(), string(rep.Result()), err)

	rep, _ = worker.Run(context.Background(), count, worker.Request{Step: 1, Input: json.RawMessage(`{"items":[]}`)})
	fmt.Println(rep.Status(), rep.Problem().Code)

	rep, _ = worker.Run(context.Background(), count, worker.Request{Step: 1, Input: json.RawMessage(`{"items":"a"}`)})
	fmt.Println(rep.Status(), rep.Problem().Code)
	// Output:
	// succeeded {"count":2} <nil>
	// failed nothing_to_count
	// failed invalid_input
}

// Continue carries state to the next step; progress may go with any report.
func ExampleContinue() {
	rep := worker.Continue(map[string]int{"page": 3}).
		After(90 * time.Second).
		WithProgress(worker.Progress{TotalSteps: 10, Percent: new(30.0), Message: "3 of 10 pages"})
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	// Output:
	// {"status":"continue","state":{"page":3},"progress":{"totalSteps":10,"percent":30,"message":"3 of 10 pages"},"delaySeconds":90}
}

// Fail cuts a detail longer than the protocol allows, so an error message of any length
// still makes a failed report rather than a failed invocation (outcome unknown).
func ExampleFail() {
	err := errors.New("the provisioner refused: " + strings.Repeat("template too large; ", 200))
	rep := worker.Fail("template_refused", "The provisioner refused the template.", err.Error())
	detail := []rune(rep.Problem().Detail)
	fmt.Printf("%d characters, the last %q\n", len(detail), detail[len(detail)-1])
	// Output:
	// 2000 characters, the last '…'
}

// A *Problem returned as the error is a failed report, not a failed invocation: the work
// says it did not happen. Any other error fails the invocation (outcome unknown).
func ExampleProblem() {
	errQuota := &worker.Problem{Code: "quota_exhausted", Title: "The export quota is exhausted."}
	charge := func(_ context.Context, _ worker.Step, in struct {
		Cents int `json:"cents"`
	}) (worker.Report, error) {
		if in.Cents > 1000 {
			return worker.Report{}, fmt.Errorf("charge %d: %w", in.Cents, errQuota)
		}
		return worker.Report{}, errors.New("the connection dropped after the charge")
	}
	h := worker.Handler(charge)
	out, err := h(context.Background(), json.RawMessage(`{"protocol":"longrun.step.v1","operationId":"op_01JDY3Q4W5E6R7T8Y9V0A1B2C3",
		"type":"payment.charge","version":1,"input":{"cents":5000},"step":1,"maxSteps":1,
		"deadline":"2026-12-01T12:00:00.000Z","stepTimeoutSeconds":30}`))
	fmt.Printf("report %s, error %v\n", out, err)
	out, err = h(context.Background(), json.RawMessage(`{"protocol":"longrun.step.v1","operationId":"op_01JDY3Q4W5E6R7T8Y9V0A1B2C3",
		"type":"payment.charge","version":1,"input":{"cents":50},"step":1,"maxSteps":1,
		"deadline":"2026-12-01T12:00:00.000Z","stepTimeoutSeconds":30}`))
	fmt.Printf("report %s, error %v\n", out, err)
	// Output:
	// report {"status":"failed","problem":{"code":"quota_exhausted","title":"The export quota is exhausted."}}, error <nil>
	// report , error the connection dropped after the charge
}

// A step reads the state the previous step carried; the first step has none.
func ExampleStep_State() {
	next := func(_ context.Context, s worker.Step, _ struct{}) (worker.Report, error) {
		var cursor string
		if ok, err := s.State(&cursor); err != nil {
			return worker.Report{}, err
		} else if !ok {
			cursor = "start"
		}
		fmt.Printf("step %d reads from %q\n", s.Number, cursor)
		return worker.Continue(fmt.Sprintf("after-%d", s.Number)), nil
	}
	rep, _ := worker.Run(context.Background(), next, worker.Request{Step: 1, Input: json.RawMessage(`{}`)})
	_, _ = worker.Run(context.Background(), next, worker.Request{Step: 2, Input: json.RawMessage(`{}`), State: rep.State()})
	// Output:
	// step 1 reads from "start"
	// step 2 reads from "after-1"
}

// A step that needs a person's approval waits for the signal "approval" (at most three
// days) rather than polling for it: nothing runs meanwhile. The next step runs when the
// approval arrives, and reads it, or when the wait times out.
func ExampleReport_AwaitSignal() {
	type approval struct {
		Approved bool   `json:"approved"`
		Comment  string `json:"comment"`
	}
	change := func(_ context.Context, s worker.Step, in struct {
		Service string `json:"service"`
	}) (worker.Report, error) {
		if s.Awaited == nil { // the first step: ask for the approval (by chat, say), then wait for it
			return worker.Continue(map[string]string{"service": in.Service}).AwaitSignal("approval", 72*time.Hour), nil
		}
		if s.Awaited.TimedOut {
			return worker.Fail("not_approved", "No one approved the change in time.", ""), nil
		}
		sig, _ := s.Signal("approval") // the last approval sent, should there be several
		var a approval
		if err := sig.Decode(&a); err != nil {
			return worker.Report{}, err
		}
		if !a.Approved {
			return worker.Fail("rejected", "The change was rejected.", a.Comment), nil
		}
		return worker.Succeed(map[string]string{"approvedBy": sig.Sender}), nil
	}
	run := func(req worker.Request) worker.Report {
		rep, err := worker.Run(context.Background(), change, req)
		out, _ := json.Marshal(rep)
		fmt.Printf("step %d: %s %v\n", req.Step, out, err)
		return rep
	}

	first := run(worker.Request{Step: 1, Input: json.RawMessage(`{"service":"billing"}`)})

	// longrun runs step 2 when the approval arrives, the signal among the step's signals.
	run(worker.Request{Step: 2, Input: json.RawMessage(`{"service":"billing"}`), State: first.State(),
		Signals: []worker.Signal{{
			Name: "approval", Data: json.RawMessage(`{"approved":true,"comment":"Go ahead."}`),
			ReceivedAt: time.Date(2026, 12, 2, 14, 5, 16, 0, time.UTC), Sender: "arn:aws:iam::123456789012:user/alice", Via: worker.ViaAPI,
		}},
		Awaited: &worker.Awaited{Signal: "approval"}})

	// Or after three days without one, the wait timed out.
	run(worker.Request{Step: 2, Input: json.RawMessage(`{"service":"billing"}`), State: first.State(),
		Awaited: &worker.Awaited{Signal: "approval", TimedOut: true}})
	// Output:
	// step 1: {"status":"continue","state":{"service":"billing"},"await":{"signal":"approval","timeoutSeconds":259200}} <nil>
	// step 2: {"status":"succeeded","result":{"approvedBy":"arn:aws:iam::123456789012:user/alice"}} <nil>
	// step 2: {"status":"failed","problem":{"code":"not_approved","title":"No one approved the change in time."}} <nil>
}

// A third party without credentials, such as a payment provider, sends a signal through
// its callback URL: a step hands the URL over, then waits for the signal.
func ExampleStep_CallbackURL() {
	charge := func(_ context.Context, s worker.Step, _ struct{}) (worker.Report, error) {
		url, ok := s.CallbackURL("payment-settled")
		if !ok {
			return worker.Report{}, errors.New("the type declares no callback signal payment-settled")
		}
		// Create the payment, telling the provider to call url when it settles (keyed by
		// s.IdempotencyKey(), so a redelivered step creates it once).
		fmt.Println("notify", url)
		return worker.Continue(nil).AwaitSignal("payment-settled", 24*time.Hour), nil
	}
	rep, err := worker.Run(context.Background(), charge, worker.Request{Step: 1, Input: json.RawMessage(`{}`),
		Callbacks: map[string]string{"payment-settled": "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d"}})
	name, timeout, _ := rep.AwaitsSignal()
	fmt.Println("awaits", name, "for", timeout, err)
	// Output:
	// notify https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/callbacks/cb_2f1e0d
	// awaits payment-settled for 24h0m0s <nil>
}
