package intent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/jcs"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/testkit/memstore"
)

// signalTypes is a definitions file with one signal for each rule a declaration can make.
const signalTypes = `types:
  - name: t.sig
    version: 1
    description: A type with signals.
    worker: w-sig
    deadline: 1h
    stepTimeout: 60s
    maxSteps: 5
    target: minted
    input: {type: object}
    signals:
      approval:           # the creator or an operator; a third party through its callback URL
        senders: [caller, operator]
        callback: true
        schema:
          type: object
          additionalProperties: false
          required: [approved]
          properties:
            approved: {type: boolean}
            by: {type: string}
      note:               # any principal of the tenant
        senders: [tenant]
        schema: {type: object}
      override:           # operators only
        senders: [operator]
        schema: {type: object}
      review:             # four eyes: anyone but the creator
        senders: [tenant, operator]
        notCreator: true
        schema: {type: object}
      mine:               # the creator only
        senders: [caller]
        schema: {type: object}
`

func registry(t *testing.T) *optype.Registry {
	t.Helper()
	f, err := optype.Parse("types.yaml", []byte(signalTypes))
	if err != nil {
		t.Fatal(err)
	}
	return f.Registry(optype.WithDemo)
}

// The senders: alice of acme created the operation.
var (
	alice    = intent.Sender{Tenant: "acme", Principal: "alice"}
	bob      = intent.Sender{Tenant: "acme", Principal: "bob"}
	eve      = intent.Sender{Tenant: "globex", Principal: "eve"}
	ops      = intent.Sender{Tenant: "globex", Principal: "ops", Operator: true} // an operator of another tenant
	carol    = intent.Sender{Tenant: "acme", Principal: "carol", Operator: true} // an operator of the operation's tenant
	aliceOps = intent.Sender{Tenant: "acme", Principal: "alice", Operator: true} // the creator, an operator too
	callback = intent.Sender{Callback: true}                                     // a third party with the callback URL
)

// sigOp is alice's operation of type t.sig, brought to state by the facts its writers
// record.
func sigOp(t *testing.T, state operation.State) operation.Operation {
	t.Helper()
	facts := []operation.Fact{{Version: 1, Kind: operation.KindAccepted, At: t0, Source: operation.SourceAdmission,
		Admission: &operation.Admission{Type: "t.sig", TypeVersion: 1, Target: "t.sig:op_1", Tenant: "acme", Principal: "alice"}}}
	for _, k := range history(state) {
		f := operation.Fact{Version: len(facts) + 1, Kind: k, At: t0, Source: operation.SourceExecutor}
		switch k {
		case operation.KindDispatched:
			f.Source, f.Execution = operation.SourceDispatcher, "arn:exec:op_1"
		case operation.KindCancelRequested:
			f.Source, f.Actor = operation.SourceClient, "alice"
		case operation.KindFailed, operation.KindOutcomeUnknown:
			f.Problem = operation.NewProblem("worker_error", "Worker failed", "it failed")
		}
		facts = append(facts, f)
	}
	op, err := operation.Fold("op_1", facts)
	if err != nil || op.State != state {
		t.Fatalf("%s: %s %v", state, op.State, err)
	}
	return op
}

// request is a signal name with data sent by sender with key, its data as the API reads it.
func request(t *testing.T, sender intent.Sender, name, data, key string) intent.SignalRequest {
	t.Helper()
	decoded, err := jcs.Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	compact, err := jcs.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	return intent.SignalRequest{ID: "op_1", Name: name, Data: compact, Decoded: decoded, Key: key, Sender: sender}
}

// record applies the fact DecideSignal made to op, as the store would.
func record(t *testing.T, op operation.Operation, f operation.Fact) operation.Operation {
	t.Helper()
	f.Version, f.At = op.Version+1, t0.Add(time.Minute)
	next, err := op.Apply(f)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// What a signal records, or why it records nothing, for every sender, rule and state, in the
// order a client can act on. Each refusal is the contract's code; a decision that checked
// the key before visibility would tell eve that a key was used on alice's operation, one
// that checked the state before the key would refuse a retry of a signal that went
// through, and one that checked the schema before the state would ask for a fix that
// cannot help.
func TestDecideSignal(t *testing.T) {
	types := registry(t)
	// The running operation has had one approval, key k-used, from alice.
	running := sigOp(t, operation.Running)
	first, replayed, err := intent.DecideSignal(running, types, request(t, alice, "approval", `{"approved": true}`, "k-used"))
	if err != nil || replayed {
		t.Fatalf("the first approval: %v, replayed %v", err, replayed)
	}
	running = record(t, running, first)
	if running.Version != 4 || len(running.Signals) != 1 {
		t.Fatalf("v%d with %d signals", running.Version, len(running.Signals))
	}

	ok := problem.Code("")
	for _, c := range []struct {
		name     string
		state    operation.State // "" for the running operation above
		req      intent.SignalRequest
		ifMatch  []int
		code     problem.Code
		replayed bool
		detail   string // in the refusal's detail
		pointers string // of an invalid_input's fields: into the body, which is the data
	}{
		// Visibility first: another tenant's principal finds nothing, even by a used key.
		{name: "another tenant", req: request(t, eve, "approval", `{"approved": true}`, "k1"), code: problem.NotFound},
		{name: "another tenant, a used key", req: request(t, eve, "approval", `{"approved": true}`, "k-used"), code: problem.NotFound},
		{name: "another tenant, a tenant's signal", req: request(t, eve, "note", `{}`, "k1"), code: problem.NotFound},
		{name: "an operator of another tenant sees it", req: request(t, ops, "approval", `{"approved": true}`, "k1"), code: ok},

		// The key: the same signal again is answered as it was; anything else under it is a conflict.
		{name: "same key, same signal", req: request(t, alice, "approval", `{"approved": true}`, "k-used"), replayed: true},
		{name: "same key, same data written otherwise", req: request(t, alice, "approval", `{ "approved" : true }`, "k-used"), replayed: true},
		{name: "same key, other data", req: request(t, alice, "approval", `{"approved": false}`, "k-used"), code: problem.IdempotencyKeyReused},
		{name: "same key, other signal", req: request(t, alice, "mine", `{"approved": true}`, "k-used"), code: problem.IdempotencyKeyReused},
		{name: "same key, other sender", req: request(t, bob, "approval", `{"approved": true}`, "k-used"), code: problem.IdempotencyKeyReused},
		{name: "same key, replayed whatever If-Match says", req: request(t, alice, "approval", `{"approved": true}`, "k-used"), ifMatch: []int{1}, replayed: true},

		// The signal must be declared.
		{name: "unknown signal", req: request(t, alice, "nope", `{}`, "k1"), code: problem.UnknownSignal},
		{name: "unknown signal from an operator", req: request(t, ops, "nope", `{}`, "k1"), code: problem.UnknownSignal},

		// caller: the creator only (and operators, as declared).
		{name: "caller: the creator", req: request(t, alice, "mine", `{}`, "k1"), code: ok},
		{name: "caller: another principal", req: request(t, bob, "mine", `{}`, "k1"), code: problem.Forbidden, detail: "may not be sent by this principal"},
		{name: "caller: an operator", req: request(t, ops, "mine", `{}`, "k1"), code: problem.Forbidden},
		{name: "caller: an operator who created it", req: request(t, aliceOps, "mine", `{}`, "k1"), code: ok},
		// tenant: any principal of the tenant, the creator among them.
		{name: "tenant: another principal", req: request(t, bob, "note", `{}`, "k1"), code: ok},
		{name: "tenant: the creator", req: request(t, alice, "note", `{}`, "k1"), code: ok},
		{name: "tenant: an operator of another tenant", req: request(t, ops, "note", `{}`, "k1"), code: problem.Forbidden},
		{name: "tenant: an operator of the tenant", req: request(t, carol, "note", `{}`, "k1"), code: ok},
		{name: "caller: an operator of the tenant", req: request(t, carol, "mine", `{}`, "k1"), code: problem.Forbidden},
		{name: "notCreator: an operator of the tenant", req: request(t, carol, "review", `{}`, "k1"), code: ok},
		// operator: operators only, whoever created it.
		{name: "operator: an operator", req: request(t, ops, "override", `{}`, "k1"), code: ok},
		{name: "operator: an operator of the tenant", req: request(t, carol, "override", `{}`, "k1"), code: ok},
		{name: "operator: the creator, an operator too", req: request(t, aliceOps, "override", `{}`, "k1"), code: ok},
		{name: "operator: the creator", req: request(t, alice, "override", `{}`, "k1"), code: problem.Forbidden},
		{name: "operator: a principal of the tenant", req: request(t, bob, "override", `{}`, "k1"), code: problem.Forbidden},
		// notCreator: never the creator, not even an operator who created it.
		{name: "notCreator: the creator", req: request(t, alice, "review", `{}`, "k1"), code: problem.Forbidden, detail: "someone other than the principal who created"},
		{name: "notCreator: the creator, an operator too", req: request(t, aliceOps, "review", `{}`, "k1"), code: problem.Forbidden, detail: "someone other than the principal who created"},
		{name: "notCreator: another principal", req: request(t, bob, "review", `{}`, "k1"), code: ok},
		{name: "notCreator: an operator", req: request(t, ops, "review", `{}`, "k1"), code: ok},
		// A callback URL sends only what is declared callback: true, on any tenant's operation.
		{name: "callback: a callback signal", req: request(t, callback, "approval", `{"approved": true}`, "k1"), code: ok},
		{name: "callback: a signal without callback", req: request(t, callback, "note", `{}`, "k1"), code: problem.Forbidden, detail: "cannot be sent through a callback"},
		{name: "callback: unknown signal", req: request(t, callback, "nope", `{}`, "k1"), code: problem.UnknownSignal},

		// If-Match, after the sender's right to send.
		{name: "If-Match another version", req: request(t, alice, "approval", `{"approved": true}`, "k1"), ifMatch: []int{3}, code: problem.VersionMismatch},
		{name: "If-Match the version", req: request(t, alice, "approval", `{"approved": true}`, "k1"), ifMatch: []int{3, 4}, code: ok},
		{name: "If-Match empty", req: request(t, alice, "approval", `{"approved": true}`, "k1"), ifMatch: []int{}, code: problem.VersionMismatch},
		{name: "If-Match another version, a forbidden sender", req: request(t, bob, "approval", `{"approved": true}`, "k1"), ifMatch: []int{3}, code: problem.Forbidden},

		// The state: only work that may still hear it.
		{name: "accepted", state: operation.Accepted, req: request(t, alice, "approval", `{"approved": true}`, "k1"), code: ok},
		{name: "dispatched", state: operation.Dispatched, req: request(t, alice, "approval", `{"approved": true}`, "k1"), code: ok},
		{name: "cancelling", state: operation.Cancelling, req: request(t, alice, "approval", `{"approved": true}`, "k1"), code: problem.AlreadyTerminal, detail: "being canceled"},
		{name: "outcome_unknown", state: operation.OutcomeUnknown, req: request(t, alice, "approval", `{"approved": true}`, "k1"), code: problem.AlreadyTerminal, detail: "unknown outcome"},
		{name: "succeeded", state: operation.Succeeded, req: request(t, alice, "approval", `{"approved": true}`, "k1"), code: problem.AlreadyTerminal, detail: "already succeeded"},
		{name: "failed", state: operation.Failed, req: request(t, alice, "approval", `{"approved": true}`, "k1"), code: problem.AlreadyTerminal},
		{name: "canceled", state: operation.Canceled, req: request(t, alice, "approval", `{"approved": true}`, "k1"), code: problem.AlreadyTerminal},
		{name: "canceled, through a callback: the URL is gone", state: operation.Canceled, req: request(t, callback, "approval", `{"approved": true}`, "k1"), code: problem.CallbackExpired},
		{name: "canceled, bad data", state: operation.Canceled, req: request(t, alice, "approval", `{"approved": "yes"}`, "k1"), code: problem.AlreadyTerminal},

		// The data, last.
		{name: "data of the wrong type", req: request(t, alice, "approval", `{"approved": "yes"}`, "k1"), code: problem.InvalidInput, detail: "approved must be a boolean", pointers: "/approved"},
		{name: "data missing a member", req: request(t, alice, "approval", `{"by": "bob"}`, "k1"), code: problem.InvalidInput, pointers: "/approved"},
		{name: "data with members the schema has not", req: request(t, alice, "approval", `{"approved": true, "extra": 1, "by": 2}`, "k1"), code: problem.InvalidInput, pointers: "/by,/extra"},
		{name: "data through a callback", req: request(t, callback, "approval", `{"approved": 1}`, "k1"), code: problem.InvalidInput, pointers: "/approved"},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := running
			if c.state != "" {
				op = sigOp(t, c.state)
			}
			c.req.IfMatch = c.ifMatch
			f, replayed, err := intent.DecideSignal(op, types, c.req)
			if problem.CodeOf(err) != c.code || replayed != c.replayed {
				t.Fatalf("error %v, replayed %v; want %q, %v", err, replayed, c.code, c.replayed)
			}
			if err != nil && !strings.Contains(problem.As(err).Detail, c.detail) {
				t.Fatalf("detail %q lacks %q", problem.As(err).Detail, c.detail)
			}
			if got := pointers(err); got != c.pointers {
				t.Fatalf("field pointers %q, want %q (%v)", got, c.pointers, err)
			}
			if (err == nil && !replayed) != (f.Kind == operation.KindSignaled) {
				t.Fatalf("fact %+v with error %v, replayed %v", f, err, replayed)
			}
			if f.Kind != operation.KindSignaled {
				return
			}
			if f.Signal == nil || f.Signal.Name != c.req.Name || string(f.Signal.Data) != string(c.req.Data) || f.Signal.Key != c.req.Key || f.Signal.Fingerprint == "" {
				t.Fatalf("signal %+v", f.Signal)
			}
			if next := record(t, op, f); next.State != op.State || len(next.Signals) != len(op.Signals)+1 {
				t.Fatalf("the fact took %s to %s", op.State, next.State)
			}
		})
	}
}

func pointers(err error) string {
	if err == nil {
		return ""
	}
	var out []string
	for _, f := range problem.As(err).Fields {
		out = append(out, f.Pointer)
	}
	return strings.Join(out, ",")
}

// A signal's fact says who sent it, as the worker's request and the audit show it: a
// client by principal, an operator by tenant and principal (they may belong to any), a
// callback by nobody. The time is the service's to set. A fact that named the operation's
// creator, or kept a callback's empty principal as a client's, would misattribute it.
func TestTheSignalFactSaysWhoSentIt(t *testing.T) {
	types := registry(t)
	op := sigOp(t, operation.Running)
	for _, c := range []struct {
		sender intent.Sender
		name   string
		source operation.Source
		actor  string
	}{
		{alice, "approval", operation.SourceClient, "alice"},
		{bob, "note", operation.SourceClient, "bob"},
		{ops, "override", operation.SourceOperator, "globex/ops"},
		{ops, "approval", operation.SourceOperator, "globex/ops"},
		{carol, "override", operation.SourceOperator, "acme/carol"},
		{carol, "note", operation.SourceOperator, "acme/carol"},
		{aliceOps, "mine", operation.SourceClient, "alice"},
		{callback, "approval", operation.SourceCallback, ""},
		// Whatever principal a callback's request carried, nobody is named: the URL's holder
		// is unknown.
		{intent.Sender{Callback: true, Tenant: "acme", Principal: "alice"}, "approval", operation.SourceCallback, ""},
	} {
		data := `{}`
		if c.name == "approval" {
			data = `{"approved": true}`
		}
		f, _, err := intent.DecideSignal(op, types, request(t, c.sender, c.name, data, "k1"))
		if err != nil {
			t.Fatalf("%+v %s: %v", c.sender, c.name, err)
		}
		if f.Source != c.source || f.Actor != c.actor || !f.At.IsZero() || f.Version != 0 {
			t.Errorf("%+v %s: source %s actor %q at %v v%d; want %s %q", c.sender, c.name, f.Source, f.Actor, f.At, f.Version, c.source, c.actor)
		}
	}
	// The fingerprint is what a retry must send again: the signal, its data, its sender.
	fp := func(sender intent.Sender, name, data string) string {
		f, _, err := intent.DecideSignal(op, types, request(t, sender, name, data, "k1"))
		if err != nil {
			t.Fatal(err)
		}
		return f.Signal.Fingerprint
	}
	base := fp(alice, "approval", `{"approved": true}`)
	if base != fp(alice, "approval", `{"approved":true}`) {
		t.Error("the same data written otherwise has another fingerprint")
	}
	for name, other := range map[string]string{
		"other data":   fp(alice, "approval", `{"approved": false}`),
		"other signal": fp(alice, "mine", `{"approved": true}`),
		"other sender": fp(ops, "approval", `{"approved": true}`),
	} {
		if other == base {
			t.Errorf("%s has the same fingerprint", name)
		}
	}
}

// demoRunning admits a demo.task as alice (the built-in types, whose approval the caller
// and operators may send) and brings it to running.
func demoRunning(t *testing.T, s *memstore.Store) operation.Operation {
	t.Helper()
	id := at(t, s, operation.Running)
	op, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// Service.Signal appends the decided fact, at the service's time, and nothing when it
// refuses or replays: the stored version is the same after any refusal, so a refused
// signal can never reach a step. A service that appended before deciding, or on a replay,
// would break here.
func TestServiceSignal(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	op := demoRunning(t, s)
	now := t0.Add(time.Hour)
	svc := &intent.Service{Store: s, Now: func() time.Time { return now }}
	types := optype.Builtin()
	send := func(r intent.SignalRequest) (operation.Operation, bool, error) {
		r.ID = op.ID
		return svc.Signal(ctx, types, r)
	}
	version := op.Version
	for _, c := range []struct {
		name string
		req  intent.SignalRequest
		code problem.Code
	}{
		{"forbidden", request(t, bob, "approval", `{"approved": true}`, "k1"), problem.Forbidden},
		{"another tenant", request(t, eve, "approval", `{"approved": true}`, "k1"), problem.NotFound},
		{"unknown signal", request(t, alice, "nope", `{}`, "k1"), problem.UnknownSignal},
		{"invalid data", request(t, alice, "approval", `{"approved": "yes"}`, "k1"), problem.InvalidInput},
		{"another version", func() intent.SignalRequest {
			r := request(t, alice, "approval", `{"approved": true}`, "k1")
			r.IfMatch = []int{version - 1}
			return r
		}(), problem.VersionMismatch},
	} {
		if _, _, err := send(c.req); problem.CodeOf(err) != c.code {
			t.Fatalf("%s: %v, want %s", c.name, err, c.code)
		}
		if got, _ := s.Load(ctx, op.ID); got.Version != version || len(got.Signals) != 0 {
			t.Fatalf("%s: v%d with %d signals after a refusal, want v%d", c.name, got.Version, len(got.Signals), version)
		}
	}

	got, replayed, err := send(request(t, alice, "approval", `{"approved": true, "by": "alice"}`, "k1"))
	if err != nil || replayed || got.Version != version+1 || len(got.Signals) != 1 {
		t.Fatalf("v%d, %d signals, replayed %v, %v", got.Version, len(got.Signals), replayed, err)
	}
	if r := got.Signals[0]; !r.At.Equal(now) || r.Version != version+1 || r.Source != operation.SourceClient || r.Actor != "alice" ||
		r.Name != "approval" || string(r.Data) != `{"approved":true,"by":"alice"}` || r.Key != "k1" {
		t.Fatalf("received %+v", r)
	}
	if got.State != operation.Running || kinds(t, s, op.ID, version) != "[signaled]" {
		t.Fatalf("state %s, history after v%d %s", got.State, version, kinds(t, s, op.ID, version))
	}
	// A retry is answered with the operation as it is, and appends nothing.
	again, replayed, err := send(request(t, alice, "approval", `{"by": "alice", "approved": true}`, "k1"))
	if err != nil || !replayed || again.Version != version+1 {
		t.Fatalf("retry: v%d replayed %v, %v", again.Version, replayed, err)
	}
	if _, _, err := send(request(t, alice, "approval", `{"approved": false}`, "k1")); problem.CodeOf(err) != problem.IdempotencyKeyReused {
		t.Fatalf("the key with other data: %v", err)
	}
	if stored, _ := s.Load(ctx, op.ID); stored.Version != version+1 {
		t.Fatalf("v%d after a retry and a conflict, want v%d", stored.Version, version+1)
	}
	if _, _, err := svc.Signal(ctx, types, intent.SignalRequest{ID: "op_missing", Name: "approval", Key: "k1", Sender: alice}); problem.CodeOf(err) != problem.NotFound {
		t.Fatalf("a missing operation: %v", err)
	}
}

// A signal decided on a running operation that a cancel reaches first is decided again, on
// the cancelling operation, and refused: cancellation dominates a later signal, and no
// signal is recorded after it.
func TestASignalThatLosesToACancelDecidesAgain(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	op := demoRunning(t, s)
	s.BeforeNextAppend(func(op operation.Operation) {
		if _, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindCancelRequested, At: t0, Source: operation.SourceClient, Actor: "alice"}); err != nil {
			t.Errorf("the cancel: %v", err)
		}
	})
	svc := &intent.Service{Store: s, Now: func() time.Time { return t0 }}
	r := request(t, alice, "approval", `{"approved": true}`, "k1")
	r.ID = op.ID
	_, _, err := svc.Signal(ctx, optype.Builtin(), r)
	if problem.CodeOf(err) != problem.AlreadyTerminal || s.Conflicts() != 1 {
		t.Fatalf("%v after %d conflicts; want already_terminal after one lost race", err, s.Conflicts())
	}
	if got := kinds(t, s, op.ID, op.Version); got != "[cancel_requested]" {
		t.Fatalf("history %s", got)
	}
}

// A cancel of work that waits for a signal ends it at once: no step is in flight and no
// execution runs, so nobody else would record the end. Whether or not the awaited signal
// has come (the wake not yet taken), the cancel records cancel_requested and canceled
// together. A cancel that only asked would leave the operation cancelling with nothing to
// stop it but the reconciler's cancel lease.
func TestCancelOfAnAwaitingOperationEndsItAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, answered := range []bool{false, true} {
		s := memstore.New()
		op := demoRunning(t, s)
		var err error
		op, err = s.Append(ctx, op, operation.Fact{Kind: operation.KindProgress, At: t0.Add(time.Minute), Source: operation.SourceExecutor,
			Progress: &operation.Progress{CompletedSteps: 1},
			Awaiting: &operation.Awaiting{Signal: "approval", Since: t0.Add(time.Minute), Until: t0.Add(time.Hour), Step: 1}})
		if err != nil || !op.Awaits() {
			t.Fatalf("awaiting: %v %v", op.Awaits(), err)
		}
		svc := &intent.Service{Store: s, Now: func() time.Time { return t0.Add(2 * time.Minute) }}
		if answered {
			r := request(t, alice, "approval", `{"approved": true}`, "k1")
			r.ID = op.ID
			if op, _, err = svc.Signal(ctx, optype.Builtin(), r); err != nil || !op.AwaitAnswered() {
				t.Fatalf("the approval: answered %v, %v", op.AwaitAnswered(), err)
			}
		}
		before := op.Version
		got, already, err := svc.Cancel(ctx, op.ID, intent.Sender{Principal: "alice"}, everyone, nil)
		if err != nil || already || got.State != operation.Canceled || got.Version != before+2 {
			t.Fatalf("answered %v: %s v%d already %v, %v", answered, got.State, got.Version, already, err)
		}
		if h := kinds(t, s, op.ID, before); h != "[cancel_requested canceled]" {
			t.Fatalf("answered %v: recorded %s", answered, h)
		}
		if rep := got.Represent("/x"); rep.Awaiting != nil || !rep.CancelRequested {
			t.Fatalf("answered %v: representation %+v", answered, rep)
		}
	}
	// Work that waits for a delay, not a signal, still only asks: a step may be about to run.
	s := memstore.New()
	op := demoRunning(t, s)
	until := t0.Add(time.Hour)
	op, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindProgress, At: t0.Add(time.Minute), Source: operation.SourceExecutor, WaitingUntil: &until})
	if err != nil {
		t.Fatal(err)
	}
	svc := &intent.Service{Store: s, Now: func() time.Time { return t0.Add(2 * time.Minute) }}
	if got, _, err := svc.Cancel(ctx, op.ID, intent.Sender{Principal: "alice"}, everyone, nil); err != nil || got.State != operation.Cancelling {
		t.Fatalf("a cancel during a delay: %s, %v", got.State, err)
	}
}

// A callback URL lives as long as the work can hear its signal: while a wait for it runs
// and before, not once the wait timed out (then or later, the step after it having heard
// the timeout), and not once the operation ended. A principal's signal is no callback: it
// is kept for the next step whatever became of the wait.
func TestACallbackExpiresWithItsWait(t *testing.T) {
	t.Parallel()
	types := registry(t)
	op := sigOp(t, operation.Running)
	at := func(r intent.SignalRequest, d time.Duration) intent.SignalRequest { r.At = t0.Add(d); return r }
	waiting, err := op.Apply(operation.Fact{Version: op.Version + 1, Kind: operation.KindProgress, At: t0, Source: operation.SourceExecutor,
		Awaiting: &operation.Awaiting{Signal: "approval", Since: t0, Until: t0.Add(time.Minute), Step: 1}})
	if err != nil {
		t.Fatal(err)
	}
	timedOut, err := waiting.Apply(operation.Fact{Version: waiting.Version + 1, Kind: operation.KindProgress, At: t0.Add(time.Minute),
		Source: operation.SourceExecutor, Delivery: &operation.Delivery{Step: 2, Awaited: "approval", TimedOut: true}})
	if err != nil {
		t.Fatal(err)
	}
	cb := request(t, callback, "approval", `{"approved": true}`, "callback:h")
	for _, c := range []struct {
		name    string
		op      operation.Operation
		req     intent.SignalRequest
		expired bool
	}{
		{"before any wait", op, at(cb, 0), false},
		{"during the wait", waiting, at(cb, 30*time.Second), false},
		{"at the wait's end", waiting, at(cb, time.Minute), true},
		{"after the step that heard the timeout", timedOut, at(cb, 30*time.Second), true},
		{"a principal after the timeout", timedOut, at(request(t, alice, "approval", `{"approved": true}`, "k"), 2*time.Minute), false},
	} {
		_, _, err := intent.DecideSignal(c.op, types, c.req)
		if got := problem.CodeOf(err) == problem.CallbackExpired; got != c.expired || !c.expired && err != nil {
			t.Errorf("%s: %v; want expired %v", c.name, err, c.expired)
		}
	}
}
