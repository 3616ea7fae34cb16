package dynamo

import (
	"context"
	"errors"
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

// Claim takes the end of step for the parked Run run of operation id, whose first step was
// first: true for the first delivery of that end, false for a second one (Lambda delivers
// at least once) or for a step out of the Run's order. The Run's first step is taken when
// the item names another Run or none; each later one when the item names this Run and the
// step before it.
func (s *Store) Claim(ctx context.Context, id, run string, first, step int) (bool, error) {
	cond := "attribute_not_exists(run_id) OR run_id <> :run"
	values := map[string]types.AttributeValue{":run": str(run), ":s": num(int64(step)),
		":exp": num(ceilUnix(s.now().Add(claimKeep)))}
	if step != first {
		cond = "run_id = :run AND taken = :prev"
		values[":prev"] = num(int64(step - 1))
	}
	err := s.retrySingle(ctx, func() error {
		_, err := s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.Table,
			Key:                       map[string]types.AttributeValue{attrPK: str(operationPK(id)), attrSK: str(skClaim)},
			UpdateExpression:          aws.String("SET run_id = :run, taken = :s, " + attrExpiresAt + " = :exp"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeValues: values,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, classify(err)
	}
	return true, nil
}
