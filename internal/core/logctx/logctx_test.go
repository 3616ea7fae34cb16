package logctx

import (
	"context"
	"testing"
)

func TestWithAndSet(t *testing.T) {
	base := context.Background()
	Set(base, Fields{OperationID: "op_lost"}) // no unit of work: nothing to set
	if got := From(base); got != (Fields{}) {
		t.Fatalf("a bare context has fields %+v", got)
	}
	req := With(base, Fields{RequestID: "req_1", CorrelationID: "c_req"})
	op := With(req, Fields{OperationID: "op_1"})
	Set(op, Fields{CorrelationID: "c_op"})
	if got, want := From(op), (Fields{RequestID: "req_1", CorrelationID: "c_op", OperationID: "op_1"}); got != want {
		t.Errorf("unit: %+v, want %+v", got, want)
	}
	if got, want := From(req), (Fields{RequestID: "req_1", CorrelationID: "c_req"}); got != want {
		t.Errorf("Set on a derived unit changed its parent: %+v, want %+v", got, want)
	}
	derived := context.WithValue(op, struct{}{}, 1)
	Set(derived, Fields{OperationID: "op_2"})
	if got := From(op).OperationID; got != "op_2" {
		t.Errorf("Set through a derived context: %q", got)
	}
}
