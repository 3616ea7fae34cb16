package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// What a loaded machine did to the contention tests (issue 21): DynamoDB Local, queued
// behind 32 callers, took seconds a call, and admissions that were only waiting answered
// 503. The store's retries are a count of attempts, not a time, and a call it waits for is
// never cut short by a clock of its own. These tests need no DynamoDB: a scripted client
// conflicts and is slow exactly as told.

// slowClient cancels the first conflicts admission transactions with TransactionConflict on
// the fact item (a conflict no read can settle: the store retries it), then commits; every
// transaction takes delay first. Reads find nothing. It counts the transactions.
type slowClient struct {
	dynamo.Client // nil: a call the test did not script panics
	conflicts     int64
	delay         time.Duration
	attempts      atomic.Int64
}

func (c *slowClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	n := c.attempts.Add(1)
	if c.delay > 0 {
		t := time.NewTimer(c.delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if n > c.conflicts {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	reasons := make([]types.CancellationReason, len(in.TransactItems))
	for i := range reasons {
		reasons[i].Code = aws.String("None")
	}
	reasons[1].Code = aws.String("TransactionConflict")
	return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
}

func (c *slowClient) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

// countingMetrics counts what the store reports, by name.
type countingMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countingMetrics) Add(name, _ string, _ float64, _ ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[name]++
}

func (m *countingMetrics) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[name]
}

// scripted is a store on c with no quota (so no quota reads) and, when fast, no backoff.
func scripted(c *slowClient, fast bool) (*dynamo.Store, admission.Intent) {
	s := dynamo.New(c, "t")
	s.Metrics = &countingMetrics{}
	if fast {
		s.Random = func(int64) int64 { return 0 }
	}
	in := intent("op_1", "k1", "demo:a")
	in.QuotaLimit = 0
	return s, in
}

// A slow store gets every retry: each of DefaultConflictRetries conflicts takes 120 ms, 2.5 s
// in all, past the 2 s time budget the retries once had, and the admission still commits,
// on attempt DefaultConflictRetries + 1.
func TestASlowStoreGetsEveryRetry(t *testing.T) {
	t.Parallel()
	c := &slowClient{conflicts: dynamo.DefaultConflictRetries, delay: 120 * time.Millisecond}
	store, a := scripted(c, true)
	if _, err := store.Admit(context.Background(), a); err != nil {
		t.Fatalf("after %d attempts: %v", c.attempts.Load(), err)
	}
	if n := c.attempts.Load(); n != dynamo.DefaultConflictRetries+1 {
		t.Fatalf("%d attempts, want %d", n, dynamo.DefaultConflictRetries+1)
	}
}

// One conflict more than the retries is 503 with Retry-After after exactly that many
// attempts, however fast the store answers: the work per call is bounded, not its time.
func TestRetriesAreACountOfAttempts(t *testing.T) {
	t.Parallel()
	c := &slowClient{conflicts: dynamo.DefaultConflictRetries + 1}
	store, a := scripted(c, true)
	_, err := store.Admit(context.Background(), a)
	if pe := problem.As(err); pe.Code != problem.Unavailable || pe.RetryAfter <= 0 || !strings.Contains(pe.Detail, "busy") {
		t.Fatalf("want 503 busy with Retry-After, got %v", err)
	}
	if n := c.attempts.Load(); n != dynamo.DefaultConflictRetries+1 {
		t.Fatalf("%d attempts, want %d", n, dynamo.DefaultConflictRetries+1)
	}
	m := store.Metrics.(*countingMetrics)
	if m.count("StoreRetries") != dynamo.DefaultConflictRetries || m.count("StoreBusy") != 1 {
		t.Fatalf("StoreRetries %d, StoreBusy %d", m.count("StoreRetries"), m.count("StoreBusy"))
	}
	// ConflictRetries sets the count.
	c = &slowClient{conflicts: 1000}
	store, a = scripted(c, true)
	store.ConflictRetries = 3
	if _, err := store.Admit(context.Background(), a); problem.CodeOf(err) != problem.Unavailable || c.attempts.Load() != 4 {
		t.Fatalf("ConflictRetries 3: %v after %d attempts", err, c.attempts.Load())
	}
}

// deadlineCtx reports a deadline it never enforces, so a test can tell what the store did
// with the deadline from what ctx.Done would have done.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// A retry whose backoff would end within the last half second before the caller's deadline
// (a Lambda's timeout) is not taken: the caller answers 503 with Retry-After while it still
// can, rather than being cut off. A deadline far off takes every retry.
func TestRetriesLeaveTheCallerTimeToAnswer(t *testing.T) {
	t.Parallel()
	c := &slowClient{conflicts: 1000}
	store, a := scripted(c, true)
	near := deadlineCtx{context.Background(), time.Now().Add(400 * time.Millisecond)}
	if _, err := store.Admit(near, a); problem.CodeOf(err) != problem.Unavailable || c.attempts.Load() != 1 {
		t.Fatalf("deadline in 400 ms: %v after %d attempts, want 503 after 1", err, c.attempts.Load())
	}
	c = &slowClient{conflicts: 3}
	store, a = scripted(c, true)
	far := deadlineCtx{context.Background(), time.Now().Add(time.Hour)}
	if _, err := store.Admit(far, a); err != nil || c.attempts.Load() != 4 {
		t.Fatalf("deadline in an hour: %v after %d attempts", err, c.attempts.Load())
	}
}

// A transaction slower than the bound on leftover requests is still waited for: that bound
// starts when the call has answered. Counted from the start, it cut the transaction short
// and the caller, who was waiting for it, got 503 "A dependency is unavailable".
func TestASlowTransactionIsWaitedFor(t *testing.T) {
	t.Parallel()
	c := &slowClient{delay: dynamo.BackgroundLimit + 300*time.Millisecond}
	store, a := scripted(c, false)
	if _, err := store.Admit(context.Background(), a); err != nil {
		t.Fatalf("a transaction of %s: %v", c.delay, err)
	}
	if n := c.attempts.Load(); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	store.Drain()
}

// A caller that gives up is answered at once, and the requests it left still end, bounded.
func TestACallerThatGivesUpIsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	c := &slowClient{delay: time.Hour}
	store, a := scripted(c, false)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := store.Admit(ctx, a)
	if problem.CodeOf(err) != problem.Unavailable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want 503 for the caller's deadline, got %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("answered after %s", took)
	}
	// The transaction it left is cancelled once it has been left over for BackgroundLimit.
	drained := make(chan struct{})
	go func() { store.Drain(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(dynamo.BackgroundLimit + 30*time.Second):
		t.Fatal("a leftover request outlived its bound")
	}
}
