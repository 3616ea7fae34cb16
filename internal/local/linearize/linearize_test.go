package linearize_test

import (
	"errors"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/local/linearize"
)

const (
	accepted       = operation.Accepted
	dispatched     = operation.Dispatched
	running        = operation.Running
	cancelling     = operation.Cancelling
	succeeded      = operation.Succeeded
	failed         = operation.Failed
	canceled       = operation.Canceled
	outcomeUnknown = operation.OutcomeUnknown
)

// valid is a concurrent history the contract allows, over four keys. Its reads race the
// background (accepted → dispatched → running → succeeded) and each other, so a checker
// that orders calls by their start, or forgets hidden progress, refuses it.
func valid() []linearize.Entry {
	return []linearize.Entry{
		// kA: two identical first requests race; the second is a replay.
		at(0, 10, create("kA"), created("op_A")),
		at(5, 12, create("kA"), replayed("op_A")),
		at(11, 20, get("op_A"), read(accepted, 1)),
		// Two overlapping reads: the one that started later saw less, so it went first.
		at(21, 40, get("op_A"), read(running, 3)),
		at(22, 30, get("op_A"), read(dispatched, 2)),
		at(41, 50, get("op_A"), read(running, 4)), // a completed step
		at(45, 60, get("op_A"), read(succeeded, 5)),
		at(61, 70, cancel("op_A", 5), linearize.Output{Status: 409, Code: problem.AlreadyTerminal, OperationID: "op_A"}),
		at(71, 80, create("kA"), reused("op_A")), // the same key with another body
		at(81, 90, get("op_A"), read(succeeded, 5)),

		// kB: cancelled while dispatched, with a stale If-Match first.
		at(0, 8, create("kB"), created("op_B")),
		at(10, 15, get("op_B"), read(dispatched, 2)),
		at(16, 20, cancel("op_B", 1), refused(412, problem.VersionMismatch)),
		at(21, 30, cancel("op_B", 2), is(202, cancelling, 3)),
		at(25, 35, get("op_B"), read(cancelling, 3)),          // overlaps the cancel: after it
		at(36, 40, cancel("op_B", 0), is(202, cancelling, 3)), // again: no new fact
		at(50, 60, get("op_B"), read(canceled, 4)),
		at(61, 65, cancel("op_B", 0), is(200, canceled, 4)),

		// kC: cancelled before dispatch: cancel_requested and canceled in one answer.
		at(0, 5, create("kC"), created("op_C")),
		at(6, 9, cancel("op_C", 1), is(202, canceled, 3)),
		at(10, 12, get("op_C"), read(canceled, 3)),

		// kD: the worker's started landed before dispatched, the outcome was lost, and an
		// operator settled it; a read overlapping the create may miss the operation.
		at(0, 5, create("kD"), created("op_D")),
		at(1, 4, get("op_D"), linearize.Output{Status: 404, Code: problem.NotFound}),
		at(6, 8, get("op_D"), read(running, 2)),
		at(9, 10, get("op_D"), read(outcomeUnknown, 3)),
		at(11, 12, cancel("op_D", 0), linearize.Output{Status: 409, Code: problem.AlreadyTerminal}),
		at(13, 14, get("op_D"), read(succeeded, 4)),
	}
}

func TestAValidConcurrentHistoryIsLinearizable(t *testing.T) {
	res := check(t, valid())
	if !res.Linearizable || res.Calls != len(valid()) || res.Partitions != 4 {
		t.Fatalf("got %+v", res)
	}
}

// Each doctored history adds one call to a base the contract allows; fine is the same call
// answered as the contract allows, so that each case fails on the doctoring alone.
func TestDoctoredHistoriesAreNotLinearizable(t *testing.T) {
	op := func(states ...linearize.Output) []linearize.Entry {
		h := []linearize.Entry{at(0, 10, create("k"), created("op_1"))}
		for i, out := range states {
			h = append(h, at(int64(11+10*i), int64(20+10*i), get("op_1"), out))
		}
		return h
	}
	next := func(base []linearize.Entry) int64 { return base[len(base)-1].Return + 1 }
	later := func(base []linearize.Entry, in linearize.Input, out linearize.Output) linearize.Entry {
		return at(next(base), next(base)+9, in, out)
	}
	two := with(op(), at(0, 10, create("k2"), created("op_2")))
	for _, c := range []struct {
		name      string
		base      []linearize.Entry
		fine, bad linearize.Entry
		culprit   string
	}{
		{name: "two operation ids for one key", base: op(),
			fine: later(op(), create("k"), replayed("op_1")), bad: later(op(), create("k"), replayed("op_2"))},
		{name: "a second creation under one key", base: op(),
			fine: later(op(), create("k"), replayed("op_1")), bad: later(op(), create("k"), created("op_2"))},
		{name: "a 409 naming another operation than the key's", base: two,
			fine: later(two, create("k"), reused("op_1")), bad: later(two, create("k"), reused("op_2"))},
		{name: "one operation created by two keys", base: op(),
			fine: later(op(), create("k2"), created("op_2")), bad: later(op(), create("k2"), created("op_1"))},
		{name: "a replay before any create", base: nil,
			fine: at(0, 10, create("k"), created("op_1")), bad: at(0, 10, create("k"), replayed("op_1"))},
		{name: "a 404 after the create completed", base: op(),
			fine: later(op(), get("op_1"), read(accepted, 1)), bad: later(op(), get("op_1"), refused(404, problem.NotFound))},
		{name: "a version that goes back for a later read", base: op(read(running, 3)),
			fine: later(op(read(running, 3)), get("op_1"), read(running, 4)),
			bad:  later(op(read(running, 3)), get("op_1"), read(dispatched, 2))},
		{name: "a version that goes back for a read overlapping none", base: op(read(dispatched, 2)),
			fine: at(15, 40, get("op_1"), read(accepted, 1)), // overlaps the read of version 2: it may go first
			bad:  at(21, 40, get("op_1"), read(accepted, 1))},
		{name: "one version, two states", base: op(read(running, 3)),
			fine: later(op(read(running, 3)), get("op_1"), read(running, 3)),
			bad:  later(op(read(running, 3)), get("op_1"), read(succeeded, 3))},
		{name: "succeeded then running", base: op(read(succeeded, 4)),
			fine: later(op(read(succeeded, 4)), get("op_1"), read(succeeded, 4)),
			bad:  later(op(read(succeeded, 4)), get("op_1"), read(running, 5))},
		{name: "a terminal state that changes", base: op(read(succeeded, 4)),
			fine: later(op(read(succeeded, 4)), get("op_1"), read(succeeded, 4)),
			bad:  later(op(read(succeeded, 4)), get("op_1"), read(failed, 5))},
		{name: "canceled that changes", base: op(read(canceled, 3)),
			fine: later(op(read(canceled, 3)), cancel("op_1", 0), is(200, canceled, 3)),
			bad:  later(op(read(canceled, 3)), get("op_1"), read(succeeded, 4))},
		// accepted → running in one fact is legal (started before dispatched); succeeded
		// needs two facts from accepted.
		{name: "accepted to succeeded in one fact", base: op(read(accepted, 1)),
			fine: later(op(read(accepted, 1)), get("op_1"), read(succeeded, 3)),
			bad:  later(op(read(accepted, 1)), get("op_1"), read(succeeded, 2))},
		{name: "accepted to outcome_unknown in one fact", base: op(read(accepted, 1)),
			fine: later(op(read(accepted, 1)), get("op_1"), read(running, 2)),
			bad:  later(op(read(accepted, 1)), get("op_1"), read(outcomeUnknown, 2))},
		{name: "dispatched after more facts than one", base: op(read(accepted, 1)),
			fine: later(op(read(accepted, 1)), get("op_1"), read(dispatched, 2)),
			bad:  later(op(read(accepted, 1)), get("op_1"), read(dispatched, 3))},
		{name: "a stale read after a completed cancel", base: with(op(read(dispatched, 2)), at(21, 30, cancel("op_1", 2), is(202, cancelling, 3))),
			fine: at(31, 40, get("op_1"), read(canceled, 4)),
			bad:  at(31, 40, get("op_1"), read(dispatched, 2))},
		{name: "a state cancelling cannot reach", base: with(op(read(dispatched, 2)), at(21, 30, cancel("op_1", 2), is(202, cancelling, 3))),
			fine: at(31, 40, get("op_1"), read(cancelling, 4)),
			bad:  at(31, 40, get("op_1"), read(running, 4))},
		{name: "cancelling that nobody asked for", base: op(read(running, 3)),
			fine: later(op(read(running, 3)), get("op_1"), read(canceled, 4)),
			bad:  later(op(read(running, 3)), get("op_1"), read(cancelling, 4))},
		{name: "a cancel answered for a state the operation had left", base: op(read(succeeded, 4)),
			fine: later(op(read(succeeded, 4)), cancel("op_1", 0), refused(409, problem.AlreadyTerminal)),
			bad:  later(op(read(succeeded, 4)), cancel("op_1", 0), is(202, cancelling, 5))},
		{name: "a 412 although If-Match was current", base: op(read(succeeded, 4)),
			fine: later(op(read(succeeded, 4)), cancel("op_1", 3), refused(412, problem.VersionMismatch)),
			bad:  later(op(read(succeeded, 4)), cancel("op_1", 4), refused(412, problem.VersionMismatch))},
		{name: "a 412 and then the version If-Match named", base: with(op(read(running, 3)), at(21, 30, cancel("op_1", 3), refused(412, problem.VersionMismatch))),
			fine: at(31, 40, get("op_1"), read(running, 4)),
			bad:  at(31, 40, get("op_1"), read(running, 3))},
		{name: "already_terminal then running", base: with(op(read(running, 3)), at(21, 30, cancel("op_1", 0), refused(409, problem.AlreadyTerminal))),
			fine: at(31, 40, get("op_1"), read(succeeded, 4)),
			bad:  at(31, 40, get("op_1"), read(running, 4))},
		{name: "a representation whose terminal disagrees with its state", base: op(),
			fine: later(op(), get("op_1"), read(failed, 2)),
			bad:  later(op(), get("op_1"), linearize.Output{Status: 200, State: failed, Version: 2})},
	} {
		t.Run(c.name, func(t *testing.T) {
			mustLinearize(t, with(c.base, c.fine))
			mustViolate(t, with(c.base, c.bad), "op_1")
		})
	}
}

// A call without an answer may have taken effect, at any time after it was made.
func TestUnknownAnswers(t *testing.T) {
	t.Run("a create without an answer may have bound its key", func(t *testing.T) {
		h := func(first linearize.Output) []linearize.Entry {
			return []linearize.Entry{
				at(0, 10, create("k"), first),
				at(20, 30, create("k"), reused("op_1")),
				at(31, 40, get("op_1"), read(dispatched, 2)),
			}
		}
		mustLinearize(t, h(noAnswer))
		mustLinearize(t, h(linearize.Output{Status: 504}))
		// Refused is not unknown: nothing bound the key, so the 409 cannot be.
		mustViolate(t, h(refused(429, problem.QuotaExceeded)), "op_1")
	})
	t.Run("a 5xx create may have been committed before the replay", func(t *testing.T) {
		h := func(first linearize.Output) []linearize.Entry {
			return []linearize.Entry{at(0, 10, create("k"), first), at(20, 30, create("k"), replayed("op_1"))}
		}
		mustLinearize(t, h(refused(503, problem.Unavailable)))
		mustViolate(t, h(refused(400, problem.InvalidInput)), "op_1")
	})
	// The cancel's recorded end is before a read that still sees running: it took effect
	// after that read, which only a return at infinity allows.
	t.Run("a cancel without an answer may take effect late", func(t *testing.T) {
		h := func(c linearize.Output) []linearize.Entry {
			return []linearize.Entry{
				at(0, 10, create("k"), created("op_1")),
				at(11, 20, get("op_1"), read(dispatched, 2)),
				at(21, 25, cancel("op_1", 0), c),
				at(30, 40, get("op_1"), read(running, 3)),
				at(41, 50, get("op_1"), read(cancelling, 4)),
				at(51, 60, get("op_1"), read(canceled, 5)),
			}
		}
		mustLinearize(t, h(noAnswer))
		mustLinearize(t, h(linearize.Output{Status: 502}))
		mustViolate(t, h(refused(429, problem.QuotaExceeded)), "op_1")
	})
	t.Run("a cancel without an answer and a stale If-Match changes nothing", func(t *testing.T) {
		mustViolate(t, []linearize.Entry{
			at(0, 10, create("k"), created("op_1")),
			at(11, 20, get("op_1"), read(running, 3)),
			at(21, 25, cancel("op_1", 2), noAnswer),
			at(30, 40, get("op_1"), read(cancelling, 4)),
		}, "op_1")
	})
	t.Run("an unknown answer does not excuse a regression", func(t *testing.T) {
		mustViolate(t, []linearize.Entry{
			at(0, 10, create("k"), created("op_1")),
			at(11, 20, cancel("op_1", 0), noAnswer),
			at(21, 30, get("op_1"), read(succeeded, 3)),
			at(31, 40, get("op_1"), read(cancelling, 4)),
		}, "op_1")
	})
	t.Run("a read without an answer constrains nothing", func(t *testing.T) {
		mustLinearize(t, []linearize.Entry{
			at(0, 10, create("k"), created("op_1")),
			at(11, 20, get("op_1"), read(running, 3)),
			at(21, 22, get("op_1"), linearize.Output{Status: 500, State: accepted, Version: 1}),
		})
	})
}

func TestAnOperationNoCreateNamedMayExist(t *testing.T) {
	// Its id came from somewhere the history does not show (a target_busy, say): something
	// unseen created it. Its versions are still held to the table.
	mustLinearize(t, []linearize.Entry{
		at(0, 10, get("op_x"), refused(404, problem.NotFound)),
		at(11, 20, get("op_x"), read(dispatched, 2)),
	})
	mustViolate(t, []linearize.Entry{
		at(0, 10, get("op_x"), read(running, 3)),
		at(11, 20, get("op_x"), read(accepted, 1)),
	}, "op_x")
}

func TestViolationsNameTheirPartitionAndTheStuckCall(t *testing.T) {
	h := with(valid(), at(100, 110, get("op_B"), read(cancelling, 3)))
	v := mustViolate(t, h, "op_B")
	if len(v.Keys) != 1 || v.Keys[0] != "kB" || v.Calls != 9 || v.Linearized >= v.Calls || len(v.Stuck) == 0 {
		t.Fatalf("got %v", v)
	}
}

func TestHistoriesThatCannotBeRead(t *testing.T) {
	for name, e := range map[string]linearize.Entry{
		"no key":              at(0, 1, linearize.Input{Kind: linearize.Create}, created("op_1")),
		"no operation":        at(0, 1, linearize.Input{Kind: linearize.Get}, read(accepted, 1)),
		"no kind":             at(0, 1, linearize.Input{OperationID: "op_1"}, read(accepted, 1)),
		"a 202 without an id": at(0, 1, create("k"), linearize.Output{Status: 202}),
		"answered too soon":   at(2, 1, get("op_1"), read(accepted, 1)),
	} {
		if _, err := linearize.Check([]linearize.Entry{e}, 0); !errors.Is(err, linearize.ErrHistory) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if _, err := linearize.Check([]linearize.Entry{at(2, 1, get("op_1"), noAnswer)}, 0); err != nil {
		t.Errorf("an unanswered call's return is not read: %v", err)
	}
}
