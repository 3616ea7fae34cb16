package conflictproxy_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "X"}}
}

func put(table, pk string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: key(pk)}}
}

func exists(t *testing.T, c *dynamodb.Client, table, pk string) bool {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key(pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item != nil
}

// While one transaction holds item a, a second transaction on a is cancelled with
// TransactionConflict for a and None for its other item, a single write on a fails with
// TransactionConflictException, a write elsewhere and a read of a go through (the read sees
// the state before the holder commits), and after the holder commits the second transaction
// succeeds. This test fails if the proxy stops refusing overlapping work. The hold is far
// longer than the checks need and ends when they are done (EndHolds): with a 300 ms hold,
// a loaded machine once ran the checks past it.
func TestOverlappingWorkIsRefusedAsOnAWS(t *testing.T) {
	client, _, proxy := dynamotest.NewConflictClient(t, time.Hour)
	table := dynamotest.NewTable(t, client)
	ctx := context.Background()

	var wg sync.WaitGroup
	var firstErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, firstErr = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(table, "a"), put(table, "b")}})
	}()
	// Wait until the first transaction holds its items.
	for proxy.Stats().Transactions == 0 {
		time.Sleep(time.Millisecond)
	}

	_, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(table, "c"), put(table, "a")}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("overlapping transaction: want TransactionCanceledException, got %v", err)
	}
	if len(tce.CancellationReasons) != 2 || aws.ToString(tce.CancellationReasons[0].Code) != "None" ||
		aws.ToString(tce.CancellationReasons[1].Code) != "TransactionConflict" {
		t.Fatalf("cancellation reasons: %+v", tce.CancellationReasons)
	}

	_, err = client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("b"),
		UpdateExpression: aws.String("SET n = :n"), ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "1"}}})
	var conflict *types.TransactionConflictException
	if !errors.As(err, &conflict) {
		t.Fatalf("single write on a held item: want TransactionConflictException, got %v", err)
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key("a")}); !errors.As(err, &conflict) {
		t.Fatalf("put on a held item: want TransactionConflictException, got %v", err)
	}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key("d")}); err != nil {
		t.Fatalf("put on a free item: %v", err)
	}
	if exists(t, client, table, "a") {
		t.Fatal("a read during the hold saw the uncommitted item")
	}
	if exists(t, client, table, "c") {
		t.Fatal("the cancelled transaction wrote its other item")
	}

	proxy.EndHolds()
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("holder: %v", firstErr)
	}
	if !exists(t, client, table, "a") || !exists(t, client, table, "b") {
		t.Fatal("the holder's items are missing after it committed")
	}
	if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(table, "c"), put(table, "a")}}); err != nil {
		t.Fatalf("the same transaction after the holder committed: %v", err)
	}
	st := proxy.Stats()
	if st.Cancelled != 1 || st.SingleConflicts != 2 || st.Transactions != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Transactions on disjoint items never conflict, however they overlap.
func TestDisjointTransactionsDoNotConflict(t *testing.T) {
	client, _, proxy := dynamotest.NewConflictClient(t, 20*time.Millisecond)
	table := dynamotest.NewTable(t, client)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pk := string(rune('A' + i))
			_, errs[i] = client.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
				TransactItems: []types.TransactWriteItem{put(table, pk), put(table, pk+"2")}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("transaction %d: %v", i, err)
		}
	}
	if st := proxy.Stats(); st.Cancelled != 0 || st.Transactions != 16 {
		t.Fatalf("stats %+v", st)
	}
}

// Latency slows every request passed on to DynamoDB Local, reads and transactions alike,
// and is spent after a transaction released its items: a transaction sent after the first
// one's hold but during its latency is not cancelled. A slow store, not a more contended one.
func TestLatencyIsASlowStoreNotMoreConflicts(t *testing.T) {
	const hold, latency = 20 * time.Millisecond, 400 * time.Millisecond
	direct, _ := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, direct)
	client, _, proxy := dynamotest.NewSlowConflictClient(t, hold, latency)
	ctx := context.Background()

	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(table, "a"), put(table, "b")}})
		done <- err
	}()
	for proxy.Stats().Transactions == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(4 * hold) // past the first transaction's hold (at most 2 × hold), inside its latency
	second := time.Now()
	if _, err := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put(table, "a")}}); err != nil {
		t.Fatalf("a transaction after the first one's hold: %v", err)
	}
	if took := time.Since(second); took < latency {
		t.Fatalf("the second transaction took %s, less than the latency %s", took, latency)
	}
	if err := <-done; err != nil {
		t.Fatalf("first transaction: %v", err)
	}
	if took := time.Since(start); took < hold+latency {
		t.Fatalf("the first transaction took %s, less than its hold and the latency", took)
	}
	read := time.Now()
	if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a")}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(read); took < latency {
		t.Fatalf("a read took %s, less than the latency %s", took, latency)
	}
	if st := proxy.Stats(); st.Cancelled != 0 || st.Transactions != 2 {
		t.Fatalf("stats %+v", st)
	}
}
