// Package facts is the read-decide-append loop every writer after admission uses: read the
// operation, decide which facts follow from what it is now, append them conditionally on
// the version read, and on a conflict read again and decide again.
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
	Append(ctx context.Context, op operation.Operation, facts ...operation.Fact) (operation.Operation, error)
}

// Decide returns the facts to append given the operation as it is now; none means there is
// nothing to do.
type Decide func(op operation.Operation) ([]operation.Fact, error)

// MaxAttempts bounds how often Update re-reads after losing a race. Writers per operation
// are few (dispatcher, recorder, reconciler, a client's cancel), but the recorder writes a
// fact for every step a parked Run sends, as often as steps end: a cancel whose read and
// append take longer than a step (a loaded API) may lose several times in a row, and its
// decision stands each time.
const MaxAttempts = 12

// Update applies decide to the latest version of operation id until its facts are appended
// or it decides nothing. It returns the operation as it ends up.
func Update(ctx context.Context, store Store, id string, decide Decide) (operation.Operation, error) {
	return UpdateFrom(ctx, store, id, nil, decide)
}

// UpdateFrom is Update whose first attempt decides on read, the operation as its caller
// read it a moment ago, instead of reading it again (nil: read it); a lost race reads it
// afresh, as Update does.
func UpdateFrom(ctx context.Context, store Store, id string, read *operation.Operation, decide Decide) (operation.Operation, error) {
	var lastErr error
	for range MaxAttempts {
		var op operation.Operation
		var err error
		if read != nil {
			op, read = *read, nil
		} else if op, err = store.Load(ctx, id); err != nil {
			return op, err
		}
		facts, err := decide(op)
		if err != nil || len(facts) == 0 {
			return op, err
		}
		next, err := store.Append(ctx, op, facts...)
		if !errors.Is(err, operation.ErrConflict) {
			return next, err
		}
		lastErr = err
	}
	return operation.Operation{}, fmt.Errorf("operation %s kept changing: %w", id, lastErr)
}
