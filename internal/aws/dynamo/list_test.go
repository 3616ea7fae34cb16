package dynamo_test

import (
	"context"
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// A cursor of the right caller and filters whose position is not an operation id (a client
// can craft one: cursors are base64url JSON) is a 400, not a 500 from DynamoDB refusing the
// start key (issue #12, low findings).
func TestCraftedCursorIs400(t *testing.T) {
	store, _, _ := newStore(t)
	for _, after := range []string{"", "x", "op_not-an-id", "OP#op_01ARYZ6S410000000000000000"} {
		crafted := dynamo.CraftCursor("acme", "alice", "|", after)
		_, _, err := store.List(context.Background(), httpapi.ListQuery{Tenant: "acme", Principal: "alice", Limit: 10, Cursor: crafted})
		if pe := problem.As(err); pe.Code != problem.InvalidInput {
			t.Errorf("after %q: %v, want invalid_input", after, err)
		}
	}
	if _, _, err := store.List(context.Background(), httpapi.ListQuery{Tenant: "acme", Principal: "alice", Limit: 10,
		Cursor: dynamo.CraftCursor("acme", "alice", "|", "op_01ARYZ6S410000000000000000")}); err != nil {
		t.Errorf("a well-formed cursor: %v", err)
	}
}
