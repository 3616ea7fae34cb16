package dynamo

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// The projection item (sk META) is what the fold of an operation's facts says now, written
// in the same transaction as the facts by the same fold: Load reads it (with its snapshot of
// the fold, snapshot.go), the caller's list through the scope index, the reconciler through
// the due index, and the notifier from its stream records (old and new image: the previous
// and the new state).
const (
	attrState    = "state"
	attrVersion  = "version"
	attrRep      = "rep" // the public representation (without statusUrl), JSON
	attrDueShard = "due_shard"
	attrDueAt    = "due_at"
	attrAttempts = "reconcile_attempts"
	attrTenant   = "tenant"
	// attrCorrelation is the operation's correlation id, written with the item (the
	// notifier's events and logs carry it); absent for operations admitted without one.
	attrCorrelation = "correlation_id"
	attrType        = "type"
	attrTarget      = "target"
	attrCreatedAt   = "created_at"
	attrUpdatedAt   = "updated_at"

	// IndexDue lists non-terminal operations by the time the reconciler should look at them
	// (sparse: only items with due attributes are in it).
	IndexDue = "due"
	// DueShards spreads the due index over partitions; the reconciler reads each.
	DueShards = 8

	// IndexAttention lists the operations waiting for an operator (outcome_unknown), oldest
	// first, across every tenant (sparse: only they carry the attributes). Such operations
	// are rare, so one partition holds them all.
	IndexAttention   = "attention"
	attrAttention    = "attention"
	attrAttentionAt  = "attention_at"
	attentionUnknown = "OUTCOME_UNKNOWN"
)

// dueShard places an operation on one of the due index's partitions.
func dueShard(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprintf("DUE#%d", h.Sum32()%DueShards)
}

// projection is the whole projection item for op.
func (s *Store) projection(op operation.Operation) (map[string]types.AttributeValue, error) {
	item, _, err := s.projectionAttrs(op)
	if err != nil {
		return nil, err
	}
	maps.Copy(item, fixedAttrs(op))
	return item, nil
}

// fixedAttrs are the projection's attributes written at admission only: its keys, the scope
// index's, and what never changes after admission.
func fixedAttrs(op operation.Operation) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrPK:        str(operationPK(op.ID)),
		attrSK:        str(skMeta),
		attrGSI1PK:    str(scopeKey(op.Tenant, op.Principal)),
		attrGSI1SK:    str(op.ID),
		attrTenant:    str(op.Tenant),
		attrType:      str(op.Type),
		attrTarget:    str(op.Target),
		attrCreatedAt: str(operation.FormatTime(op.CreatedAt)),
	}
	if op.CorrelationID != "" {
		item[attrCorrelation] = str(op.CorrelationID)
	}
	return item
}

// projectionAttrs are the attributes that change with each fact, and those to remove. op
// must be the fold of the facts as stored (see snapshotOf).
func (s *Store) projectionAttrs(op operation.Operation) (set map[string]types.AttributeValue, remove []string, err error) {
	rep, err := json.Marshal(op.Represent(""))
	if err != nil {
		return nil, nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	set = map[string]types.AttributeValue{
		attrState:     str(string(op.State)),
		attrVersion:   num(int64(op.Version)),
		attrUpdatedAt: str(operation.FormatTime(op.UpdatedAt)),
		attrRep:       str(string(rep)),
	}
	if due, ok := op.DueAt(s.Leases); ok {
		set[attrDueShard] = str(dueShard(op.ID))
		set[attrDueAt] = str(operation.FormatTime(due))
	} else {
		remove = []string{attrDueShard, attrDueAt}
	}
	if op.State == operation.OutcomeUnknown {
		set[attrAttention] = str(attentionUnknown)
		set[attrAttentionAt] = str(operation.FormatTime(op.UpdatedAt) + "#" + op.ID)
	} else {
		remove = append(remove, attrAttention, attrAttentionAt)
	}
	remove = append(remove, attrAttempts) // a new fact is progress: the reconciler's backoff starts over
	if !withSnapshot(op, fixedAttrs(op), set) {
		// Load would notice an older snapshot by its version; removing it saves its bytes.
		remove = append(remove, attrSnap)
	}
	return set, remove, nil
}

// projectionUpdate updates the projection to next, only if it is still at observed.
func (s *Store) projectionUpdate(next operation.Operation, observed int) (*types.Update, error) {
	set, remove, err := s.projectionAttrs(next)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	values := map[string]types.AttributeValue{":observed": num(int64(observed))}
	var sets []string
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		names["#"+k] = k
		values[":"+k] = set[k]
		sets = append(sets, fmt.Sprintf("#%s = :%s", k, k))
	}
	expr := "SET " + strings.Join(sets, ", ")
	if len(remove) > 0 {
		var rs []string
		for _, k := range remove {
			names["#"+k] = k
			rs = append(rs, "#"+k)
		}
		expr += " REMOVE " + strings.Join(rs, ", ")
	}
	names["#v"] = attrVersion
	return &types.Update{
		TableName:                 &s.Table,
		Key:                       map[string]types.AttributeValue{attrPK: str(operationPK(next.ID)), attrSK: str(skMeta)},
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("#v = :observed"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}, nil
}

// decodeRep reads a projection item's representation.
func decodeRep(item map[string]types.AttributeValue) (operation.Representation, error) {
	var rep operation.Representation
	raw, ok := item[attrRep].(*types.AttributeValueMemberS)
	if !ok {
		return rep, fmt.Errorf("projection without representation")
	}
	if err := json.Unmarshal([]byte(raw.Value), &rep); err != nil {
		return rep, fmt.Errorf("decode projection: %w", err)
	}
	return rep, nil
}
