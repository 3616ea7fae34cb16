package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
)

// A flood of due work in one shard of the due index does not starve repairs in the others
// (issue #12): with 150 due operations in one shard and one in each other shard, a run of
// 100 includes every other shard's operation, whatever minute it runs in.
func TestDueIsFairAcrossShards(t *testing.T) {
	t.Parallel()
	store, _, _ := newStore(t)
	ctx := context.Background()
	flood := dynamo.DueShardOf("op_flood_0")
	var lone []string
	others := map[string]bool{}
	admitted := 0
	for i := 0; admitted < 150 || len(others) < dynamo.DueShards-1; i++ {
		id := fmt.Sprintf("op_flood_%d", i)
		shard := dynamo.DueShardOf(id)
		switch {
		case shard == flood && admitted < 150:
			admitted++
		case shard != flood && !others[shard]:
			others[shard] = true
			lone = append(lone, id)
		default:
			continue
		}
		in := intent(id, "k-"+id, "demo:"+id)
		in.QuotaLimit = 0
		if _, err := store.Admit(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for minute := range dynamo.DueShards {
		at := now.Add(time.Hour + time.Duration(minute)*time.Minute) // everything is due
		due, err := store.Due(ctx, at, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, d := range due {
			if got[d.ID] {
				t.Fatalf("minute %d: %s twice", minute, d.ID)
			}
			got[d.ID] = true
		}
		if len(due) != 100 {
			t.Fatalf("minute %d: %d due, want 100", minute, len(due))
		}
		for _, id := range lone {
			if !got[id] {
				t.Fatalf("minute %d: %s (shard %s) starved by the flood in %s", minute, id, dynamo.DueShardOf(id), flood)
			}
		}
	}
}
