// Package facts is the read-decide-append loop every writer after admission uses: read the
// operation, decide which facts follow from what it is now, append them conditionally on
// the version read, and on a conflict read again and decide again.
//
// A decision is a value, not a side effect: decide returns the facts and what its caller
// acts on once they are appended (a metric to count, an execution to stop). A lost race
// throws that attempt's decision away with its facts, so nothing one attempt decided can
// leak into the next, as it could when callers wrote their decisions into variables of
// their own and had to reset each one at the top of every attempt.
package facts

import (
	"context"
	"errors"
	"fmt"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// Store reads and appends an operation's facts.
type Store interface {
	Load(ctx context.Context, id string) (operation.Operation, error)
	// Append appends facts after op's version, conditionally: when another writer appended
	// since op was read it appends nothing and returns an error wrapping
	// operation.ErrConflict.
	Append(ctx context.Context, op operation.Operation, facts ...operation.Fact) (operation.Operation, error)
}

// Decide returns the facts to append given the operation as it is now (none: nothing to
// append), and the decision R they stand for, which Update hands back once they are
// appended. It is called again on a fresh read after every lost race, so it must decide
// from op and its own arguments only.
type Decide[R any] func(op operation.Operation) ([]operation.Fact, R, error)

// MaxAttempts bounds how often Update re-reads after losing a race. Writers per operation
// are few (dispatcher, recorder, reconciler, a client's cancel), but the recorder writes a
// fact for every step a parked Run sends, as often as steps end: a cancel whose read and
// append take longer than a step (a loaded API) may lose several times in a row, and its
// decision stands each time.
const MaxAttempts = 12

// Update applies decide to the latest version of operation id until its facts are appended
// or it decides nothing. It returns the operation as it ends up and the decision of the
// attempt that counted: the one whose facts were appended, or that appended none. When
// decide fails, its error and decision come back as it returned them; when the append fails
// (other than a lost race) or every attempt lost, the decision is R's zero value, since
// none of it was recorded.
func Update[R any](ctx context.Context, store Store, id string, decide Decide[R]) (operation.Operation, R, error) {
	return UpdateFrom(ctx, store, id, nil, decide)
}

// UpdateFrom is Update whose first attempt decides on read, the operation as its caller
// read it a moment ago, instead of reading it again (nil: read it); a lost race reads it
// afresh, as Update does.
func UpdateFrom[R any](ctx context.Context, store Store, id string, read *operation.Operation, decide Decide[R]) (operation.Operation, R, error) {
	var none R
	var lastErr error
	for range MaxAttempts {
		var op operation.Operation
		var err error
		if read != nil {
			op, read = *read, nil
		} else if op, err = store.Load(ctx, id); err != nil {
			return op, none, err
		}
		facts, decision, err := decide(op)
		if err != nil || len(facts) == 0 {
			return op, decision, err
		}
		next, err := store.Append(ctx, op, facts...)
		switch {
		case err == nil:
			return next, decision, nil
		case !errors.Is(err, operation.ErrConflict):
			return next, none, err
		}
		lastErr = err
	}
	return operation.Operation{}, none, fmt.Errorf("operation %s kept changing: %w", id, lastErr)
}
