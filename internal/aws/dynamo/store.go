// Package dynamo is longrun's DynamoDB adapter: the one table that holds idempotency
// records, operations' append-only facts and their projection, target locks and quota
// counters. Every uniqueness decision is a condition expression inside a transaction.
package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
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
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Store implements admission.Store and the fact log over one table.
type Store struct {
	Client Client
	Table  string
	// ConflictRetries bounds how many times one call retries work that DynamoDB cancelled
	// for a conflict with another transaction, or throttled; after them the caller gets 503.
	// It counts retries, not time: a slow store (a loaded machine, a far region) makes each
	// attempt longer without making the contention any worse, and a time budget would be
	// spent on waiting instead of on conflicts. The caller's ctx deadline bounds the time.
	ConflictRetries int
	// QuotaShards is how many counters a tenant's quota is spread over (see contention.go).
	QuotaShards int
	// ReplayRead issues a consistent read of the idempotency record beside each admission
	// transaction, so that a replay is answered as soon as the read shows a live record
	// instead of when DynamoDB has cancelled the transaction.
	ReplayRead bool
	// Leases decide when the reconciler next looks at an operation (the due index).
	Leases operation.Leases
	// Now is the clock of the claims' expiry, and Random (uniform in [0, n)) draws the
	// retries' backoff and the quota shards; nil means the real clock and math/rand.
	Now    func() time.Time
	Random func(n int64) int64
	// Metrics counts transaction conflicts and retries; nil counts nothing.
	Metrics Metrics

	background sync.WaitGroup // requests left to finish after their call answered
}

// Drain waits for the requests left to finish in the background after their call answered
// (the admission's read or transaction that lost the race): for tests that count requests,
// and for a graceful stop.
func (s *Store) Drain() { s.background.Wait() }

// New returns a Store with default settings.
func New(client Client, table string) *Store {
	return &Store{Client: client, Table: table, ConflictRetries: DefaultConflictRetries, QuotaShards: DefaultQuotaShards,
		ReplayRead: true, Leases: operation.DefaultLeases()}
}

// transaction item positions in Admit, used to read cancellation reasons.
const (
	admitIdempotency = iota
	admitFact
	admitMeta
	admitLock
	admitQuota // the first quota item; the caller's quota, when on, follows the tenant's
)

// Admit writes the idempotency record, the accepted fact, the projection, the target lock
// and a slot in each quota (the tenant's, the caller's) in one TransactWriteItems. A live
// record for the key comes back from the failed condition itself (ALL_OLD), or sooner from
// the consistent read issued beside the transaction (ReplayRead), so a replay costs one
// round trip too. Conflicts with other admissions are settled as contention.go describes.
func (s *Store) Admit(ctx context.Context, in admission.Intent) (*admission.Record, error) {
	slots := s.quotaSlots(in)
	for _, q := range slots {
		if q.shard = s.pickShard(q.limit, q.weight, q.full); q.shard < 0 {
			return nil, q.exceeded()
		}
	}
	r := s.retrier("admit")
	for attempt := 0; ; attempt++ {
		items, err := s.admitItems(in, slots)
		if err != nil {
			return nil, err
		}
		var reasons []types.CancellationReason
		if attempt == 0 && s.ReplayRead {
			var rec *admission.Record
			rec, reasons, err = s.admitBesideRead(ctx, in, items)
			if rec != nil || err != nil {
				return rec, err
			}
		} else {
			reasons, err = s.transactOnce(ctx, items)
		}
		if err != nil || reasons == nil {
			return nil, err
		}
		r.conflict(reasons)
		switch {
		case reasonIs(reasons, admitIdempotency, "ConditionalCheckFailed"):
			rec, err := decodeRecord(reasons[admitIdempotency].Item)
			if err != nil {
				return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
			}
			return &rec, nil
		case reasonIs(reasons, admitIdempotency, "TransactionConflict"):
			// Another request with this key is in flight: its record, once committed,
			// answers this one (a replay, or a 409 for another body). Wait for it with
			// reads, which hold nothing; only if it never shows (that request was refused,
			// say target_busy) try the transaction again.
			for poll := 0; poll < winnerPolls; poll++ {
				if rec, err := s.liveRecord(ctx, in, 0); rec != nil || err != nil {
					return rec, err
				}
				if !r.wait(ctx) {
					return nil, errBusy(errors.New("the conflicting admission never committed"))
				}
			}
			continue
		case reasonIs(reasons, admitLock, "ConditionalCheckFailed"):
			holder := ""
			if v, ok := reasons[admitLock].Item["operation_id"].(*types.AttributeValueMemberS); ok {
				holder = v.Value
			}
			return nil, problem.New(problem.TargetBusy, "Another active operation holds target %q.", in.First.Admission.Target).WithOperation(holder)
		}
		moved, err := s.moveFullSlots(ctx, slots, reasons)
		if err != nil || moved {
			if err != nil {
				return nil, err
			}
			continue // a counter was full: another has room, try it at once
		}
		if !contended(reasons) {
			return nil, problem.Wrap(problem.Internal, fmt.Errorf("admission cancelled: %s", reasonCodes(reasons)), "An internal error occurred.")
		}
		if err := s.moveBusySlots(ctx, slots, reasons); err != nil {
			return nil, err
		}
		if !r.wait(ctx) {
			return nil, errBusy(fmt.Errorf("admission conflicts outlasted the retries: %s", reasonCodes(reasons)))
		}
	}
}

// admitBesideRead runs the admission transaction with a consistent read of the key's record
// beside it. A live record answers at once (the transaction, conditioned on the same instant,
// can only fail and is abandoned); otherwise the transaction's own answer counts.
func (s *Store) admitBesideRead(ctx context.Context, in admission.Intent, items []types.TransactWriteItem) (*admission.Record, []types.CancellationReason, error) {
	// Neither request is cancelled when the other answers: cancelling an HTTP request
	// closes its keep-alive connection, and the next request would pay a new TLS handshake.
	// The one left over finishes by itself, bounded, and its answer is dropped: an abandoned
	// transaction can only fail on the live record the read saw.
	//
	// The bound starts when the call answers, not when the requests are sent. While the
	// caller waits, only its own ctx limits the wait (the selects below): a limit counted
	// from the start cut a slow store's transaction that the caller was still waiting for
	// (DynamoDB Local queued behind 32 callers on a loaded machine), and turned work that
	// was merely queued into a 503.
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { time.AfterFunc(backgroundLimit, cancel) }()
	type answer struct {
		reasons []types.CancellationReason
		err     error
	}
	read := make(chan *admission.Record, 1)
	tx := make(chan answer, 1)
	var both sync.WaitGroup
	both.Add(2)
	s.background.Add(1)
	go func() { both.Wait(); cancel(); s.background.Done() }()
	// The read is sent first: an emulator that serves one request at a time (DynamoDB Local)
	// then answers it before the transaction, as DynamoDB would answer it beside it.
	go func() {
		defer both.Done()
		rec, err := s.liveRecord(bg, in, replayMargin)
		if err != nil {
			rec = nil // the transaction answers instead
		}
		read <- rec
	}()
	go func() {
		defer both.Done()
		reasons, err := s.transactOnce(bg, items)
		tx <- answer{reasons, err}
	}()
	select {
	case rec := <-read:
		if rec != nil {
			return rec, nil, nil
		}
		select {
		case a := <-tx:
			return nil, a.reasons, a.err
		case <-ctx.Done():
			return nil, nil, classify(ctx.Err())
		}
	case a := <-tx:
		return nil, a.reasons, a.err
	case <-ctx.Done():
		return nil, nil, classify(ctx.Err())
	}
}

// admitItems builds the admission transaction, with one quota item per slot.
func (s *Store) admitItems(in admission.Intent, slots []*quotaSlot) ([]types.TransactWriteItem, error) {
	first := in.First
	adm := *first.Admission
	for _, q := range slots {
		*q.recordShard(&adm) = q.shard
	}
	first.Admission = &adm
	id := in.Record.OperationID
	fact, err := factItem(id, first)
	if err != nil {
		return nil, err
	}
	// The projection is the fold of the fact as it is stored and read back: the input as
	// given may differ from the input as stored (spaces, escapes), and Load must give the
	// stored one, as a fold of the facts does.
	stored, err := decodeFact(fact)
	if err != nil {
		return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	folded, err := operation.Fold(id, []operation.Fact{stored})
	if err != nil {
		return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	meta, err := s.projection(folded)
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
	for i, q := range slots {
		q.item = admitQuota + i
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:           &s.Table,
			Key:                 map[string]types.AttributeValue{attrPK: str(q.pk(q.shard)), attrSK: str(skQuota)},
			UpdateExpression:    aws.String("ADD active :weight"),
			ConditionExpression: aws.String("attribute_not_exists(active) OR active <= :room"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":weight": num(int64(max(q.weight, 1))),
				":room":   num(int64(quotaShare(q.limit, s.quotaShards(), q.shard) - max(q.weight, 1))),
			},
		}})
	}
	return items, nil
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
				// A fact that cannot be read never will be: poison, not a transient failure.
				return nil, problem.Wrap(problem.Internal, fmt.Errorf("%w: %w", operation.ErrMalformedHistory, err), "An internal error occurred.")
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

// Load reads an operation with one strongly consistent GetItem of its projection, whose
// snapshot is the fold of its facts at the projection's version (snapshot.go), and a second
// of its accepted fact when the snapshot leaves the admission out: one or two items however
// long the history. A projection without a snapshot of its version (written before
// snapshots, or since by a writer of that age) is folded from all the facts, and the next
// append writes the snapshot. An unknown id is not_found.
func (s *Store) Load(ctx context.Context, id string) (operation.Operation, error) {
	item, err := s.get(ctx, id, skMeta)
	if err != nil {
		return operation.Operation{}, err
	}
	if item == nil {
		return operation.Operation{}, problem.New(problem.NotFound, "No such operation.")
	}
	op, admitted, ok := fromProjection(id, item)
	if !ok {
		return s.fold(ctx, id)
	}
	if admitted {
		return op, nil
	}
	first, err := s.get(ctx, id, factSK(1))
	if err == nil && first == nil {
		err = problem.Wrap(problem.Internal, fmt.Errorf("%w: operation %s has a projection but no accepted fact", operation.ErrMalformedHistory, id), "An internal error occurred.")
	}
	if err != nil {
		return operation.Operation{}, err
	}
	f, err := decodeFact(first)
	if err == nil && (f.Kind != operation.KindAccepted || f.Admission == nil) {
		err = fmt.Errorf("fact 1 of %s is %s, not an admission", id, f.Kind)
	}
	if err != nil {
		return operation.Operation{}, problem.Wrap(problem.Internal, fmt.Errorf("%w: %w", operation.ErrMalformedHistory, err), "An internal error occurred.")
	}
	op.Admission, op.CreatedAt = *f.Admission, f.At
	return op, nil
}

// get reads one item of operation id's partition, strongly consistently; nil when absent.
func (s *Store) get(ctx context.Context, id, sk string) (map[string]types.AttributeValue, error) {
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.Table,
		ConsistentRead: aws.Bool(true),
		Key:            map[string]types.AttributeValue{attrPK: str(operationPK(id)), attrSK: str(sk)},
	})
	if err != nil {
		return nil, classify(err)
	}
	return out.Item, nil
}

// fold reads all of an operation's facts and folds them: Load for a projection without a
// usable snapshot.
func (s *Store) fold(ctx context.Context, id string) (operation.Operation, error) {
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
// written by the same fold, with its snapshot. Facts get their versions here; an illegal
// fact is rejected before any write. op must be as Load (or a previous Append) returned it:
// the snapshot is op with the new facts applied. (Unlike the accepted fact's input, nothing
// a later fact brings changes on its way through its item: the snapshot keeps instants and
// strings, and the result only through the representation, which compacts it as the item
// does.)
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
		return op, s.appendRefused(ctx, op, len(facts), reasons)
	}
	return next, nil
}

// appendRefused says why DynamoDB refused an append: operation.ErrConflict when another
// writer appended since op was read, operation.ErrMalformedHistory when a slot of the new
// facts was taken by a fact the projection does not count. Load reads the projection, not
// the facts, so a fact written around Append (a bug, a manual edit) is met here, at the
// first append that reaches it; retrying could never get past it. A consistent read of the
// projection's version tells them apart (only after a refusal, which is rare): a fact
// appended by a writer moves the projection in the same transaction.
func (s *Store) appendRefused(ctx context.Context, op operation.Operation, facts int, reasons []types.CancellationReason) error {
	conflict := fmt.Errorf("append to %s at version %d: %w", op.ID, op.Version, operation.ErrConflict)
	taken := false
	for i := range facts {
		taken = taken || reasonIs(reasons, i, "ConditionalCheckFailed")
	}
	if !taken {
		return conflict
	}
	item, err := s.get(ctx, op.ID, skMeta)
	if err != nil {
		return conflict // a retry reads again and decides again
	}
	if v, ok := item[attrVersion].(*types.AttributeValueMemberN); !ok || v.Value != itoa(int64(op.Version)) {
		return conflict
	}
	return problem.Wrap(problem.Internal, fmt.Errorf("%w: operation %s has a fact after version %d that its projection does not count",
		operation.ErrMalformedHistory, op.ID, op.Version), "An internal error occurred.")
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
	weight := int64(max(op.QuotaWeight, 1))
	free := func(pk string) {
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 &s.Table,
			Key:                       map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(skQuota)},
			UpdateExpression:          aws.String("ADD active :minus"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-weight)},
		}})
	}
	if op.QuotaReserved {
		free(quotaPK(op.Tenant, op.QuotaShard))
	}
	if op.PrincipalQuotaReserved {
		free(principalQuotaPK(op.Tenant, op.Principal, op.PrincipalQuotaShard))
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
