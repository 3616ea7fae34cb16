package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// A parked Run takes each step's end once and in its order: its first step when the claim
// names another Run or none, each later step right after the one before; a second take of
// the same end, a step skipped, and a late take of an earlier Run's step are refused.
func TestAStepsEndIsTakenOnceInOrder(t *testing.T) {
	t.Parallel()
	client, _ := dynamotest.NewClient(t)
	store := dynamo.New(client, dynamotest.NewTable(t, client))
	ctx := context.Background()
	for i, tc := range []struct {
		run         string
		first, step int
		taken       bool
	}{
		{"run-a", 1, 1, true},
		{"run-a", 1, 1, false}, // the same end again
		{"run-a", 1, 3, false}, // out of order
		{"run-a", 1, 2, true},
		{"run-b", 4, 4, true},  // the next Run, from its first step
		{"run-a", 1, 3, false}, // the earlier Run, late
		{"run-b", 4, 5, true},
		{"run-b", 4, 4, false},
	} {
		got, _, err := store.Claim(ctx, "op_1", tc.run, tc.first, tc.step-1, tc.step, time.Now())
		if err != nil || got != tc.taken {
			t.Fatalf("%d: %s takes step %d (first %d): %v, %v; want %v", i, tc.run, tc.step, tc.first, got, err, tc.taken)
		}
	}
	if got, _, err := store.Claim(ctx, "op_2", "run-a", 1, 0, 1, time.Now()); !got || err != nil {
		t.Fatalf("another operation's claim is its own: %v %v", got, err)
	}
	// Steps run in one invocation are taken at once, and each take says when the step
	// before went out.
	at := time.UnixMilli(time.Now().UnixMilli())
	if got, last, err := store.Claim(ctx, "op_2", "run-a", 1, 1, 4, at); !got || err != nil || last.IsZero() {
		t.Fatalf("steps 2 to 4: %v %v %v", got, last, err)
	}
	if got, last, err := store.Claim(ctx, "op_2", "run-a", 1, 4, 5, at.Add(time.Second)); !got || err != nil || !last.Equal(at) {
		t.Fatalf("step 5: %v, the step before went out %v (want %v), %v", got, last, at, err)
	}
}
