package dynamo_test

import (
	"context"
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// A parked Run takes each step's end once and in its order: its first step when the claim
// names another Run or none, each later step right after the one before; a second take of
// the same end, a step skipped, and a late take of an earlier Run's step are refused.
func TestAStepsEndIsTakenOnceInOrder(t *testing.T) {
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
		got, err := store.Claim(ctx, "op_1", tc.run, tc.first, tc.step)
		if err != nil || got != tc.taken {
			t.Fatalf("%d: %s takes step %d (first %d): %v, %v; want %v", i, tc.run, tc.step, tc.first, got, err, tc.taken)
		}
	}
	if got, err := store.Claim(ctx, "op_2", "run-a", 1, 1); !got || err != nil {
		t.Fatalf("another operation's claim is its own: %v %v", got, err)
	}
}
