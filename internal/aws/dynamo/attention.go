package dynamo

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Unknown is an operation waiting for an operator, with the tenant it belongs to (which its
// public representation does not carry).
type Unknown struct {
	Tenant string
	operation.Representation
}

// UnknownOutcomes lists operations in outcome_unknown across every tenant, oldest first,
// from the sparse attention index: up to limit of them after the position after ("" for
// the first page), and the position of the next page ("" when there is none). It is for
// operators, never for a client's answer.
func (s *Store) UnknownOutcomes(ctx context.Context, limit int, after string) ([]Unknown, string, error) {
	in := s.attentionQuery()
	in.Limit = aws.Int32(int32(limit))
	if after != "" {
		at, id, ok := strings.Cut(after, "#")
		if !ok || at == "" || id == "" {
			return nil, "", problem.New(problem.InvalidInput, "Not a position of this list.")
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{attrAttention: str(attentionUnknown), attrAttentionAt: str(after),
			attrPK: str(operationPK(id)), attrSK: str(skMeta)}
	}
	out, err := s.Client.Query(ctx, in)
	if err != nil {
		return nil, "", classify(err)
	}
	items := make([]Unknown, 0, len(out.Items))
	for _, item := range out.Items {
		rep, err := decodeRep(item)
		if err != nil {
			return nil, "", problem.Wrap(problem.Internal, err, "An internal error occurred.")
		}
		u := Unknown{Representation: rep}
		if v, ok := item[attrTenant].(*types.AttributeValueMemberS); ok {
			u.Tenant = v.Value
		}
		items = append(items, u)
	}
	next := ""
	if v, ok := out.LastEvaluatedKey[attrAttentionAt].(*types.AttributeValueMemberS); ok {
		next = v.Value
	}
	return items, next, nil
}

// CountUnknownOutcomes counts the operations waiting for an operator (the reconciler logs it
// every run, for the alarm on their number).
func (s *Store) CountUnknownOutcomes(ctx context.Context) (int, error) {
	in := s.attentionQuery()
	in.Select = types.SelectCount
	n := 0
	for {
		out, err := s.Client.Query(ctx, in)
		if err != nil {
			return n, classify(err)
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// attentionQuery reads the operations in outcome_unknown from the attention index.
func (s *Store) attentionQuery() *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 &s.Table,
		IndexName:                 aws.String(IndexAttention),
		KeyConditionExpression:    aws.String("#a = :unknown"),
		ExpressionAttributeNames:  map[string]string{"#a": attrAttention},
		ExpressionAttributeValues: map[string]types.AttributeValue{":unknown": str(attentionUnknown)},
	}
}
