package dynamo

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// skClaim is the item, beside an operation's facts, that says which step's end a parked Run
// took last (recorder.Claims): one small item, on no index and filtered out of every stream
// mapping, so that taking a step's end costs one write unit and no fact, no event.
const skClaim = "CLAIM"

// claimKeep is how long a claim item outlives its last claim: a parked Run ends within
// hours; the item is only needed while it goes on.
const claimKeep = 7 * 24 * time.Hour

// Claim takes the ends of steps prev+1 to taken for the parked Run run of operation id,
// whose first step was first, and records sent, when the Run's next step goes out: true
// for the first take of those ends, false for a second one (Lambda delivers at least once)
// or for steps out of the Run's order. The Run's first take (prev+1 = first) is allowed
// when the item names another Run or none; each later one when it names this Run and prev.
// last is when the step before went out, as the take before recorded it (zero when none).
func (s *Store) Claim(ctx context.Context, id, run string, first, prev, taken int, sent time.Time) (bool, time.Time, error) {
	cond := "attribute_not_exists(run_id) OR run_id <> :run"
	values := map[string]types.AttributeValue{":run": str(run), ":s": num(int64(taken)),
		":sent": num(sent.UnixMilli()), ":exp": num(ceilUnix(s.now().Add(claimKeep)))}
	if prev+1 != first {
		cond = "run_id = :run AND taken = :prev"
		values[":prev"] = num(int64(prev))
	}
	var old map[string]types.AttributeValue
	err := s.retrySingle(ctx, func() error {
		out, err := s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.Table,
			Key:                       map[string]types.AttributeValue{attrPK: str(operationPK(id)), attrSK: str(skClaim)},
			UpdateExpression:          aws.String("SET run_id = :run, taken = :s, sent_at = :sent, " + attrExpiresAt + " = :exp"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeValues: values,
			ReturnValues:              types.ReturnValueUpdatedOld,
		})
		if out != nil {
			old = out.Attributes
		}
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, time.Time{}, nil
	case err != nil:
		return false, time.Time{}, classify(err)
	}
	last := time.Time{}
	if n, ok := old["sent_at"].(*types.AttributeValueMemberN); ok {
		if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			last = time.UnixMilli(ms)
		}
	}
	return true, last, nil
}

// Callback is the callback of the lease that fact version of operation id took (a parked
// Run's: Operation.LeaseVersion), which the snapshot leaves out; "" when that fact has none.
func (s *Store) Callback(ctx context.Context, id string, version int) (string, error) {
	item, err := s.get(ctx, id, factSK(version))
	if err != nil || item == nil {
		return "", err
	}
	f, err := decodeFact(item)
	if err != nil || f.Lease == nil {
		return "", err
	}
	return f.Lease.Callback, nil
}
