// Package worker is how a team writes the work of a longrun operation type in Go.
//
// longrun admits an operation through its API and runs its work one step per invocation of
// the type's worker Lambda function. Each invocation carries a step request ([Request]):
// the operation's id, type, validated input, the step's number, the state the previous step
// carried and the operation's deadline. The worker does one bounded piece of work and
// returns a [Report]: continue (with state to carry, optionally after a delay), succeeded
// (with a result), failed (with a [Problem]), or outcome unknown (the effect may have
// happened and its result is lost). Around every step longrun checks cancellation intent,
// the deadline and the type's maxSteps and records the facts; a worker never touches
// longrun's table. The protocol itself, for workers in any language, is
// docs/worker-protocol.md; its JSON Schemas are api/worker/step-request.schema.json and
// api/worker/step-report.schema.json, and its test vectors, api/worker/vectors, hold this
// package to longrun's own reading of requests and reports.
//
// A worker is a [Func]: it receives a [Step] and the input decoded into the team's own type.
// A whole main.go, for a type whose work is one step:
//
//	package main
//
//	import (
//		"context"
//		"errors"
//
//		"example.com/team/mail"
//		"github.com/longrun-dev/longrun/worker"
//	)
//
//	type Input struct {
//		To string `json:"to"`
//	}
//
//	func send(ctx context.Context, s worker.Step, in Input) (worker.Report, error) {
//		id, err := mail.Send(ctx, in.To, s.IdempotencyKey()) // deduplicated downstream
//		if errors.Is(err, mail.ErrRejected) { // nothing was sent, and never will be
//			return worker.Fail("address_rejected", "The address was rejected.", err.Error()), nil
//		}
//		if err != nil {
//			return worker.Report{}, err // it may have been sent: outcome unknown
//		}
//		return worker.Succeed(map[string]string{"messageId": id}), nil
//	}
//
//	func main() { worker.Start(send) }
//
// Work longer than one invocation is several steps. A step carries state to the next with
// [Continue], and polls an external system without sleeping in Lambda by asking longrun to
// wait before the next step:
//
//	type ExportInput struct {
//		Bucket string `json:"bucket"`
//	}
//
//	type Job struct { // the state carried from step to step
//		ID string `json:"id"`
//	}
//
//	func export(ctx context.Context, s worker.Step, in ExportInput) (worker.Report, error) {
//		var job Job
//		if ok, err := s.State(&job); err != nil {
//			return worker.Report{}, err
//		} else if !ok { // the first step: submit the job, once per operation
//			id, err := jobs.Submit(ctx, in.Bucket, s.OperationID)
//			if err != nil {
//				return worker.Report{}, err
//			}
//			return worker.Continue(Job{ID: id}).After(30 * time.Second), nil
//		}
//		done, err := jobs.Done(ctx, job.ID)
//		if err != nil {
//			return worker.Report{}, err
//		}
//		if !done {
//			return worker.Continue(job).Wait(), nil // again after the type's stepDelay
//		}
//		return worker.Succeed(map[string]string{"jobId": job.ID}), nil
//	}
//
// Work that waits for the world, such as a person's approval or a third party's webhook,
// waits for a signal: the type declares its signals, and a step that needs one returns
// [Report.AwaitSignal]. Nothing runs while it waits; the next step runs when the signal
// arrives (at once if it already has), or after the wait's timeout, and reads it with
// [Step.Signal] ([Step.Awaited] says whether the wait timed out):
//
//	type Approval struct {
//		Approved bool   `json:"approved"`
//		Comment  string `json:"comment"`
//	}
//
//	func deploy(ctx context.Context, s worker.Step, in DeployInput) (worker.Report, error) {
//		if s.Number == 1 { // ask for an approval, then wait up to three days for it
//			if err := chat.AskApproval(ctx, in.Service, s.OperationID); err != nil {
//				return worker.Report{}, err
//			}
//			return worker.Continue(nil).AwaitSignal("approval", 72*time.Hour), nil
//		}
//		sig, ok := s.Signal("approval")
//		if !ok { // the wait timed out
//			return worker.Fail("not_approved", "No one approved the deployment in time.", ""), nil
//		}
//		var a Approval
//		if err := sig.Decode(&a); err != nil {
//			return worker.Report{}, err
//		}
//		if !a.Approved {
//			return worker.Fail("rejected", "The deployment was rejected.", a.Comment), nil
//		}
//		if err := deployer.Deploy(ctx, in.Service, s.OperationID); err != nil {
//			return worker.Report{}, err
//		}
//		return worker.Succeed(map[string]string{"approvedBy": sig.Sender}), nil
//	}
//
// Signals that arrive while no step waits for them are kept and given, in the order they
// arrived, to the next step ([Step.Signals]). A signal that a third party sends without
// credentials, such as a payment provider's webhook, arrives through a callback URL, which
// a step hands to the third party ([Step.CallbackURL]).
//
// What a Func returns becomes the step's outcome:
//
//   - a Report built with [Continue], [Succeed], [Fail] or [ResultLost] is sent as it is,
//     after it is checked against the protocol's limits; a Report that breaks them (a state
//     over [MaxStateBytes], a result that is not a JSON object, a bad problem code, the zero
//     Report) is a bug in the worker and becomes the invocation's error. Text is the
//     exception: a problem's title or detail, or a progress message, longer than the
//     protocol allows is cut to its limit (see [Fail]), since it often comes from elsewhere;
//   - a [*Problem] as the error (also wrapped) is a failed report: the work says, as a fact,
//     that it did not and will not happen;
//   - any other error is the invocation's error, which longrun records as outcome_unknown:
//     the step ran and may have acted. So is a panic, and a step that outlives its timeout.
//
// An input that does not decode into the Func's input type is a failed report with the code
// invalid_input (nothing ran), and a request that is not a step request of [Protocol] one
// with the code invalid_request.
//
// A step request may be delivered more than once. Pass [Step.IdempotencyKey] (the operation
// id and the step number) to whatever the step changes downstream, or the operation id
// alone for an effect that several steps share.
//
// [Run] runs a Func on a [Request] as the Lambda function would, without Lambda: for unit
// tests. The package's Example runs the export worker above step by step.
package worker
