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
// each shard of the sparse due index: never a scan. Every shard gets its share of the limit
// first, and what the shares leave goes to shards in an order that rotates with the clock,
// so a flood of due work in some shards never starves the repairs waiting in the others.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]reconcile.DueItem, error) {
	var due []reconcile.DueItem
	start := int(now.Unix()/60) % DueShards // a new first shard every minute (every run on AWS)
	share := max(1, limit/DueShards)
	taken := make([]int, DueShards)
	more := make([]bool, DueShards) // the shard had more due than its share
	for k := range DueShards {
		shard := (start + k) % DueShards
		n := min(share, limit-len(due))
		if n <= 0 {
			break
		}
		items, err := s.dueIn(ctx, shard, now, n)
		if err != nil {
			return due, err
		}
		due, taken[shard], more[shard] = append(due, items...), len(items), len(items) == n
	}
	for k := range DueShards {
		shard := (start + k) % DueShards
		if len(due) >= limit {
			break
		}
		if !more[shard] {
			continue
		}
		// Oldest first again: skip what the first pass took.
		items, err := s.dueIn(ctx, shard, now, taken[shard]+limit-len(due))
		if err != nil {
			return due, err
		}
		due = append(due, items[min(taken[shard], len(items)):]...)
	}
	return due, nil
}

// dueIn reads up to n due operations of one shard, oldest due first.
func (s *Store) dueIn(ctx context.Context, shard int, now time.Time, n int) ([]reconcile.DueItem, error) {
	out, err := s.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:              &s.Table,
		IndexName:              aws.String(IndexDue),
		KeyConditionExpression: aws.String("due_shard = :shard AND due_at <= :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": str(fmt.Sprintf("DUE#%d", shard)), ":now": str(operation.FormatTime(now)),
		},
		Limit: aws.Int32(int32(n)),
	})
	if err != nil {
		return nil, classify(err)
	}
	items := make([]reconcile.DueItem, 0, len(out.Items))
	for _, item := range out.Items {
		d := reconcile.DueItem{}
		d.ID, _ = strings.CutPrefix(item[attrPK].(*types.AttributeValueMemberS).Value, "OP#")
		if v, ok := item[attrVersion].(*types.AttributeValueMemberN); ok {
			d.Version, _ = strconv.Atoi(v.Value)
		}
		if v, ok := item[attrAttempts].(*types.AttributeValueMemberN); ok {
			d.Attempts, _ = strconv.Atoi(v.Value)
		}
		items = append(items, d)
	}
	return items, nil
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
