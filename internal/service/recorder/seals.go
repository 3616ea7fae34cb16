package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/longrun-dev/longrun/internal/core/seal"
	"github.com/longrun-dev/longrun/internal/core/step"
)

// The recorder accepts only what longrun made (docs/security.md, "What the recorder
// trusts"). Anyone in the account who may invoke the recorder, or start one of longrun's
// executions, could otherwise hand it a step's end, a worker's state or a wait for any
// operation. So everything the recorder hands out and later takes back carries a seal
// (internal/core/seal), and is checked when it comes back:
//
//   - an execution's input that carries work on (a continuation, from a Run or the
//     reconciler) is sealed whole; the dispatcher's input, which names the operation and
//     nothing more, is the only one without a seal (fresh);
//   - a step request sent to a worker is sealed, and the delivery of its end is taken only
//     with that request's seal intact;
//   - a decision the recorder answers the workflow with is sealed, because the execution's
//     output carries it to the reconciler;
//   - the worker a Run or a delivery names must be the operation type's (Workers).
//
// A fresh input cannot say how a step ended or what state it carries: the Run decides
// everything from the operation's facts, as the dispatcher's execution does.

// ErrForged is the recorder's answer to state it did not make: an unsealed or wrongly
// sealed continuation, a step request whose seal is broken, or a worker that is not the
// operation type's. Nothing is recorded.
var ErrForged = errors.New("recorder: refused state not made by this deployment")

// fresh says whether in is a dispatcher's input: it names the operation and carries nothing
// a step could have said.
func (in Input) fresh() bool {
	return in.Continuation == 0 && in.Gate == nil && in.Task == nil && in.Error == nil && in.RecordError == nil
}

// The three documents the recorder seals each keep their seal in a Seal field; sealOf and
// checkSeal take the document with that field empty, which is what the seal covers.

func sealOf(s *seal.Sealer, purpose, id string, unsealed any) (string, error) {
	doc, err := marshal(unsealed)
	if err != nil {
		return "", err
	}
	return s.Seal(purpose, id, doc)
}

func checkSeal(s *seal.Sealer, purpose, id string, unsealed any, mac string) error {
	doc, err := marshal(unsealed)
	if err != nil {
		return err
	}
	return s.Check(purpose, id, doc, mac)
}

// SealInput is in with its seal: the input of an execution that carries the work on (a
// Run's hand-back, and the reconciler's carrying on).
func SealInput(s *seal.Sealer, in Input) (Input, error) {
	if s == nil {
		return in, nil
	}
	in.Seal = ""
	mac, err := sealOf(s, seal.PurposeInput, in.OperationID, in)
	in.Seal = mac
	return in, err
}

// checkInput is nil when in is a dispatcher's input or sealed by this deployment.
func checkInput(s *seal.Sealer, in Input) error {
	mac := in.Seal
	if mac == "" {
		if in.fresh() {
			return nil
		}
		return fmt.Errorf("%w: operation %s: the execution's input carries state without a seal", ErrForged, in.OperationID)
	}
	in.Seal = ""
	if err := checkSeal(s, seal.PurposeInput, in.OperationID, in, mac); err != nil {
		return fmt.Errorf("%w: operation %s: %w", ErrForged, in.OperationID, err)
	}
	return nil
}

// SealDecision is d with its seal, for operation id: what a Run answers the workflow with.
func SealDecision(s *seal.Sealer, id string, d Decision) (Decision, error) {
	if s == nil || d.Next == NextParked {
		return d, nil
	}
	d.Seal = ""
	mac, err := sealOf(s, seal.PurposeDecision, id, d)
	d.Seal = mac
	return d, err
}

func checkDecision(s *seal.Sealer, id string, d Decision) error {
	mac := d.Seal
	d.Seal = ""
	return checkSeal(s, seal.PurposeDecision, id, d, mac)
}

// sealedRequest is req as the worker is sent it: JSON, with its seal.
func sealedRequest(s *seal.Sealer, req step.Request) ([]byte, error) {
	req.Seal = ""
	if s != nil {
		mac, err := sealOf(s, seal.PurposeStep, req.OperationID, req)
		if err != nil {
			return nil, err
		}
		req.Seal = mac
	}
	return marshal(req)
}

// checkRequest is nil when req is a step request this deployment sent.
func checkRequest(s *seal.Sealer, req step.Request) error {
	mac := req.Seal
	req.Seal = ""
	if err := checkSeal(s, seal.PurposeStep, req.OperationID, req, mac); err != nil {
		return fmt.Errorf("%w: operation %s step %d: %w", ErrForged, req.OperationID, req.Step, err)
	}
	return nil
}

// Trusted is what the reconciler may take from the output of execution ref of operation
// id (the workflow's final state): the Run's sealed answer with the execution's input
// around it, or, when the Run was caught (RecordError), the execution's own input, sealed or
// fresh. Anything else, an execution started with made-up state above all, is read as if
// its Run had been caught on a fresh input: the work is carried on from the operation's
// facts alone (Resumption), and nothing in the output is recorded. ok is false when
// raw is not the workflow's state at all.
func Trusted(s *seal.Sealer, id, ref string, raw []byte) (in Input, ok bool) {
	if err := json.Unmarshal(raw, &in); err != nil || in.OperationID != id {
		return Input{}, false
	}
	k := continuationOf(id, ref)
	if k < 0 {
		return Input{}, false
	}
	caught := Input{OperationID: id, Continuation: k, CorrelationID: in.CorrelationID, Traceparent: in.Traceparent,
		RecordError: &TaskError{Error: "longrun.Refused", Cause: "the execution's state was not made by this deployment"}}
	if in.Continuation != k {
		return caught, true
	}
	if in.RecordError != nil {
		own := in
		own.RecordError = nil
		if checkInput(s, own) != nil {
			return caught, true
		}
		return in, true
	}
	if d := in.last(); d == nil || checkDecision(s, id, *d) != nil {
		return caught, true
	}
	return in, true
}

// serves says whether function, as a Run or a delivery names it, is worker's function:
// Workers maps each worker to its function's name or ARN. Without Workers (tests, and
// stacks that do not say) any function is taken.
func (r *Recorder) serves(worker, function string) bool {
	if r.Workers == nil {
		return true
	}
	want, ok := r.Workers[worker]
	return ok && Unqualified(want) == Unqualified(function)
}

// Unqualified is a function's ARN or name without a version or alias qualifier.
func Unqualified(fn string) string {
	if strings.HasPrefix(fn, "arn:") && strings.Count(fn, ":") > 6 {
		return fn[:strings.LastIndex(fn, ":")]
	}
	return fn
}
