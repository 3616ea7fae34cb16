package dynamo

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/operation"
)

// StreamFact reads a stream record that inserts a fact: the operation id and the fact's
// kind. Other records (projections, locks, idempotency records, removals) are not facts.
func StreamFact(rec events.DynamoDBEventRecord) (id string, kind operation.Kind, ok bool) {
	img := rec.Change.NewImage
	pk, sk, k := img[attrPK], img[attrSK], img["kind"]
	if rec.EventName != string(events.DynamoDBOperationTypeInsert) || pk.DataType() != events.DataTypeString ||
		sk.DataType() != events.DataTypeString || k.DataType() != events.DataTypeString ||
		!strings.HasPrefix(sk.String(), factPrefix) {
		return "", "", false
	}
	id, ok = strings.CutPrefix(pk.String(), "OP#")
	return id, operation.Kind(k.String()), ok
}

// AcceptedOperation returns the id of an operation whose accepted fact a record inserts.
func AcceptedOperation(rec events.DynamoDBEventRecord) (string, bool) {
	id, kind, ok := StreamFact(rec)
	return id, ok && kind == operation.KindAccepted
}

// AcceptedFilter is the event source mapping's filter pattern for the dispatcher: inserted
// accepted facts only, so the function is not invoked for anything else.
const AcceptedFilter = `{"eventName":["INSERT"],"dynamodb":{"NewImage":{"kind":{"S":["accepted"]},"sk":{"S":[{"prefix":"FACT#"}]}}}}`

// FactFilter matches every inserted fact (the notifier's mapping).
const FactFilter = `{"eventName":["INSERT"],"dynamodb":{"NewImage":{"sk":{"S":[{"prefix":"FACT#"}]}}}}`
