package linearize_test

import (
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/local/linearize"
)

// Inputs and outputs, spelled the way the contract says them.

func create(key string) linearize.Input { return linearize.Input{Kind: linearize.Create, Key: key} }
func get(id string) linearize.Input     { return linearize.Input{Kind: linearize.Get, OperationID: id} }
func cancel(id string, ifMatch int) linearize.Input {
	return linearize.Input{Kind: linearize.Cancel, OperationID: id, IfMatch: ifMatch}
}

func created(id string) linearize.Output { return linearize.Output{Status: 202, OperationID: id} }
func replayed(id string) linearize.Output {
	return linearize.Output{Status: 202, OperationID: id, Replayed: true}
}
func reused(id string) linearize.Output {
	return linearize.Output{Status: 409, Code: problem.IdempotencyKeyReused, OperationID: id}
}
func refused(status int, code problem.Code) linearize.Output {
	return linearize.Output{Status: status, Code: code}
}

// is is a representation answered with status.
func is(status int, s operation.State, version int) linearize.Output {
	return linearize.Output{Status: status, State: s, Version: version, Terminal: s.Terminal()}
}
func read(s operation.State, version int) linearize.Output { return is(200, s, version) }

var noAnswer = linearize.Output{}

// at is a call made at call and answered at ret (any unit: only the order matters).
func at(call, ret int64, in linearize.Input, out linearize.Output) linearize.Entry {
	return linearize.Entry{Input: in, Output: out, Call: call, Return: ret}
}

func check(t *testing.T, h []linearize.Entry) linearize.Result {
	t.Helper()
	res, err := linearize.Check(h, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.TimedOut {
		t.Fatal("the check timed out")
	}
	return res
}

func mustLinearize(t *testing.T, h []linearize.Entry) {
	t.Helper()
	if res := check(t, h); !res.Linearizable {
		t.Fatalf("a valid history was refused: %v", res.Violations)
	}
}

// mustViolate checks that h is refused and that the one violation is about operation op.
func mustViolate(t *testing.T, h []linearize.Entry, op string) linearize.Violation {
	t.Helper()
	res := check(t, h)
	if res.Linearizable {
		t.Fatal("a doctored history was accepted")
	}
	if len(res.Violations) != 1 {
		t.Fatalf("want one violation, got %v", res.Violations)
	}
	v := res.Violations[0]
	if !strings.Contains(strings.Join(v.Operations, " "), op) {
		t.Fatalf("the violation is not about %s: %v", op, v)
	}
	return v
}

func with(base []linearize.Entry, more ...linearize.Entry) []linearize.Entry {
	return append(append([]linearize.Entry(nil), base...), more...)
}
