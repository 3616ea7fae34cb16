package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
)

// Due returns up to limit operations whose due time has passed, oldest due first within
// each shard of the sparse due index: never a scan.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]reconcile.DueItem, error) {
	var due []reconcile.DueItem
	for shard := 0; shard < DueShards && len(due) < limit; shard++ {
		out, err := s.Client.Query(ctx, &dynamodb.QueryInput{
			TableName:              &s.Table,
			IndexName:              aws.String(IndexDue),
			KeyConditionExpression: aws.String("due_shard = :shard AND due_at <= :now"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":shard": str(fmt.Sprintf("DUE#%d", shard)), ":now": str(operation.FormatTime(now)),
			},
			Limit: aws.Int32(int32(limit - len(due))),
		})
		if err != nil {
			return due, classify(err)
		}
		for _, item := range out.Items {
			d := reconcile.DueItem{}
			d.ID, _ = strings.CutPrefix(item[attrPK].(*types.AttributeValueMemberS).Value, "OP#")
			if v, ok := item[attrVersion].(*types.AttributeValueMemberN); ok {
				d.Version, _ = strconv.Atoi(v.Value)
			}
			if v, ok := item[attrAttempts].(*types.AttributeValueMemberN); ok {
				d.Attempts, _ = strconv.Atoi(v.Value)
			}
			due = append(due, d)
		}
	}
	return due, nil
}

// Reschedule moves an operation's next look to at, counting the attempt, unless a fact
// was appended meanwhile (the new fact set its own due time; it wins).
func (s *Store) Reschedule(ctx context.Context, id string, version int, at time.Time, attempts int) error {
	err := s.retrySingle(ctx, func() error {
		_, err := s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 &s.Table,
			Key:                       map[string]types.AttributeValue{attrPK: str(operationPK(id)), attrSK: str(skMeta)},
			UpdateExpression:          aws.String("SET due_at = :at, reconcile_attempts = :n"),
			ConditionExpression:       aws.String("version = :v AND attribute_exists(due_at)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(operation.FormatTime(at)), ":n": num(int64(attempts)), ":v": num(int64(version))},
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return classify(err)
	}
	return nil
}
