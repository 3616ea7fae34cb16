package dynamo

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/notify"
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

// OutboxOperation returns the id of an operation whose accepted, signaled or retried fact a
// record inserts: the dispatcher starts the work of the first, wakes work that waits for
// the second, and starts the step an operator had run again for the third.
func OutboxOperation(rec events.DynamoDBEventRecord) (string, bool) {
	id, kind, ok := StreamFact(rec)
	return id, ok && (kind == operation.KindAccepted || kind == operation.KindSignaled || kind == operation.KindRetried)
}

// OutboxFilter is the event source mapping's filter pattern for the dispatcher: inserted
// accepted, signaled and retried facts only, so the function is not invoked for anything
// else.
const OutboxFilter = `{"eventName":["INSERT"],"dynamodb":{"NewImage":{"kind":{"S":["accepted","signaled","retried"]},"sk":{"S":[{"prefix":"FACT#"}]}}}}`

// ProjectionFilter matches inserts and updates of operations' projections: each is one
// committed state change (the notifier's mapping).
const ProjectionFilter = `{"eventName":["INSERT","MODIFY"],"dynamodb":{"NewImage":{"sk":{"S":["META"]}}}}`

// ProjectionChange reads a projection stream record. ok is false for records that are not a
// new version of a projection (the reconciler's bookkeeping updates keep the version).
func ProjectionChange(rec events.DynamoDBEventRecord) (notify.StateChange, bool, error) {
	img, old := rec.Change.NewImage, rec.Change.OldImage
	if img[attrSK].DataType() != events.DataTypeString || img[attrSK].String() != skMeta ||
		(rec.EventName != "INSERT" && rec.EventName != "MODIFY") {
		return notify.StateChange{}, false, nil
	}
	version, err := imageInt(img, attrVersion)
	if err != nil {
		return notify.StateChange{}, false, err
	}
	c := notify.StateChange{Version: version, State: operation.State(imageString(img, attrState)), Tenant: imageString(img, attrTenant),
		CorrelationID: imageString(img, attrCorrelation)}
	c.OperationID, _ = strings.CutPrefix(imageString(img, attrPK), "OP#")
	if old != nil {
		if v, err := imageInt(old, attrVersion); err == nil && v == version {
			return notify.StateChange{}, false, nil
		}
		c.PreviousState = operation.State(imageString(old, attrState))
	}
	if err := json.Unmarshal([]byte(imageString(img, attrRep)), &c.Rep); err != nil {
		return notify.StateChange{}, false, fmt.Errorf("projection of %s: %w", c.OperationID, err)
	}
	return c, true, nil
}

func imageString(img map[string]events.DynamoDBAttributeValue, name string) string {
	if v, ok := img[name]; ok && v.DataType() == events.DataTypeString {
		return v.String()
	}
	return ""
}

func imageInt(img map[string]events.DynamoDBAttributeValue, name string) (int, error) {
	v, ok := img[name]
	if !ok || v.DataType() != events.DataTypeNumber {
		return 0, fmt.Errorf("projection without %s", name)
	}
	n, err := strconv.Atoi(v.Number())
	if err != nil {
		return 0, fmt.Errorf("projection %s: %w", name, err)
	}
	return n, nil
}
