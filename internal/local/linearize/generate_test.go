package linearize_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/local/linearize"
)

// simulate returns a linearizable history by construction: per operation, a server keeps
// the true (version, state), background facts land at random instants, and every request
// takes effect at a random instant inside its call and is answered from the server's state
// there. The operations' lives overlap over ten minutes, and so do each operation's calls.
func simulate(seed uint64, ops, callsPerOp int) []linearize.Entry {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var h []linearize.Entry
	for i := range ops {
		h = append(h, simulateOne(rng, fmt.Sprintf("op_%04d", i), fmt.Sprintf("key-%04d", i), callsPerOp)...)
	}
	slices.SortStableFunc(h, func(a, b linearize.Entry) int { return int(a.Call - b.Call) })
	return h
}

// ifMatchLater marks a cancel whose If-Match is decided when it takes effect.
const ifMatchLater = -2

// request is a call with the instant it takes effect; drop means it never reached the
// server (a lost request: no answer and no effect).
type request struct {
	entry linearize.Entry
	at    int64
	drop  bool
}

type server struct {
	state   operation.State
	version int
	bound   bool
}

func (s *server) apply(k operation.Kind) {
	next, err := operation.Next(s.state, k)
	if err != nil {
		panic(fmt.Sprintf("the simulation broke the table: %v", err))
	}
	s.state, s.version = next, s.version+1
}

// background picks the next fact the dispatcher, the workflow or an operator writes, or ""
// when nothing follows.
func (s *server) background(rng *rand.Rand) operation.Kind {
	p := rng.Float64()
	switch s.state {
	case operation.Accepted:
		if p < 0.8 {
			return operation.KindDispatched
		}
		return operation.KindStarted
	case operation.Dispatched:
		if p < 0.9 {
			return operation.KindStarted
		}
		return operation.KindFailed
	case operation.Running:
		switch {
		case p < 0.55:
			return operation.KindProgress
		case p < 0.9:
			return operation.KindSucceeded
		case p < 0.95:
			return operation.KindFailed
		}
		return operation.KindOutcomeUnknown
	case operation.Cancelling:
		if p < 0.3 {
			return operation.KindProgress
		}
		return operation.KindCanceled
	case operation.OutcomeUnknown:
		return operation.KindSucceeded // an operator's resolution
	}
	return ""
}

func (s *server) representation(status int) linearize.Output {
	return linearize.Output{Status: status, State: s.state, Version: s.version, Terminal: s.state.Terminal()}
}

// answer decides a request at its instant, as the API would.
func (s *server) answer(in linearize.Input, id string) linearize.Output {
	switch in.Kind {
	case linearize.Create:
		if in.IfMatch < 0 { // the simulation's mark for "the same key, another body"
			if s.bound {
				return linearize.Output{Status: 409, Code: problem.IdempotencyKeyReused, OperationID: id}
			}
		} else if s.bound {
			return linearize.Output{Status: 202, OperationID: id, Replayed: true}
		}
		s.bound = true
		s.apply(operation.KindAccepted)
		return linearize.Output{Status: 202, OperationID: id}
	case linearize.Get:
		if !s.bound {
			return linearize.Output{Status: 404, Code: problem.NotFound}
		}
		return s.representation(200)
	}
	switch {
	case !s.bound:
		return linearize.Output{Status: 404, Code: problem.NotFound}
	case in.IfMatch != 0 && in.IfMatch != s.version:
		return linearize.Output{Status: 412, Code: problem.VersionMismatch, OperationID: id}
	case s.state == operation.Canceled:
		return s.representation(200)
	case s.state == operation.Cancelling:
		return s.representation(202)
	case s.state == operation.Accepted:
		s.apply(operation.KindCancelRequested)
		s.apply(operation.KindCanceled)
		return s.representation(202)
	case s.state == operation.Dispatched || s.state == operation.Running:
		s.apply(operation.KindCancelRequested)
		return s.representation(202)
	}
	return linearize.Output{Status: 409, Code: problem.AlreadyTerminal, OperationID: id}
}

func simulateOne(rng *rand.Rand, id, key string, calls int) []linearize.Entry {
	ms := int64(time.Millisecond)
	start := rng.Int64N(int64(10 * time.Minute))
	life := 2000 * ms
	span := func(from int64) (int64, int64) {
		call := from + rng.Int64N(life)
		return call, call + ms + rng.Int64N(40*ms)
	}
	var reqs []request
	add := func(in linearize.Input, call, ret int64) {
		reqs = append(reqs, request{entry: linearize.Entry{Input: in, Call: call, Return: ret}, at: call + rng.Int64N(ret-call+1)})
	}
	// The create, and a racing retry of it that often overlaps it.
	first := start + ms + rng.Int64N(20*ms)
	add(linearize.Input{Kind: linearize.Create, Key: key}, start, first)
	retry := start + rng.Int64N(30*ms)
	add(linearize.Input{Kind: linearize.Create, Key: key}, retry, max(retry+ms, first)+rng.Int64N(30*ms))
	n := 2
	if rng.IntN(10) == 0 { // the key again, with another body
		call, ret := span(first)
		add(linearize.Input{Kind: linearize.Create, Key: key, IfMatch: -1}, call, ret)
		n++
	}
	if rng.IntN(3) == 0 { // a cancel, early in the operation's life
		call := first + rng.Int64N(600*ms)
		add(linearize.Input{Kind: linearize.Cancel, OperationID: id, IfMatch: ifMatchLater}, call, call+ms+rng.Int64N(40*ms))
		n++
	}
	for ; n < calls; n++ {
		call, ret := span(first)
		add(linearize.Input{Kind: linearize.Get, OperationID: id}, call, ret)
	}
	for i := range reqs {
		if rng.IntN(100) == 0 { // the answer was lost; the request sometimes too
			reqs[i].drop = rng.IntN(2) == 0
			reqs[i].entry.Output.Status = -1
		}
	}
	slices.SortFunc(reqs, func(a, b request) int { return int(a.at - b.at) })
	srv := &server{}
	next := start + rng.Int64N(100*ms) // the next background fact
	for i := range reqs {
		r := &reqs[i]
		for next < r.at {
			if k := srv.background(rng); k != "" && srv.bound {
				srv.apply(k)
			}
			next += 10*ms + rng.Int64N(300*ms)
		}
		lost := r.entry.Output.Status == -1
		if r.drop {
			r.entry.Output = linearize.Output{}
			continue
		}
		if r.entry.Input.IfMatch == ifMatchLater {
			// A client sends the version it last read: mostly the current one, sometimes
			// one a fact has since overtaken, sometimes none.
			r.entry.Input.IfMatch = []int{srv.version, srv.version, max(srv.version-1, 1), 0}[rng.IntN(4)]
		}
		r.entry.Output = srv.answer(r.entry.Input, id)
		if lost {
			r.entry.Output = linearize.Output{}
		}
	}
	h := make([]linearize.Entry, len(reqs))
	for i, r := range reqs {
		h[i] = r.entry
		h[i].Input.IfMatch = max(h[i].Input.IfMatch, 0)
	}
	return h
}
