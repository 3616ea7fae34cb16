package dynamo

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
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

// Attention is UnknownOutcomes as the API serves it to operators (GET /v1/attention): the
// page after the cursor the previous page gave, whose position is opaque to the caller
// (base64url). A cursor this store did not write is invalid_input before anything is read.
func (s *Store) Attention(ctx context.Context, q httpapi.AttentionQuery) ([]httpapi.TenantOperation, string, error) {
	after := ""
	if q.Cursor != "" {
		var ok bool
		if after, ok = decodeAttentionCursor(q.Cursor); !ok {
			return nil, "", &problem.Error{Code: problem.InvalidInput, Detail: "The cursor is not a cursor of this list.",
				Fields: []problem.FieldError{{Pointer: "/cursor", Detail: "not a cursor of this list"}}}
		}
	}
	items, next, err := s.UnknownOutcomes(ctx, q.Limit, after)
	if err != nil {
		return nil, "", err
	}
	out := make([]httpapi.TenantOperation, 0, len(items))
	for _, u := range items {
		out = append(out, httpapi.TenantOperation{Tenant: u.Tenant, Operation: u.Representation})
	}
	if next != "" {
		next = base64.RawURLEncoding.EncodeToString([]byte(next))
	}
	return out, next, nil
}

// decodeAttentionCursor reads the position an attention cursor carries: the attention
// index's sort key, <time the outcome became unknown>#<operation id>, checked for what it
// must be, so that DynamoDB is never handed a start key it refuses.
func decodeAttentionCursor(c string) (string, bool) {
	if len(c) > MaxCursorLen {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	at, id, ok := strings.Cut(string(b), "#")
	if !ok || !ids.Valid("op_", id) {
		return "", false
	}
	if t, err := time.Parse(operation.TimeFormat, at); err != nil || operation.FormatTime(t) != at {
		return "", false
	}
	return string(b), true
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
