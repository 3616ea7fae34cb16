package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// The correlation id is recorded with the accepted fact, folded into the operation and kept
// on the projection item through later facts (the notifier reads it there); an operation
// without one has no attribute. The admission's traceparent is recorded in the fact too
// (the dispatcher links to it), and an operation admitted without one reads as before.
func TestCorrelationIDIsKept(t *testing.T) {
	t.Parallel()
	store, client, table := newStore(t)
	ctx := context.Background()
	in := intent("op_01JDY3Q4W5E6R7T8Y9V0CORR01", "k-corr", "demo:corr")
	in.First.Admission.CorrelationID = "4bf92f3577b34da6a3ce929d0e0e4736"
	in.First.Admission.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if _, err := store.Admit(ctx, in); err != nil {
		t.Fatal(err)
	}
	plain := intent("op_01JDY3Q4W5E6R7T8Y9V0CORR02", "k-plain", "demo:plain")
	if _, err := store.Admit(ctx, plain); err != nil {
		t.Fatal(err)
	}
	op, err := store.Load(ctx, in.Record.OperationID)
	if err != nil || op.CorrelationID != "4bf92f3577b34da6a3ce929d0e0e4736" || op.Traceparent != in.First.Admission.Traceparent {
		t.Fatalf("%q %q %v", op.CorrelationID, op.Traceparent, err)
	}
	if p, err := store.Load(ctx, plain.Record.OperationID); err != nil || p.Traceparent != "" || p.CorrelationID != "" {
		t.Fatalf("an operation admitted without trace fields: %+v %v", p.Admission, err)
	}
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindDispatched, At: now, Source: operation.SourceDispatcher, Execution: "x"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := meta(t, client, table, op.ID)["correlation_id"].(*types.AttributeValueMemberS); !ok || v.Value != op.CorrelationID {
		t.Errorf("projection after a fact: %v", meta(t, client, table, op.ID)["correlation_id"])
	}
	if _, ok := meta(t, client, table, plain.Record.OperationID)["correlation_id"]; ok {
		t.Error("an operation without a correlation id has the attribute")
	}
}
