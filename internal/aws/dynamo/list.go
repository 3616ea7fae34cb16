package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
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

// maxListPages bounds the index pages one list request reads when filters skip items, so a
// sparse filter costs a short page and a cursor, never an unbounded walk.
const maxListPages = 10

// cursor is the position after which the next page starts. It is bound to the scope and
// the filters it was made for; it carries nothing the caller could not see.
type cursor struct {
	Scope string `json:"s"`
	Query string `json:"q"`
	After string `json:"a"` // operation id
}

// createdSlack widens the id range a list by creation time reads: an operation's id is
// minted a moment before its createdAt is taken (admission.Service.Admit), from the same
// clock, so the ids of the operations created in a window lie within a minute of it either
// way. The window's exact bounds are a filter on created_at.
const createdSlack = time.Minute

// List returns one page and the cursor of the next ("" when there is none). It reads the
// scope index only: never a scan, never another caller's partition. A creation-time window
// is a range of the index's sort key (the id, a ULID, whose time prefix is the creation
// time), so a narrow window reads a narrow range; state, type, target prefix and the
// window's exact bounds are filters.
func (s *Store) List(ctx context.Context, q httpapi.ListQuery) ([]operation.Representation, string, error) {
	scope := scopeKey(q.Tenant, q.Principal)
	filters := listFilters(q)
	if !q.CreatedAfter.IsZero() && !q.CreatedBefore.IsZero() && !q.CreatedAfter.Before(q.CreatedBefore) {
		return nil, "", nil // an empty window
	}
	in := &dynamodb.QueryInput{
		TableName:                 &s.Table,
		IndexName:                 aws.String(IndexByScope),
		ExpressionAttributeValues: map[string]types.AttributeValue{":scope": str(scope)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(q.Limit)),
	}
	key := "gsi1pk = :scope"
	lo, hi := "", ""
	if !q.CreatedAfter.IsZero() {
		lo = "op_" + ids.TimePrefix(q.CreatedAfter.Add(-createdSlack))
		in.ExpressionAttributeValues[":lo"] = str(lo)
	}
	if !q.CreatedBefore.IsZero() {
		// Every id minted before the prefix's millisecond sorts below it.
		hi = "op_" + ids.TimePrefix(q.CreatedBefore.Add(createdSlack))
		in.ExpressionAttributeValues[":hi"] = str(hi)
	}
	switch {
	case lo != "" && hi != "":
		key += " AND gsi1sk BETWEEN :lo AND :hi" // an id is never the bare prefix :hi
	case lo != "":
		key += " AND gsi1sk >= :lo"
	case hi != "":
		key += " AND gsi1sk < :hi"
	}
	in.KeyConditionExpression = aws.String(key)
	var conds []string
	names := map[string]string{}
	filter := func(cond, name, attr, value string, v types.AttributeValue) {
		conds = append(conds, cond)
		names[name] = attr
		in.ExpressionAttributeValues[value] = v
	}
	if q.State != "" {
		filter("#state = :state", "#state", attrState, ":state", str(string(q.State)))
	}
	if q.Type != "" {
		filter("#type = :type", "#type", attrType, ":type", str(q.Type))
	}
	if q.TargetPrefix != "" {
		filter("begins_with(#target, :target)", "#target", attrTarget, ":target", str(q.TargetPrefix))
	}
	if !q.CreatedAfter.IsZero() {
		filter("#created >= :after", "#created", attrCreatedAt, ":after", str(operation.FormatTime(q.CreatedAfter)))
	}
	if !q.CreatedBefore.IsZero() {
		filter("#created < :before", "#created", attrCreatedAt, ":before", str(operation.FormatTime(q.CreatedBefore)))
	}
	if len(conds) > 0 {
		in.FilterExpression = aws.String(strings.Join(conds, " AND "))
		in.ExpressionAttributeNames = names
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		// The cursor is the caller's to send back, so it is input like any other: an id
		// that is not one, or one outside the window's range, would make a start key
		// DynamoDB refuses, a 500.
		if err != nil || c.Scope != scope || c.Query != filters || !ids.Valid("op_", c.After) ||
			(lo != "" && c.After < lo) || (hi != "" && c.After >= hi) {
			return nil, "", &problem.Error{Code: problem.InvalidInput, Detail: "The cursor is not valid for this caller and these filters.",
				Fields: []problem.FieldError{{Pointer: "/cursor", Detail: "not a cursor of this list"}}}
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			attrGSI1PK: str(scope), attrGSI1SK: str(c.After), attrPK: str(operationPK(c.After)), attrSK: str(skMeta),
		}
	}

	var items []operation.Representation
	last := "" // id after which the next page starts
	for page := 0; page < maxListPages; page++ {
		out, err := s.Client.Query(ctx, in)
		if err != nil {
			return nil, "", classify(err)
		}
		for i, item := range out.Items {
			rep, err := decodeRep(item)
			if err != nil {
				return nil, "", problem.Wrap(problem.Internal, err, "An internal error occurred.")
			}
			items = append(items, rep)
			last = rep.OperationID
			if len(items) == q.Limit {
				// More may follow unless this was the index's very last item.
				if i == len(out.Items)-1 && len(out.LastEvaluatedKey) == 0 {
					return items, "", nil
				}
				return items, encodeCursor(cursor{Scope: scope, Query: filters, After: last}), nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, "", nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		last = out.LastEvaluatedKey[attrGSI1SK].(*types.AttributeValueMemberS).Value
	}
	// The filters skipped too much to fill the page within bounded work: hand back what was
	// found and where to go on.
	return items, encodeCursor(cursor{Scope: scope, Query: filters, After: last}), nil
}

// listFilters is what a cursor is bound to besides the scope: "<state>|<type>", as cursors
// have always been, and, when the target prefix or a creation-time bound is set, a digest
// of those (a target prefix may hold any character, and is kept out of the cursor).
func listFilters(q httpapi.ListQuery) string {
	f := string(q.State) + "|" + q.Type
	if q.TargetPrefix == "" && q.CreatedAfter.IsZero() && q.CreatedBefore.IsZero() {
		return f
	}
	bound := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return operation.FormatTime(t)
	}
	return f + "|" + digest(q.TargetPrefix, bound(q.CreatedAfter), bound(q.CreatedBefore))
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// MaxCursorLen bounds a cursor (api/openapi.yaml, the cursor parameter and nextCursor): one
// this store writes is far shorter (the scope, an IAM principal's ARN or a Cognito sub with
// its tenant, the filters and an operation id, as base64 of JSON), and a longer one is
// refused before it is decoded.
const MaxCursorLen = 4096

func decodeCursor(s string) (cursor, error) {
	var c cursor
	if len(s) > MaxCursorLen {
		return c, fmt.Errorf("a cursor is at most %d characters", MaxCursorLen)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	return c, nil
}
