// Package linearize checks that what longrun's clients saw is linearizable: that some single
// order of their requests, each taking effect at one instant between its call and its
// answer, explains every answer under the API's contract. A load driver records each request
// and its answer with a [Recorder]; [Check] hands the history to porcupine
// (github.com/anishathalye/porcupine) with the model below.
//
// # The model
//
// The server holds, per caller's Idempotency-Key, at most one operation id, and per operation
// one register: its (version, state), the fold of its append-only facts. Two kinds of writer
// change a register. Clients do, through the requests recorded here: a create appends
// accepted, a cancel appends cancel_requested (and canceled when nothing started). The
// server does, unseen: the dispatcher, the workflow, the reconciler and operators append
// every other fact in the background, at any time. The model allows that hidden progress
// between any two client requests, which is what makes it a model of longrun and not of a
// plain register. The rules, each a condition on the order the checker looks for:
//
//  1. One operation per key. A create answered 202 without Idempotent-Replayed binds its key
//     to the new operation id, and only an unbound key can be bound; a replayed 202 and a 409
//     idempotency_key_reused must name the operation the key is already bound to. So two
//     operation ids for one key, a replay before any create, and a 409 naming another
//     operation are all violations; so is one operation id named by two keys.
//  2. Per operation, versions only rise and states follow the transition table. The version
//     is the number of facts, and each fact is a transition of operation.Next, so a read of
//     (v, s) after (v0, s0) needs a path of exactly v−v0 background facts from s0 to s in
//     the table. Equal versions therefore mean equal states, a lower version is never
//     legal, and a terminal state never changes (nothing follows it). Skips are judged on
//     the table too: accepted→running in one fact is legal (the worker's started may land
//     before dispatched), accepted→succeeded in one fact is not (two facts, through
//     dispatched or running, are).
//  3. A read that starts after a write completed sees it. A completed create leaves the
//     operation at version 1, accepted, so a later read is never 404 and never below it; a
//     completed cancel leaves the state it answered (cancelling, or canceled when nothing had
//     started) at the version it answered, and later reads go on from there. Background
//     progress never writes a client's fact, so cancelling is only ever seen after some
//     cancel could have taken effect, and an operation no create named comes into
//     existence only by a hidden create.
//
// Cancel's answers follow docs/lifecycle.md: 404 before the operation exists, 412 when
// If-Match is not the current version (checked first), 200 when already canceled, 202 with
// no new fact when cancelling, 202 with cancel_requested and canceled from accepted, 202
// with cancel_requested where the table allows it, and 409 already_terminal otherwise.
//
// # Why this strength
//
// Reads are judged against every state the background could have reached, not only the last
// one a client saw, so a slow worker or a quiet operation never produces a false alarm;
// but a read must be reachable from everything linearized before it, so a stale read after
// a completed cancel, a version that goes back, a state the table forbids and a phantom
// cancel all fail, as do two operations behind one key. Concurrent requests may take effect
// in either order, which is what linearizability allows and no more.
//
// # Unknown answers
//
// A request with no answer (a timeout, a reset connection: status 0) or a 5xx may or may
// not have taken effect, and may take effect long after the client gave up. Such a call's
// return is put at infinity, so porcupine may place it anywhere after its call, or last,
// where it changes nothing. A create without an answer may bind its key to the operation
// the key's other answers name; a cancel without an answer may or may not have appended
// its facts. Reads without an answer constrain nothing.
//
// # Cost
//
// Porcupine checks each partition (a key and its operation) on its own, and its search
// grows exponentially with the calls that overlap within one. Check therefore first drops
// the calls whose answers others imply: calls that changed nothing and assert nothing, and
// of the reads that saw one answer all but the one that returned first and the one called
// last. That loses nothing: versions only rise, so an answer seen at two instants held
// all the time between them, and every dropped read overlaps that time. A partition is
// then a handful of calls however densely its operation was polled; BenchmarkCheck has
// the figures.
//
// # What it cannot catch
//
//   - Anything beyond operationId, state, version and terminal: progress, result, problem,
//     timestamps and the event stream are not modelled.
//   - Liveness: an operation that never leaves accepted is linearizable.
//   - Constraints across operations: target locks, quotas (target_busy and 429 are taken as
//     requests that changed nothing).
//   - GET /v1/operations (List) is left out: a page is a read of many registers at
//     different instants and would join every operation into one partition.
//   - The idempotency window: a key reused after it expires (24 h by default) makes a new
//     operation, which this model reports as two operations for one key. Histories must be
//     shorter than the window.
//   - Facts written by clients the recorder did not see: every create and cancel made on the
//     recorded operations must be in the history, or their effects look like phantoms.
//     Reads are one caller's view: another caller's operation is 404 to it, so a history
//     of several callers must read only each caller's own operations.
//   - After an answer that does not pin the state (409 already_terminal, a 412 that rules
//     out the version the client saw, a cancel with no answer) the model keeps, per state, a
//     least version instead of the exact set, so a few impossible versions right after such
//     an answer go unnoticed.
//   - Times must come from one clock: requests from several machines need one recorder, or
//     their clocks' skew becomes false order.
package linearize

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Kind is the request a call made.
type Kind uint8

const (
	// Create is POST /v1/operations with an Idempotency-Key.
	Create Kind = iota + 1
	// Get is GET /v1/operations/{id}.
	Get
	// Cancel is POST /v1/operations/{id}/cancel, with or without If-Match.
	Cancel
)

func (k Kind) String() string {
	switch k {
	case Create:
		return "create"
	case Get:
		return "get"
	case Cancel:
		return "cancel"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Input is what a call asked.
type Input struct {
	Kind Kind `json:"kind"`
	// Key is a create's Idempotency-Key. Keys are the caller's own: a history of several
	// callers must make them distinct (prefix them with the caller).
	Key string `json:"key,omitempty"`
	// OperationID is the operation a get or a cancel names.
	OperationID string `json:"operationId,omitempty"`
	// IfMatch is the version a cancel's If-Match named; 0 when it sent none, "*" or a list
	// of versions (the answer is then not held to one).
	IfMatch int `json:"ifMatch,omitempty"`
}

// Output is what a call was answered. Status 0 means no answer (a timeout, a reset
// connection); it and any 5xx are answers the checker treats as unknown.
type Output struct {
	Status int `json:"status"`
	// Code is the problem's code of a 4xx (create's 409 needs it to tell
	// idempotency_key_reused from target_busy).
	Code problem.Code `json:"code,omitempty"`
	// OperationID is the 202 body's operationId of a create, the operationId of a 409
	// idempotency_key_reused, or the representation's of a get or a cancel.
	OperationID string `json:"operationId,omitempty"`
	// Replayed is a create's Idempotent-Replayed: true header. It matters: a 202 without
	// it says this request made the operation, which only one request per key can.
	Replayed bool `json:"replayed,omitempty"`
	// State, Version and Terminal are the representation of a get's 200 and a cancel's 200
	// or 202.
	State    operation.State `json:"state,omitempty"`
	Version  int             `json:"version,omitempty"`
	Terminal bool            `json:"terminal,omitempty"`
}

// Unknown reports whether the answer leaves open whether the request took effect.
func (o Output) Unknown() bool { return o.Status == 0 || o.Status >= 500 }

// Entry is one call: what it asked, what it was answered and when, in nanoseconds of the
// recorder's clock. Return means nothing when the output is unknown.
type Entry struct {
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
}

func (e Entry) String() string {
	return describe(e.Input, e.Output)
}

// Recorder records a history; safe for concurrent use by any number of drivers.
type Recorder struct {
	now     func() int64
	mu      sync.Mutex
	entries []Entry
	ended   []bool
}

// NewRecorder returns a recorder reading clock for every call and answer, in nanoseconds
// that never go back; nil reads the monotonic clock from now on.
func NewRecorder(clock func() int64) *Recorder {
	if clock == nil {
		start := time.Now()
		clock = func() int64 { return int64(time.Since(start)) }
	}
	return &Recorder{now: clock}
}

// Call is a request under way; End it with its answer.
type Call struct {
	r *Recorder
	i int
}

// Begin records that the request in is about to be sent: call it before sending, so that
// the recorded call time is no later than the real one.
func (r *Recorder) Begin(in Input) *Call {
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, Entry{Input: in, Call: at})
	r.ended = append(r.ended, false)
	return &Call{r: r, i: len(r.entries) - 1}
}

// End records the call's answer: call it after the answer was read, so that the recorded
// return is no earlier than the real one. A call that never ends counts as unanswered; a
// second End is ignored, so a driver may End in a defer as well.
func (c *Call) End(out Output) {
	at := c.r.now()
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	if c.r.ended[c.i] {
		return
	}
	c.r.ended[c.i] = true
	c.r.entries[c.i].Output = out
	c.r.entries[c.i].Return = at
}

// History returns a copy of the calls recorded so far, in the order they began.
func (r *Recorder) History() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := make([]Entry, len(r.entries))
	copy(h, r.entries)
	for i, ended := range r.ended {
		if !ended {
			h[i].Output = Output{}
		}
	}
	return h
}

// describe writes a call for people: "cancel op_1 If-Match 3 → 202 cancelling v4".
func describe(in Input, out Output) string {
	var s string
	switch in.Kind {
	case Create:
		s = "create " + in.Key
	case Cancel:
		s = "cancel " + in.OperationID
		if in.IfMatch != 0 {
			s += " If-Match " + strconv.Itoa(in.IfMatch)
		}
	default:
		s = in.Kind.String() + " " + in.OperationID
	}
	switch {
	case out.Status == 0:
		return s + " → no answer"
	case out.Status >= 500:
		return fmt.Sprintf("%s → %d (unknown)", s, out.Status)
	case in.Kind == Create && out.Status == 202 && out.Replayed:
		return fmt.Sprintf("%s → 202 %s replayed", s, out.OperationID)
	case in.Kind == Create && out.Status == 202:
		return fmt.Sprintf("%s → 202 %s", s, out.OperationID)
	case out.State != "":
		return fmt.Sprintf("%s → %d %s v%d", s, out.Status, out.State, out.Version)
	case out.OperationID != "":
		return fmt.Sprintf("%s → %d %s %s", s, out.Status, out.Code, out.OperationID)
	}
	return fmt.Sprintf("%s → %d %s", s, out.Status, out.Code)
}
