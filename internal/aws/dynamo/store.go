// Package dynamo is longrun's DynamoDB adapter: the one table that holds idempotency
// records, operations' append-only facts and their projection, target locks and quota
// counters. Every uniqueness decision is a condition expression inside a transaction.
package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

const defaultWait = 30 * time.Second

// Client is the part of the DynamoDB API the store uses; tests wrap it to inject faults.
type Client interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Store implements admission.Store and the fact log over one table.
type Store struct {
	Client Client
	Table  string
	// ConflictRetries bounds re-attempts of a transaction cancelled by TransactionConflict
	// (concurrent transactions on the same item); after that the caller gets 503.
	ConflictRetries int
	// Leases decide when the reconciler next looks at an operation (the due index).
	Leases operation.Leases
}

// New returns a Store with default settings.
func New(client Client, table string) *Store {
	return &Store{Client: client, Table: table, ConflictRetries: 3, Leases: operation.DefaultLeases()}
}

// transaction item positions in Admit, used to read cancellation reasons.
const (
	admitIdempotency = iota
	admitFact
	admitMeta
	admitLock
	admitQuota
)

// Admit writes the idempotency record, the accepted fact, the projection, the target lock
// and the quota reservation in one TransactWriteItems. A live record for the key comes
// back from the failed condition itself (ALL_OLD), so a replay costs one round trip too.
func (s *Store) Admit(ctx context.Context, in admission.Intent) (*admission.Record, error) {
	adm := in.First.Admission
	id := in.Record.OperationID
	fact, err := factItem(id, in.First)
	if err != nil {
		return nil, err
	}
	first, err := operation.Fold(id, []operation.Fact{in.First})
	if err != nil {
		return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	meta, err := s.projection(first)
	if err != nil {
		return nil, err
	}
	items := []types.TransactWriteItem{
		admitIdempotency: {Put: &types.Put{
			TableName: &s.Table,
			Item: map[string]types.AttributeValue{
				attrPK:         str(idempotencyPK(in.Scope.Tenant, in.Scope.Principal, in.Key)),
				attrSK:         str(skIdempotency),
				"fingerprint":  str(in.Record.Fingerprint),
				"operation_id": str(id),
				"status":       num(int64(in.Record.Status)),
				"location":     str(in.Record.Location),
				"body":         &types.AttributeValueMemberB{Value: in.Record.Body},
				attrExpiresAt:  num(ceilUnix(in.Record.ExpiresAt)),
			},
			// An expired record is absent for this write, whether or not TTL removed it yet.
			ConditionExpression:                 aws.String("attribute_not_exists(pk) OR expires_at <= :now"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(in.Now.Unix())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		admitFact: {Put: &types.Put{TableName: &s.Table, Item: fact, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		admitMeta: {Put: &types.Put{TableName: &s.Table, Item: meta,
			ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		admitLock: {Put: &types.Put{
			TableName: &s.Table,
			Item: map[string]types.AttributeValue{
				attrPK:         str(lockPK(adm.Tenant, adm.Principal, adm.Type, adm.Target)),
				attrSK:         str(skLock),
				"operation_id": str(id),
			},
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}
	if in.QuotaLimit > 0 {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:           &s.Table,
			Key:                 map[string]types.AttributeValue{attrPK: str(quotaPK(adm.Tenant)), attrSK: str(skQuota)},
			UpdateExpression:    aws.String("ADD active :one"),
			ConditionExpression: aws.String("attribute_not_exists(active) OR active < :limit"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":one": num(1), ":limit": num(int64(in.QuotaLimit)),
			},
		}})
	}

	reasons, err := s.transact(ctx, items)
	if err != nil || reasons == nil {
		return nil, err
	}
	switch {
	case failed(reasons, admitIdempotency):
		rec, err := decodeRecord(reasons[admitIdempotency].Item)
		if err != nil {
			return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
		}
		return &rec, nil
	case failed(reasons, admitLock):
		holder := ""
		if v, ok := reasons[admitLock].Item["operation_id"].(*types.AttributeValueMemberS); ok {
			holder = v.Value
		}
		return nil, problem.New(problem.TargetBusy, "Another active operation holds target %q.", adm.Target).WithOperation(holder)
	case failed(reasons, admitQuota):
		return nil, problem.New(problem.QuotaExceeded, "The tenant has %d active operations, the most allowed.", in.QuotaLimit).
			WithRetryAfter(30 * time.Second)
	default:
		return nil, problem.Wrap(problem.Internal, fmt.Errorf("admission cancelled: %s", reasonCodes(reasons)), "An internal error occurred.")
	}
}

// transact runs one transaction. It returns the cancellation reasons when conditions
// failed, retries bounded times on TransactionConflict, and maps transport and throttling
// failures to 503.
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem) ([]types.CancellationReason, error) {
	for attempt := 0; ; attempt++ {
		_, err := s.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return nil, classify(err)
		}
		if !hasReason(tce.CancellationReasons, "TransactionConflict") && !hasReason(tce.CancellationReasons, "ThrottlingError") {
			return tce.CancellationReasons, nil
		}
		if attempt >= s.ConflictRetries {
			return nil, problem.Wrap(problem.Unavailable, err, "The service is busy; retry with the same Idempotency-Key.").
				WithRetryAfter(time.Second)
		}
		// Jittered backoff: the competing transaction usually commits within milliseconds.
		backoff := time.Duration(5<<attempt)*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return nil, classify(ctx.Err())
		case <-time.After(backoff):
		}
	}
}

// Facts returns an operation's facts in version order with one consistent Query on its
// partition. An unknown id is not_found.
func (s *Store) Facts(ctx context.Context, id string) ([]operation.Fact, error) {
	var facts []operation.Fact
	in := &dynamodb.QueryInput{
		TableName:              &s.Table,
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :facts)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(operationPK(id)), ":facts": str(factPrefix),
		},
	}
	for {
		out, err := s.Client.Query(ctx, in)
		if err != nil {
			return nil, classify(err)
		}
		for _, item := range out.Items {
			f, err := decodeFact(item)
			if err != nil {
				return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
			}
			facts = append(facts, f)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if len(facts) == 0 {
		return nil, problem.New(problem.NotFound, "No such operation.")
	}
	return facts, nil
}

// Load folds an operation from its facts.
func (s *Store) Load(ctx context.Context, id string) (operation.Operation, error) {
	facts, err := s.Facts(ctx, id)
	if err != nil {
		return operation.Operation{}, err
	}
	op, err := operation.Fold(id, facts)
	if err != nil {
		return op, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	return op, nil
}

// Append appends facts after op's observed version, conditionally: each fact's slot must be
// free and the projection must still be at op.Version, so of two writers that observed the
// same version exactly one wins (the other gets operation.ErrConflict). The projection is
// written by the same fold. Facts get their versions here; an illegal fact is rejected
// before any write.
func (s *Store) Append(ctx context.Context, op operation.Operation, facts ...operation.Fact) (operation.Operation, error) {
	next := op
	items := make([]types.TransactWriteItem, 0, len(facts)+1)
	for _, f := range facts {
		f.Version = next.Version + 1
		var err error
		if next, err = next.Apply(f); err != nil {
			return op, fmt.Errorf("append to %s: %w", op.ID, err)
		}
		item, err := factItem(op.ID, f)
		if err != nil {
			return op, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.Table, Item: item,
			ConditionExpression: aws.String("attribute_not_exists(pk)")}})
	}
	update, err := s.projectionUpdate(next, op.Version)
	if err != nil {
		return op, err
	}
	items = append(items, types.TransactWriteItem{Update: update})
	if next.State.Terminal() && !op.State.Terminal() {
		items = append(items, s.release(op)...)
	}
	reasons, err := s.transact(ctx, items)
	if err != nil {
		return op, err
	}
	if reasons != nil {
		return op, fmt.Errorf("append to %s at version %d: %w", op.ID, op.Version, operation.ErrConflict)
	}
	return next, nil
}

// release frees what an active operation holds, in the transaction of its terminal fact:
// the target lock (only if it is still this operation's) and its quota slot.
func (s *Store) release(op operation.Operation) []types.TransactWriteItem {
	items := []types.TransactWriteItem{{Delete: &types.Delete{
		TableName:                 &s.Table,
		Key:                       map[string]types.AttributeValue{attrPK: str(lockPK(op.Tenant, op.Principal, op.Type, op.Target)), attrSK: str(skLock)},
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR operation_id = :id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(op.ID)},
	}}}
	if op.QuotaReserved {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 &s.Table,
			Key:                       map[string]types.AttributeValue{attrPK: str(quotaPK(op.Tenant)), attrSK: str(skQuota)},
			UpdateExpression:          aws.String("ADD active :minus"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-1)},
		}})
	}
	return items
}

func factItem(id string, f operation.Fact) (map[string]types.AttributeValue, error) {
	payload, err := json.Marshal(f)
	if err != nil {
		return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	return map[string]types.AttributeValue{
		attrPK:    str(operationPK(id)),
		attrSK:    str(factSK(f.Version)),
		"kind":    str(string(f.Kind)),
		"version": num(int64(f.Version)),
		"at":      str(operation.FormatTime(f.At)),
		"fact":    str(string(payload)),
	}, nil
}

func decodeFact(item map[string]types.AttributeValue) (operation.Fact, error) {
	var f operation.Fact
	raw, ok := item["fact"].(*types.AttributeValueMemberS)
	if !ok {
		return f, errors.New("fact item without payload")
	}
	if err := json.Unmarshal([]byte(raw.Value), &f); err != nil {
		return f, fmt.Errorf("decode fact: %w", err)
	}
	return f, nil
}

func decodeRecord(item map[string]types.AttributeValue) (admission.Record, error) {
	var rec admission.Record
	fp, ok1 := item["fingerprint"].(*types.AttributeValueMemberS)
	id, ok2 := item["operation_id"].(*types.AttributeValueMemberS)
	status, ok3 := item["status"].(*types.AttributeValueMemberN)
	loc, ok4 := item["location"].(*types.AttributeValueMemberS)
	body, ok5 := item["body"].(*types.AttributeValueMemberB)
	exp, ok6 := item[attrExpiresAt].(*types.AttributeValueMemberN)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return rec, errors.New("idempotency record is incomplete")
	}
	code, err := strconv.Atoi(status.Value)
	if err != nil {
		return rec, fmt.Errorf("idempotency record status: %w", err)
	}
	expires, err := strconv.ParseInt(exp.Value, 10, 64)
	if err != nil {
		return rec, fmt.Errorf("idempotency record expiry: %w", err)
	}
	return admission.Record{Fingerprint: fp.Value, OperationID: id.Value, Status: code, Location: loc.Value,
		Body: body.Value, ExpiresAt: time.Unix(expires, 0).UTC()}, nil
}

// ceilUnix rounds up to whole seconds so a record never expires before its window ends.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func failed(reasons []types.CancellationReason, i int) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == "ConditionalCheckFailed"
}

func hasReason(reasons []types.CancellationReason, code string) bool {
	for _, r := range reasons {
		if aws.ToString(r.Code) == code {
			return true
		}
	}
	return false
}

func reasonCodes(reasons []types.CancellationReason) string {
	s := ""
	for i, r := range reasons {
		s += fmt.Sprintf("[%d]=%s ", i, aws.ToString(r.Code))
	}
	return s
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: itoa(n)} }
