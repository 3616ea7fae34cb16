package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// The bounds of one Stats call (docs/operator-api.md, "What the stats cost").
const (
	// StatsInFlightPerShard is how many operations of each of the due index's shards one
	// call reads the state of: DueShards times as many in all. Past it the call is partial.
	StatsInFlightPerShard = 250
	// StatsUnknownPages is how many pages (1 MB each) of the attention index one call
	// counts. Past them the call is partial.
	StatsUnknownPages = 10
	// batchGetMax is the most keys one BatchGetItem takes.
	batchGetMax = 100
)

// Stats counts the operations in flight, by state, and those waiting for an operator, and
// finds the oldest in flight, from the indexes, never a scan:
//
//   - the due index holds exactly the operations in flight (accepted, dispatched, running,
//     cancelling: operation.DueAt), spread over DueShards partitions; its projection has
//     their ids (the table's key) but not their state, so each shard is queried for ids
//     (StatsInFlightPerShard of them at most) and their states are read from their
//     projection items with BatchGetItem, eventually consistent;
//   - ids are ULIDs, so the oldest in flight is the least id among those read: its
//     representation and tenant are one more read;
//   - the attention index holds exactly the operations in outcome_unknown: counted with
//     Select COUNT, StatsUnknownPages pages at most.
//
// An operation that moved on between the index and its item (it ended, or its outcome
// became unknown) is not counted in flight. Partial says that a bound was hit: the counts
// are then lower bounds, and the oldest is the oldest of those read.
func (s *Store) Stats(ctx context.Context) (httpapi.Stats, error) {
	return s.stats(ctx, StatsInFlightPerShard, StatsUnknownPages)
}

// stats is Stats within the bounds given: perShard operations of each due shard, pages
// pages of the attention index.
func (s *Store) stats(ctx context.Context, perShard, pages int) (httpapi.Stats, error) {
	st := httpapi.Stats{AsOf: s.now(), InFlight: map[operation.State]int{}}
	var inFlight []string
	for shard := range DueShards {
		got, more, err := s.dueIDs(ctx, shard, perShard)
		if err != nil {
			return st, err
		}
		inFlight = append(inFlight, got...)
		st.Partial = st.Partial || more
	}
	states, err := s.statesOf(ctx, inFlight)
	if err != nil {
		return st, err
	}
	slices.Sort(inFlight) // oldest first: ids sort by creation time
	oldest := ""
	for _, id := range inFlight {
		switch state := states[id]; state {
		case operation.Accepted, operation.Dispatched, operation.Running, operation.Cancelling:
			st.InFlight[state]++
			if oldest == "" {
				oldest = id
			}
		}
	}
	if oldest != "" {
		o, err := s.tenantOperation(ctx, oldest)
		if err != nil {
			return st, err
		}
		st.OldestInFlight = o
	}
	n, more, err := s.countUnknown(ctx, pages)
	if err != nil {
		return st, err
	}
	st.OutcomeUnknown, st.Partial = n, st.Partial || more
	return st, nil
}

// dueIDs reads the ids of up to limit operations of one shard of the due index; more says
// that the shard holds more than limit.
func (s *Store) dueIDs(ctx context.Context, shard, limit int) (out []string, more bool, err error) {
	in := &dynamodb.QueryInput{
		TableName:                 &s.Table,
		IndexName:                 aws.String(IndexDue),
		KeyConditionExpression:    aws.String("#shard = :shard"),
		ProjectionExpression:      aws.String("#pk"),
		ExpressionAttributeNames:  map[string]string{"#shard": attrDueShard, "#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(fmt.Sprintf("DUE#%d", shard))},
	}
	for {
		// One more than is still wanted: its presence says the shard has more.
		in.Limit = aws.Int32(int32(limit - len(out) + 1))
		page, err := s.Client.Query(ctx, in)
		if err != nil {
			return nil, false, classify(err)
		}
		for _, item := range page.Items {
			if len(out) == limit {
				return out, true, nil
			}
			if pk, ok := item[attrPK].(*types.AttributeValueMemberS); ok {
				if id, ok := strings.CutPrefix(pk.Value, "OP#"); ok {
					out = append(out, id)
				}
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, false, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// statesOf reads the state of each operation in ids from its projection item, eventually
// consistent, batchGetMax at a time; an id without an item is left out.
func (s *Store) statesOf(ctx context.Context, ids []string) (map[string]operation.State, error) {
	states := make(map[string]operation.State, len(ids))
	for batch := range slices.Chunk(ids, batchGetMax) {
		keys := make([]map[string]types.AttributeValue, 0, len(batch))
		for _, id := range batch {
			keys = append(keys, map[string]types.AttributeValue{attrPK: str(operationPK(id)), attrSK: str(skMeta)})
		}
		req := map[string]types.KeysAndAttributes{s.Table: {Keys: keys, ProjectionExpression: aws.String("#pk, #state"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#state": attrState}}}
		r := s.retrier("stats_read")
		for len(req) > 0 {
			out, err := s.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, classify(err)
			}
			for _, item := range out.Responses[s.Table] {
				pk, _ := item[attrPK].(*types.AttributeValueMemberS)
				state, _ := item[attrState].(*types.AttributeValueMemberS)
				if pk != nil && state != nil {
					states[strings.TrimPrefix(pk.Value, "OP#")] = operation.State(state.Value)
				}
			}
			req = out.UnprocessedKeys
			if len(req) > 0 && !r.wait(ctx) {
				return nil, errBusy(errors.New("the stats' reads kept coming back unprocessed"))
			}
		}
	}
	return states, nil
}

// tenantOperation reads operation id's representation and tenant from its projection item,
// eventually consistent (nil when it has none).
func (s *Store) tenantOperation(ctx context.Context, id string) (*httpapi.TenantOperation, error) {
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.Table,
		Key:                      map[string]types.AttributeValue{attrPK: str(operationPK(id)), attrSK: str(skMeta)},
		ProjectionExpression:     aws.String("#rep, #tenant"),
		ExpressionAttributeNames: map[string]string{"#rep": attrRep, "#tenant": attrTenant},
	})
	if err != nil {
		return nil, classify(err)
	}
	if out.Item == nil {
		return nil, nil
	}
	rep, err := decodeRep(out.Item)
	if err != nil {
		return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	o := &httpapi.TenantOperation{Operation: rep}
	if v, ok := out.Item[attrTenant].(*types.AttributeValueMemberS); ok {
		o.Tenant = v.Value
	}
	return o, nil
}

// countUnknown counts the operations in outcome_unknown, reading at most pages pages of the
// attention index; more says that it holds more than those pages did.
func (s *Store) countUnknown(ctx context.Context, pages int) (n int, more bool, err error) {
	in := s.attentionQuery()
	in.Select = types.SelectCount
	for range pages {
		out, err := s.Client.Query(ctx, in)
		if err != nil {
			return n, false, classify(err)
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return n, true, nil
}
