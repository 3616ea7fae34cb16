package streampoller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// fakeFunction stands in for the function (the boundary the poller drives); it decodes
// each batch as Lambda's Go runtime would and answers as told.
type fakeFunction struct {
	mu      sync.Mutex
	batches [][]string // operation ids per invocation
	answer  func(ids []string, ev events.DynamoDBEvent) ([]byte, string)
}

func (f *fakeFunction) Invoke(_ context.Context, _ string, payload []byte) ([]byte, string, error) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, "", err
	}
	var ids []string
	for _, r := range ev.Records {
		if id, ok := dynamo.OutboxOperation(r); ok && r.EventSourceArn != "" {
			ids = append(ids, id)
		}
	}
	f.mu.Lock()
	f.batches = append(f.batches, ids)
	f.mu.Unlock()
	out, fnErr := f.answer(ids, ev)
	return out, fnErr, nil
}

func (f *fakeFunction) seen() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches...)
}

type fixture struct {
	store  *dynamo.Store
	poller *Poller
	fn     *fakeFunction
	failed chan []byte
}

func newFixture(t *testing.T, answer func([]string, events.DynamoDBEvent) ([]byte, string)) *fixture {
	client, _ := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	desc, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: dynamo.New(client, table), fn: &fakeFunction{answer: answer}, failed: make(chan []byte, 10)}
	m := eventsource.Dispatcher()
	m.BatchSize = 3
	m.MaxRetries = 2
	f.poller = &Poller{Endpoint: os.Getenv(dynamotest.EndpointEnv), StreamARN: aws.ToString(desc.Table.LatestStreamArn),
		Mapping: m, Invoker: f.fn, Interval: 20 * time.Millisecond, Backoff: time.Millisecond,
		Log:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
		OnFailure: func(_ context.Context, body []byte) error { f.failed <- body; return nil }}
	return f
}

func (f *fixture) admit(t *testing.T, n int) []string {
	var ids []string
	for i := range n {
		id := fmt.Sprintf("op_%026d", i)
		now := time.Now()
		_, err := f.store.Admit(context.Background(), admission.Intent{
			Scope: admission.Scope{Tenant: "acme", Principal: "alice"}, Key: id, Now: now,
			Record: admission.Record{OperationID: id, Status: 202, Body: []byte("{}"), ExpiresAt: now.Add(time.Hour)},
			First: operation.Fact{Version: 1, Kind: operation.KindAccepted, At: now, Source: operation.SourceAdmission,
				Admission: &operation.Admission{Type: "demo.task", Target: id, Tenant: "acme", Principal: "alice", Input: []byte("{}")}},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func (f *fixture) run(t *testing.T, until func() bool) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.poller.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !until() {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("timed out; batches so far %v", f.fn.seen())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func flatten(batches [][]string) []string {
	var all []string
	for _, b := range batches {
		all = append(all, b...)
	}
	return all
}

// Only accepted facts reach the function (the table also streams projections, locks,
// idempotency records), in order, in batches of at most BatchSize.
func TestFilterAndBatching(t *testing.T) {
	f := newFixture(t, func([]string, events.DynamoDBEvent) ([]byte, string) { return []byte(`{"batchItemFailures":[]}`), "" })
	ids := f.admit(t, 7)
	f.run(t, func() bool { return len(flatten(f.fn.seen())) >= 7 })
	batches := f.fn.seen()
	if got := fmt.Sprint(flatten(batches)); got != fmt.Sprint(ids) {
		t.Fatalf("delivered %s, want %s", got, ids)
	}
	for _, b := range batches {
		if len(b) == 0 || len(b) > 3 {
			t.Fatalf("batch of %d: %v", len(b), batches)
		}
	}
}

// A reported failure retries from that record on; the records before it are not redelivered.
func TestPartialBatchFailureRetriesFromTheFailedRecord(t *testing.T) {
	var once sync.Once
	f := newFixture(t, func(ids []string, ev events.DynamoDBEvent) ([]byte, string) {
		resp := events.DynamoDBEventResponse{}
		if len(ids) == 3 {
			once.Do(func() {
				resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[1].Change.SequenceNumber}}
			})
		}
		out, _ := json.Marshal(resp)
		return out, ""
	})
	ids := f.admit(t, 3)
	f.run(t, func() bool { return len(f.fn.seen()) >= 2 })
	batches := f.fn.seen()
	if fmt.Sprint(batches) != fmt.Sprint([][]string{ids, ids[1:]}) {
		t.Fatalf("batches %v", batches)
	}
}

// A poison record that makes the function fail is isolated by bisection; the others are
// delivered, and after the retries the poison batch is described to the on-failure
// destination.
func TestBisectIsolatesPoisonAndReportsExhaustion(t *testing.T) {
	poison := "op_00000000000000000000000001"
	f := newFixture(t, func(ids []string, _ events.DynamoDBEvent) ([]byte, string) {
		for _, id := range ids {
			if id == poison {
				return []byte(`{"errorType":"Poison","errorMessage":"boom"}`), "Unhandled"
			}
		}
		return []byte(`{}`), ""
	})
	f.admit(t, 3)
	var body []byte
	f.run(t, func() bool {
		select {
		case body = <-f.failed:
			return true
		default:
			return false
		}
	})
	var info struct {
		RequestContext     struct{ Condition string }
		DDBStreamBatchInfo struct{ BatchSize int }
	}
	if err := json.Unmarshal(body, &info); err != nil || info.RequestContext.Condition != "RetryAttemptsExhausted" || info.DDBStreamBatchInfo.BatchSize != 1 {
		t.Fatalf("on-failure message %s", body)
	}
	delivered := map[string]bool{}
	for _, b := range f.fn.seen() {
		if len(b) == 1 {
			delivered[b[0]] = true
		}
	}
	if !delivered["op_00000000000000000000000000"] || !delivered["op_00000000000000000000000002"] {
		t.Fatalf("healthy records were held back: %v", f.fn.seen())
	}
}
