package dynamotest

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
)

// Admitter creates accepted operations (alice of tenant acme) for tests of what comes after
// admission.
type Admitter struct {
	service *admission.Service
	n       atomic.Int64
}

// NewAdmitter admits into store on the given clock.
func NewAdmitter(store *dynamo.Store, now func() time.Time) *Admitter {
	gen := &ids.Generator{Now: now, Entropy: rand.Reader}
	return &Admitter{service: &admission.Service{Store: store, Registry: optype.Builtin(), Now: now, NewID: gen.Operation}}
}

// Admit admits body (a demo.task on a fresh target when body is "") and returns the id.
func (a *Admitter) Admit(tb testing.TB, body string) string {
	tb.Helper()
	return a.AdmitCorrelated(tb, body, "")
}

// AdmitCorrelated is Admit with the correlation id the API would have given the request.
func (a *Admitter) AdmitCorrelated(tb testing.TB, body, correlationID string) string {
	tb.Helper()
	n := a.n.Add(1)
	if body == "" {
		body = fmt.Sprintf(`{"type":"demo.task","input":{"target":"t%d"}}`, n)
	}
	out, err := a.service.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
		Key: fmt.Sprintf("k%d", n), MediaType: "application/json", Body: []byte(body), CorrelationID: correlationID})
	if err != nil {
		tb.Fatal(err)
	}
	return out.Record.OperationID
}

// Cancel asks to cancel operation id as its owner (alice of acme) does through the API, with
// the real intent service: cancel_requested and canceled in one append while the operation
// is still accepted, cancel_requested alone once it was dispatched or started. Tests use it
// instead of appending intent facts by hand, so they cannot build a history the API never
// writes. It returns the operation after the call.
func Cancel(tb testing.TB, store *dynamo.Store, id string) operation.Operation {
	tb.Helper()
	s := &intent.Service{Store: store, Now: time.Now}
	op, _, err := s.Cancel(context.Background(), id, intent.Sender{Principal: "alice"}, func(operation.Operation) bool { return true }, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return op
}

// FactRecord is the stream record of inserting fact 1 of kind for operation id, shaped as
// the table's stream delivers it to a function.
func FactRecord(id, kind, sequence string) events.DynamoDBEventRecord {
	var r events.DynamoDBEventRecord
	r.EventName = "INSERT"
	r.Change.SequenceNumber = sequence
	r.Change.NewImage = map[string]events.DynamoDBAttributeValue{
		"pk":   events.NewStringAttribute("OP#" + id),
		"sk":   events.NewStringAttribute("FACT#00000001"),
		"kind": events.NewStringAttribute(kind),
	}
	return r
}

// Load reads an operation, failing the test on error.
func Load(tb testing.TB, store *dynamo.Store, id string) operation.Operation {
	tb.Helper()
	op, err := store.Load(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return op
}
