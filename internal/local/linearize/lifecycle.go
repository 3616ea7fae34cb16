package linearize

import (
	"errors"
	"fmt"
	"slices"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// none is the index of the state before the first fact: the operation does not exist yet.
const none = 0

// kinds lists every fact kind of internal/core/operation. The package has no list of its
// own; a test parses operation.go and fails when this one falls behind, because a kind
// missing here would be a background step the checker does not know and would raise false
// alarms.
func kinds() []operation.Kind {
	return []operation.Kind{operation.KindAccepted, operation.KindDispatched, operation.KindStarted,
		operation.KindCancelRequested, operation.KindProgress, operation.KindSucceeded, operation.KindFailed,
		operation.KindCanceled, operation.KindOutcomeUnknown, operation.KindSignaled, operation.KindRetried}
}

// reach answers, for background facts only, which states an operation can be in n facts
// after a state, for every n. The sets reachable in exactly n steps are a deterministic
// sequence of subsets of a finite set, so it repeats: seq holds it up to the first repeat
// and loop is where the repeating part starts.
type reach struct {
	seq  [][]uint32 // seq[s][n], a bit per state index
	loop []int
	// minN[s][t] is the fewest facts from s to t, -1 when t cannot be reached; once[s][t]
	// says t is reachable after exactly one number of facts (so its version is exact).
	minN [][]int32
	once [][]bool
}

func (r *reach) at(s uint8, n int) uint32 {
	seq := r.seq[s]
	if n < len(seq) {
		return seq[n]
	}
	loop := r.loop[s]
	return seq[loop+(n-loop)%(len(seq)-loop)]
}

// answer is what a cancel does in a state (docs/lifecycle.md, Cancellation): the status
// without If-Match, the facts it appends and the state they lead to.
type answer struct {
	status int
	facts  int
	post   uint8
}

// lifecycle is what the model needs of the transition table, computed from operation.Next
// once per check (nothing here is package state).
type lifecycle struct {
	states []operation.State // index none is ""
	index  map[operation.State]uint8
	// bg is reachability by background facts: every kind but those clients write
	// (accepted, cancel_requested, signaled). orphan adds accepted, for an operation no recorded
	// create named, so that something unseen may have created it.
	bg, orphan reach
	cancel     []answer
}

func newLifecycle() (*lifecycle, error) {
	states := append([]operation.State{""}, operation.States()...)
	if len(states) > 32 {
		return nil, fmt.Errorf("%d states do not fit the checker's 32-bit state sets", len(states))
	}
	lc := &lifecycle{states: states, index: make(map[operation.State]uint8, len(states))}
	for i, s := range states {
		lc.index[s] = uint8(i)
	}
	// Signals are a client's too, and retries an operator's: histories the checker reads send
	// none, so none happens in the background (a self-loop there would let any version pass,
	// and a retry would let an unknown outcome run again unasked).
	client := []operation.Kind{operation.KindAccepted, operation.KindCancelRequested, operation.KindSignaled, operation.KindRetried}
	var background, orphan []operation.Kind
	for _, k := range kinds() {
		if !slices.Contains(client, k) {
			background = append(background, k)
		}
	}
	orphan = append(slices.Clone(background), operation.KindAccepted)
	lc.bg = lc.reachBy(background)
	lc.orphan = lc.reachBy(orphan)
	for i := range states {
		a, err := lc.cancelAnswer(uint8(i))
		if err != nil {
			return nil, err
		}
		lc.cancel = append(lc.cancel, a)
	}
	return lc, nil
}

// reachBy tabulates reachability by facts of the given kinds.
func (lc *lifecycle) reachBy(ks []operation.Kind) reach {
	n := len(lc.states)
	step := make([]uint32, n)
	for i, s := range lc.states {
		for _, k := range ks {
			if next, err := operation.Next(s, k); err == nil {
				step[i] |= 1 << lc.index[next]
			}
		}
	}
	r := reach{seq: make([][]uint32, n), loop: make([]int, n), minN: make([][]int32, n), once: make([][]bool, n)}
	for s := range n {
		seq := []uint32{1 << s}
		for {
			var next uint32
			for t := range n {
				if seq[len(seq)-1]&(1<<t) != 0 {
					next |= step[t]
				}
			}
			if j := slices.Index(seq, next); j >= 0 {
				r.loop[s] = j
				break
			}
			seq = append(seq, next)
		}
		r.seq[s] = seq
		r.minN[s] = make([]int32, n)
		r.once[s] = make([]bool, n)
		for t := range n {
			r.minN[s][t] = -1
			count := 0
			for i, set := range seq {
				if set&(1<<t) == 0 {
					continue
				}
				if r.minN[s][t] < 0 {
					r.minN[s][t] = int32(i)
				}
				count++
				if i >= r.loop[s] {
					count = 2 // in the repeating part: reachable at infinitely many lengths
				}
			}
			r.once[s][t] = count == 1
		}
	}
	return r
}

var errContract = errors.New("the transition table no longer supports the cancel contract")

// cancelAnswer is docs/lifecycle.md's cancellation table, with the facts' effects taken from
// operation.Next, so the checker follows the table rather than a copy of it.
func (lc *lifecycle) cancelAnswer(i uint8) (answer, error) {
	s := lc.states[i]
	var appended []operation.Kind
	switch {
	case s == "":
		return answer{status: 404, post: i}, nil
	case s == operation.Canceled:
		return answer{status: 200, post: i}, nil
	case s == operation.Cancelling:
		return answer{status: 202, post: i}, nil
	case s == operation.Accepted:
		// Nothing started: the intent and its result are one decision.
		appended = []operation.Kind{operation.KindCancelRequested, operation.KindCanceled}
	default:
		if _, err := operation.Next(s, operation.KindCancelRequested); err != nil {
			return answer{status: 409, post: i}, nil
		}
		appended = []operation.Kind{operation.KindCancelRequested}
	}
	post := s
	for _, k := range appended {
		var err error
		if post, err = operation.Next(post, k); err != nil {
			return answer{}, fmt.Errorf("%w: cancel from %s: %w", errContract, s, err)
		}
	}
	return answer{status: 202, facts: len(appended), post: lc.index[post]}, nil
}
