// Package memstore is an in-memory store for tests of the decisions made after admission:
// the facts store (facts.Store: Load, Append), admission's (admission.Store: Admit) and the
// recorder's claims (recorder.Claims: Claim, Callback), with the conditions of the DynamoDB
// store (internal/aws/dynamo) and nothing else. An append made on a version that is no
// longer the latest fails with operation.ErrConflict, as the real store's does, so that
// facts.Update's retries run here too; BeforeNextAppend lets a test make that race happen
// on purpose.
//
// internal/testkit/storetest holds the assertions this store and the DynamoDB store must
// both pass, so that this one cannot drift from the real one. Races between real
// transactions, and what DynamoDB refuses under load, are the DynamoDB Local and
// conflict-proxy suites' business, not this store's.
package memstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Store is an in-memory store. The zero value is not usable: make one with New.
type Store struct {
	mu sync.Mutex
	// facts holds each operation's facts as JSON, as the DynamoDB store keeps them in its
	// items: a Load decodes and folds them afresh, so no caller shares memory with another.
	facts   map[string][][]byte
	records map[string]admission.Record // idempotency records by tenant, principal and key
	locks   map[string]string           // target locks: the active operation holding each
	active  map[string]int              // quota counters: slots taken per tenant, and per caller
	claims  map[string]claim            // a parked Run's claim per operation
	// before holds the functions BeforeNextAppend queued, one for each next Append.
	before    []func(operation.Operation)
	conflicts int
	accepted  int // operations Accept admitted, for their keys and targets
}

type claim struct {
	run    string
	taken  int
	sentMS int64
}

// New returns an empty store.
func New() *Store {
	return &Store{facts: map[string][][]byte{}, records: map[string]admission.Record{}, locks: map[string]string{},
		active: map[string]int{}, claims: map[string]claim{}}
}

// BeforeNextAppend makes the next Append call f first, with the operation that Append was
// given, outside the store's lock: f may append a fact of its own (as a concurrent writer
// would between the caller's read and its write), and the caller's append then loses the
// race. Each call queues one f for one Append.
func (s *Store) BeforeNextAppend(f func(op operation.Operation)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = append(s.before, f)
}

// Conflicts counts the appends refused because another writer appended first.
func (s *Store) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

// Accept admits body as alice of tenant acme would through the API, with the real
// admission service and the built-in types at now, and returns the operation's id; an
// empty body is a demo.task on a target of its own. Tests of what comes after admission
// start from it, so that they cannot start from a history the API never writes.
func (s *Store) Accept(tb testing.TB, body string, now time.Time) string {
	tb.Helper()
	s.mu.Lock()
	s.accepted++
	n := s.accepted
	s.mu.Unlock()
	if body == "" {
		body = fmt.Sprintf(`{"type":"demo.task","input":{"target":"t%d"}}`, n)
	}
	svc := &admission.Service{Store: s, Registry: optype.Builtin(), Now: func() time.Time { return now },
		NewID: (&ids.Generator{Now: func() time.Time { return now }, Entropy: rand.Reader}).Operation}
	out, err := svc.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
		Key: fmt.Sprintf("k%d", n), MediaType: "application/json", Body: []byte(body)})
	if err != nil {
		tb.Fatalf("memstore: admit %s: %v", body, err)
	}
	return out.Record.OperationID
}

func scopeKey(parts ...string) string {
	b, _ := json.Marshal(parts) // unambiguous, whatever the parts hold
	return string(b)
}

// ceilUnix rounds up to whole seconds, as the DynamoDB store keeps an idempotency record's
// expiry (in seconds, so that a record never expires before its window ends).
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// Admit commits an admission as the DynamoDB store does, all or nothing: a live
// idempotency record of the same key is returned and nothing is written; otherwise another
// active operation on the target is target_busy, a full quota is quota_exceeded, and else
// the accepted fact is written, the target locked and the quota slots taken. Quotas are
// exact here (the real store spreads them over counters, and is exact too).
func (s *Store) Admit(_ context.Context, in admission.Intent) (*admission.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := scopeKey(in.Scope.Tenant, in.Scope.Principal, in.Key)
	if rec, ok := s.records[key]; ok && ceilUnix(rec.ExpiresAt) > in.Now.Unix() {
		rec.Body = append([]byte(nil), rec.Body...)
		return &rec, nil
	}
	if in.First.Admission == nil || in.First.Kind != operation.KindAccepted {
		return nil, problem.Wrap(problem.Internal, fmt.Errorf("%w: admission without an accepted fact", operation.ErrMalformedHistory), "An internal error occurred.")
	}
	adm := *in.First.Admission
	id := in.Record.OperationID
	if _, taken := s.facts[id]; taken {
		return nil, problem.Wrap(problem.Internal, fmt.Errorf("operation %s exists", id), "An internal error occurred.")
	}
	lock := scopeKey(adm.Tenant, adm.Principal, adm.Type, adm.Target)
	if holder, busy := s.locks[lock]; busy {
		return nil, problem.New(problem.TargetBusy, "Another active operation holds target %q.", adm.Target).WithOperation(holder)
	}
	weight := max(adm.QuotaWeight, 1)
	quotas := []struct {
		who, key string
		limit    int
	}{{"tenant", scopeKey(in.Scope.Tenant), in.QuotaLimit}, {"caller", scopeKey(in.Scope.Tenant, in.Scope.Principal), in.PrincipalQuotaLimit}}
	for _, q := range quotas {
		if q.limit > 0 && s.active[q.key]+weight > q.limit {
			if weight > 1 {
				return nil, problem.New(problem.QuotaExceeded, "The %s's active operations fill its quota of %d slots; this type takes %d.", q.who, q.limit, weight).
					WithRetryAfter(30 * time.Second)
			}
			return nil, problem.New(problem.QuotaExceeded, "The %s has %d active operations, the most allowed.", q.who, q.limit).
				WithRetryAfter(30 * time.Second)
		}
	}
	first := in.First
	first.Version = 1
	first.Admission = &adm
	raw, err := json.Marshal(first)
	if err != nil {
		return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	for _, q := range quotas {
		if q.limit > 0 {
			s.active[q.key] += weight
		}
	}
	s.facts[id] = [][]byte{raw}
	s.locks[lock] = id
	rec := in.Record
	rec.ExpiresAt = time.Unix(ceilUnix(rec.ExpiresAt), 0).UTC()
	rec.Body = append([]byte(nil), rec.Body...)
	s.records[key] = rec
	return nil, nil
}

// Facts returns an operation's facts in version order; an unknown id is not_found.
func (s *Store) Facts(_ context.Context, id string) ([]operation.Fact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decoded(id)
}

func (s *Store) decoded(id string) ([]operation.Fact, error) {
	stored, ok := s.facts[id]
	if !ok {
		return nil, problem.New(problem.NotFound, "No such operation.")
	}
	out := make([]operation.Fact, len(stored))
	for i, raw := range stored {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, problem.Wrap(problem.Internal, fmt.Errorf("%w: %w", operation.ErrMalformedHistory, err), "An internal error occurred.")
		}
	}
	return out, nil
}

// Load folds operation id's facts; an unknown id is not_found. A parked Run's callback is
// left out of the lease, as the DynamoDB store's snapshot leaves it out: Callback reads it
// from the fact that took it (Operation.LeaseVersion).
func (s *Store) Load(_ context.Context, id string) (operation.Operation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	facts, err := s.decoded(id)
	if err != nil {
		return operation.Operation{}, err
	}
	op, err := operation.Fold(id, facts)
	if err != nil {
		return op, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	if op.Lease != nil && op.LeaseVersion > 0 {
		op.Lease.Callback = ""
	}
	return op, nil
}

// Append appends facts after op's version, conditionally, as the DynamoDB store does: an
// illegal fact is rejected before anything is written (operation.ErrIllegalTransition),
// and an operation that moved past op.Version since it was read gets nothing appended and
// an error wrapping operation.ErrConflict. A terminal fact frees the target lock and the
// quota slots the operation held. It returns op with the facts applied.
func (s *Store) Append(_ context.Context, op operation.Operation, facts ...operation.Fact) (operation.Operation, error) {
	s.mu.Lock()
	var before func(operation.Operation)
	if len(s.before) > 0 {
		before, s.before = s.before[0], s.before[1:]
	}
	s.mu.Unlock()
	if before != nil {
		before(op)
	}
	next := op
	raws := make([][]byte, 0, len(facts))
	for _, f := range facts {
		f.Version = next.Version + 1
		var err error
		if next, err = next.Apply(f); err != nil {
			return op, fmt.Errorf("append to %s: %w", op.ID, err)
		}
		raw, err := json.Marshal(f)
		if err != nil {
			return op, problem.Wrap(problem.Internal, err, "An internal error occurred.")
		}
		raws = append(raws, raw)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.facts[op.ID]
	if !ok || len(stored) != op.Version {
		// (The real store cannot tell an unknown operation from a moved one here either:
		// the projection's condition fails for both.)
		s.conflicts++
		return op, fmt.Errorf("append to %s at version %d: %w", op.ID, op.Version, operation.ErrConflict)
	}
	s.facts[op.ID] = append(stored, raws...)
	if next.State.Terminal() && !op.State.Terminal() {
		s.release(op)
	}
	return next, nil
}

// release frees what an active operation holds: its target lock (only if it is still the
// operation's) and its quota slots.
func (s *Store) release(op operation.Operation) {
	lock := scopeKey(op.Tenant, op.Principal, op.Type, op.Target)
	if s.locks[lock] == op.ID {
		delete(s.locks, lock)
	}
	weight := max(op.QuotaWeight, 1)
	if op.QuotaReserved {
		s.active[scopeKey(op.Tenant)] -= weight
	}
	if op.PrincipalQuotaReserved {
		s.active[scopeKey(op.Tenant, op.Principal)] -= weight
	}
}

// Claim takes the ends of steps prev+1 to taken for the parked Run run of operation id,
// as the DynamoDB store's Claim does (recorder.Claims): the Run's first take (prev+1 =
// first) is allowed when the claim names another Run or none, each later one when it names
// this Run and prev. last is when the step before went out as the claim it replaced says
// (to the millisecond; zero when there was none).
func (s *Store) Claim(_ context.Context, id, run string, first, prev, taken int, sent time.Time) (bool, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, exists := s.claims[id]
	allowed := !exists || old.run != run
	if prev+1 != first {
		allowed = exists && old.run == run && old.taken == prev
	}
	if !allowed {
		return false, time.Time{}, nil
	}
	s.claims[id] = claim{run: run, taken: taken, sentMS: sent.UnixMilli()}
	if !exists {
		return true, time.Time{}, nil
	}
	return true, time.UnixMilli(old.sentMS), nil
}

// Callback is the callback of the lease that fact version of operation id took; "" when
// that fact has none or does not exist.
func (s *Store) Callback(_ context.Context, id string, version int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := s.facts[id]
	if version < 1 || version > len(stored) {
		return "", nil
	}
	var f operation.Fact
	if err := json.Unmarshal(stored[version-1], &f); err != nil {
		return "", problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	if f.Lease == nil {
		return "", nil
	}
	return f.Lease.Callback, nil
}
