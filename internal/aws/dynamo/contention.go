package dynamo

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// Contention (docs/table-design.md, "Contention"). DynamoDB cancels a transaction that
// touches an item another transaction holds (TransactionConflict) and refuses a single write
// on such an item (TransactionConflictException). Both are races the system creates itself,
// never the caller's fault, so the store retries them with full-jitter exponential backoff,
// a bounded number of times, and learns the winner's record instead of retrying where it can.

// Defaults of the contention settings.
const (
	// DefaultConflictRetries is about what the 2 s time budget it replaced allowed on AWS
	// (~25 ms a transaction, a mean backoff of 100 ms once it reaches the cap). At most it
	// sleeps 3 s (the ceilings 4, 8, … 128 ms, then 200 ms) and sends 21 attempts, well
	// inside the API function's 10 s timeout; a loaded emulator, whose answers take seconds,
	// gets as many retries as AWS does.
	DefaultConflictRetries = 20
	DefaultQuotaShards     = 16
	// replayMargin: a record read beside the transaction answers a replay only if it stays
	// live this much longer, so clock skew against TTL deletion can never turn a replay
	// answered from the read into a second operation created by the transaction.
	replayMargin = 5 * time.Minute
	// winnerPolls bounds the reads that wait for a conflicting admission of the same key to
	// commit; with the backoff below they span a transaction's usual duration (~25 ms).
	winnerPolls = 4
	backoffBase = 4 * time.Millisecond
	// backgroundLimit bounds a request left to finish after its call answered.
	backgroundLimit = 10 * time.Second
	backoffCap      = 200 * time.Millisecond
	// answerReserve is what a retry leaves before the caller's deadline (the Lambda's
	// timeout): a backoff that would end later is not slept, and the caller gets 503 with
	// Retry-After while it can still answer, instead of a timeout.
	answerReserve = 500 * time.Millisecond
)

// Metrics is where the store counts contention (the functions give it internal/aws/emf;
// docs/observability.md lists the metrics). dims are name, value pairs.
type Metrics interface {
	Add(name, unit string, value float64, dims ...string)
}

func (s *Store) count(name string, dims ...string) {
	if s.Metrics != nil {
		s.Metrics.Add(name, "Count", 1, dims...)
	}
}

// retrier paces the attempts of one call (admit, append, write, quota_read: the Call
// dimension of its metrics).
type retrier struct {
	s       *Store
	call    string
	retries int // how many the call may still take
	attempt int
}

func (s *Store) retrier(call string) *retrier {
	retries := s.ConflictRetries
	if retries <= 0 {
		retries = DefaultConflictRetries
	}
	return &retrier{s: s, call: call, retries: retries}
}

// conflict counts a transaction DynamoDB cancelled for a conflict with another one.
func (r *retrier) conflict(reasons []types.CancellationReason) {
	if hasReason(reasons, "TransactionConflict") {
		r.s.count("TransactionConflicts", "Call", r.call)
	}
}

// wait sleeps a full-jitter backoff before the next attempt; false when the retries are
// spent, the backoff would end too close to ctx's deadline, or ctx is done. Each retry counts
// as StoreRetries, a call given up as StoreBusy.
func (r *retrier) wait(ctx context.Context) bool {
	if r.attempt >= r.retries {
		r.s.count("StoreBusy", "Call", r.call)
		return false
	}
	ceiling := min(backoffCap, backoffBase<<min(r.attempt, 16))
	r.attempt++
	d := r.s.jitter(ceiling)
	// A deadline is on the real clock whatever Store.Now says.
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d+answerReserve {
		r.s.count("StoreBusy", "Call", r.call)
		return false
	}
	r.s.count("StoreRetries", "Call", r.call)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// random draws uniformly from [0, n).
func (s *Store) random(n int64) int64 {
	if s.Random != nil {
		return s.Random(n)
	}
	return rand.Int64N(n)
}

// jitter draws uniformly from [0, ceiling].
func (s *Store) jitter(ceiling time.Duration) time.Duration {
	return time.Duration(s.random(int64(ceiling) + 1))
}

func errBusy(cause error) error {
	return problem.Wrap(problem.Unavailable, cause, "The service is busy; retry with the same Idempotency-Key.").
		WithRetryAfter(time.Second)
}

// conflicted reports a single write refused because a transaction held its item.
func conflicted(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode() == "TransactionConflictException" || throttling(apiErr.ErrorCode()))
}

// retrySingle runs a single-item write, retrying it while a transaction holds the item.
func (s *Store) retrySingle(ctx context.Context, write func() error) error {
	r := s.retrier("write")
	for {
		err := write()
		if err == nil || !conflicted(err) {
			return err
		}
		if !r.wait(ctx) {
			return err
		}
	}
}

// transact runs a transaction that no other caller's answer can settle (fact appends):
// conflicts and throttling are retried (ConflictRetries); failed conditions come back as
// cancellation reasons.
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem) ([]types.CancellationReason, error) {
	r := s.retrier("append")
	for {
		reasons, err := s.transactOnce(ctx, items)
		if err != nil || reasons == nil || !contended(reasons) {
			return reasons, err
		}
		r.conflict(reasons)
		if !r.wait(ctx) {
			return nil, errBusy(errors.New("transaction conflicts outlasted the retries: " + reasonCodes(reasons)))
		}
	}
}

// transactOnce runs one attempt: nil reasons on commit, the cancellation reasons when
// DynamoDB cancelled it, a problem for anything else.
func (s *Store) transactOnce(ctx context.Context, items []types.TransactWriteItem) ([]types.CancellationReason, error) {
	_, err := s.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil, nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) > 0 {
		return tce.CancellationReasons, nil
	}
	return nil, classify(err)
}

// contended reports a cancellation caused by other work (a conflict or throttling) rather
// than by a failed condition.
func contended(reasons []types.CancellationReason) bool {
	return hasReason(reasons, "TransactionConflict") || hasReason(reasons, "ThrottlingError")
}

func reasonIs(reasons []types.CancellationReason, i int, code string) bool {
	return i < len(reasons) && aws.ToString(reasons[i].Code) == code
}

// liveRecord reads the idempotency record for the intent's key with a consistent read. It
// returns nil when there is none or it is no longer live at in.Now plus margin.
func (s *Store) liveRecord(ctx context.Context, in admission.Intent, margin time.Duration) (*admission.Record, error) {
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.Table,
		Key:            map[string]types.AttributeValue{attrPK: str(idempotencyPK(in.Scope.Tenant, in.Scope.Principal, in.Key)), attrSK: str(skIdempotency)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, classify(err)
	}
	if out.Item == nil {
		return nil, nil
	}
	rec, err := decodeRecord(out.Item)
	if err != nil {
		return nil, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	// The transaction's condition treats a record as absent once expires_at <= now (whole
	// seconds, as stored); the read must agree, with margin on top.
	if rec.ExpiresAt.Unix() <= in.Now.Add(margin).Unix() {
		return nil, nil
	}
	return &rec, nil
}

// Quota shards. A quota (a tenant's active operations, or one caller's within its tenant)
// is spread over QuotaShards counters, each with its own share of the limit (the shares add
// up to the limit exactly), so admissions do not all conflict on one item. An admission
// takes a slot on one shard; when that shard is full it reads every shard in one
// BatchGetItem and moves to one with room, and only when none has room is the quota full.

func (s *Store) quotaShards() int {
	if s.QuotaShards > 0 {
		return s.QuotaShards
	}
	return DefaultQuotaShards
}

// quotaShare is shard i's share of limit.
func quotaShare(limit, shards, i int) int {
	share := limit / shards
	if i < limit%shards {
		share++
	}
	return share
}

// pickShard draws a shard whose share can hold weight slots and that is not excluded; -1
// when none is left. (An operation's slots are on one shard, so a type whose quota weight
// exceeds every shard's share, limit / QuotaShards, is never admitted.)
func (s *Store) pickShard(limit, weight int, exclude map[int]bool) int {
	n := s.quotaShards()
	var open []int
	for i := range n {
		if quotaShare(limit, n, i) >= weight && !exclude[i] {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return -1
	}
	return open[s.random(int64(len(open)))]
}

// quotaSlot is one quota an admission takes a place in: the tenant's or the caller's.
type quotaSlot struct {
	who   string // "tenant" or "caller", for the 429's detail
	limit int
	// weight is how many slots the operation takes (its type's quota weight, at least 1).
	weight int
	pk     func(shard int) string
	// recordShard is where the accepted fact records the shard, so the terminal fact frees
	// the counter it took.
	recordShard func(*operation.Admission) *int
	shard       int
	full        map[int]bool // shards last seen without room
	item        int          // the quota item's position in the admission transaction
}

func (q *quotaSlot) exceeded() error {
	if q.weight > 1 {
		return problem.New(problem.QuotaExceeded, "The %s's active operations fill its quota of %d slots; this type takes %d.", q.who, q.limit, q.weight).
			WithRetryAfter(30 * time.Second)
	}
	return problem.New(problem.QuotaExceeded, "The %s has %d active operations, the most allowed.", q.who, q.limit).
		WithRetryAfter(30 * time.Second)
}

// quotaSlots lists the quotas an admission must take a place in.
func (s *Store) quotaSlots(in admission.Intent) []*quotaSlot {
	var slots []*quotaSlot
	tenant, principal := in.Scope.Tenant, in.Scope.Principal
	weight := 1
	if a := in.First.Admission; a != nil && a.QuotaWeight > 1 {
		weight = a.QuotaWeight
	}
	if in.QuotaLimit > 0 {
		slots = append(slots, &quotaSlot{who: "tenant", limit: in.QuotaLimit, weight: weight, full: map[int]bool{},
			pk:          func(i int) string { return quotaPK(tenant, i) },
			recordShard: func(a *operation.Admission) *int { return &a.QuotaShard }})
	}
	if in.PrincipalQuotaLimit > 0 {
		slots = append(slots, &quotaSlot{who: "caller", limit: in.PrincipalQuotaLimit, weight: weight, full: map[int]bool{},
			pk:          func(i int) string { return principalQuotaPK(tenant, principal, i) },
			recordShard: func(a *operation.Admission) *int { return &a.PrincipalQuotaShard }})
	}
	return slots
}

// moveFullSlots moves every slot whose counter was found full to a counter with room (read
// in one BatchGetItem). It reports whether one moved, and 429 when a quota has no room left.
func (s *Store) moveFullSlots(ctx context.Context, slots []*quotaSlot, reasons []types.CancellationReason) (bool, error) {
	moved := false
	for _, q := range slots {
		if !reasonIs(reasons, q.item, "ConditionalCheckFailed") {
			continue
		}
		full, err := s.fullShards(ctx, q)
		if err != nil {
			return false, err
		}
		q.full = full
		q.full[q.shard] = true
		if q.shard = s.pickShard(q.limit, q.weight, q.full); q.shard < 0 {
			return false, q.exceeded()
		}
		moved = true
	}
	return moved, nil
}

// moveBusySlots moves every slot whose counter another transaction held. Near the limit
// every admission converges on the few counters with room, and even a transaction that will
// fail holds its counter, so the counts are learnt by a read (which holds nothing) and the
// slot moves to another counter with room; none at all means the quota is full.
func (s *Store) moveBusySlots(ctx context.Context, slots []*quotaSlot, reasons []types.CancellationReason) error {
	for _, q := range slots {
		if !reasonIs(reasons, q.item, "TransactionConflict") {
			continue
		}
		full, err := s.fullShards(ctx, q)
		if err != nil {
			return err
		}
		q.full = full
		busy := maps.Clone(full)
		busy[q.shard] = true
		if next := s.pickShard(q.limit, q.weight, busy); next >= 0 {
			q.shard = next
		} else if full[q.shard] {
			return q.exceeded()
		}
	}
	return nil
}

// fullShards reads every counter of q's quota and returns those without room for its weight.
func (s *Store) fullShards(ctx context.Context, q *quotaSlot) (map[int]bool, error) {
	pk, limit := q.pk, q.limit
	n := s.quotaShards()
	keys := make([]map[string]types.AttributeValue, n)
	for i := range n {
		keys[i] = map[string]types.AttributeValue{attrPK: str(pk(i)), attrSK: str(skQuota)}
	}
	counts := make(map[string]int, n)
	req := map[string]types.KeysAndAttributes{s.Table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	r := s.retrier("quota_read")
	for len(req) > 0 {
		out, err := s.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, classify(err)
		}
		for _, item := range out.Responses[s.Table] {
			key, _ := item[attrPK].(*types.AttributeValueMemberS)
			active, _ := item["active"].(*types.AttributeValueMemberN)
			if key != nil && active != nil {
				counts[key.Value], _ = strconv.Atoi(active.Value)
			}
		}
		req = out.UnprocessedKeys
		if len(req) > 0 && !r.wait(ctx) {
			return nil, errBusy(errors.New("quota read kept coming back unprocessed"))
		}
	}
	full := map[int]bool{}
	for i := range n {
		if counts[pk(i)]+max(q.weight, 1) > quotaShare(limit, n, i) {
			full[i] = true
		}
	}
	return full, nil
}
