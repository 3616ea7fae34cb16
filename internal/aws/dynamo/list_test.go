package dynamo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// A cursor of the right caller and filters whose position is not an operation id (a client
// can craft one: cursors are base64url JSON) is a 400, not a 500 from DynamoDB refusing the
// start key (issue #12, low findings).
func TestCraftedCursorIs400(t *testing.T) {
	t.Parallel()
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

// The contract bounds a cursor (api/openapi.yaml, maxLength of cursor and nextCursor): one
// this store writes for the longest scope and filters fits, and a longer one is refused.
func TestCursorFitsItsBound(t *testing.T) {
	t.Parallel()
	tenant := strings.Repeat("t", 256)                                               // a Cognito custom:tenant's maxLen
	principal := "arn:aws:iam::123456789012:role/" + strings.Repeat("p/", 255) + "r" // an IAM role's path and name, at their limits
	filters := "outcome_unknown|" + strings.Repeat("a", 64)                          // the longest state and type name
	c := dynamo.CraftCursor(tenant, principal, filters, "op_01ARYZ6S410000000000000000")
	if len(c) > dynamo.MaxCursorLen {
		t.Fatalf("a cursor of the longest scope is %d characters, over %d", len(c), dynamo.MaxCursorLen)
	}
	store, _, _ := newStore(t)
	_, _, err := store.List(context.Background(), httpapi.ListQuery{Tenant: "acme", Principal: "alice", Limit: 10,
		Cursor: strings.Repeat("A", dynamo.MaxCursorLen+1)})
	if pe := problem.As(err); pe.Code != problem.InvalidInput {
		t.Errorf("a cursor over the bound: %v, want invalid_input", err)
	}
}
