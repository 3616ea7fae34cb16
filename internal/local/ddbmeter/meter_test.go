package ddbmeter_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/local/ddbmeter"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

type av = types.AttributeValue

func s(v string) av { return &types.AttributeValueMemberS{Value: v} }

// metered returns a client whose calls pass a Meter in front of DynamoDB Local, the meter,
// and a fresh table: keys pk and sk, index "all" on gk, gs (ALL) and index "inc" on hk
// (INCLUDE inc).
func metered(t *testing.T) (*dynamodb.Client, *ddbmeter.Meter, string) {
	t.Helper()
	m, err := ddbmeter.New(os.Getenv(dynamotest.EndpointEnv), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	c, _ := dynamotest.Client(srv.URL)
	table := "meter-" + strings.ReplaceAll(t.Name(), "/", "-")
	str := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(names ...string) []types.KeySchemaElement {
		ks := []types.KeySchemaElement{{AttributeName: aws.String(names[0]), KeyType: types.KeyTypeHash}}
		if len(names) > 1 {
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(names[1]), KeyType: types.KeyTypeRange})
		}
		return ks
	}
	ctx := context.Background()
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{str("pk"), str("sk"), str("gk"), str("gs"), str("hk")},
		KeySchema:            key("pk", "sk"),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String("all"), KeySchema: key("gk", "gs"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}},
			{IndexName: aws.String("inc"), KeySchema: key("hk"),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"inc"}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	m.Reset()
	return c, m, table
}

// item is pk id, sk "x" (6 bytes for a one-letter id) and more, alternating names and values.
func item(id string, more ...string) map[string]av {
	it := map[string]av{"pk": s(id), "sk": s("x")}
	for i := 0; i+1 < len(more); i += 2 {
		it[more[i]] = s(more[i+1])
	}
	return it
}

// padding is a "pad" value making its attribute n bytes.
func padding(n int) string { return strings.Repeat("x", n-3) }

func expect(t *testing.T, m *ddbmeter.Meter, what string, want ddbmeter.Usage) {
	t.Helper()
	if got := m.Totals(); got.Usage != want || got.Unpriced != 0 {
		t.Errorf("%s: metered %+v (%d unpriced), want %+v", what, got.Usage, got.Unpriced, want)
	}
	m.Reset()
}

// The item sizes in the comments are by the documented rules: pk and sk of a one-letter id
// are 6 bytes, gk "g1" and gs "s1" 4 each, a pad(n) n.
func TestMeterWrites(t *testing.T) {
	c, m, table := metered(t)
	ctx := context.Background()
	tbl := aws.String(table)

	// A transaction: a new 6-byte item, a new 1514-byte one in index "all", and a check on an
	// absent item: 2 units per started KB each (2 + 4 + 2); the second enters the index whole
	// (2 KB: 2 units, not doubled).
	_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: tbl, Item: item("a")}},
		{Put: &types.Put{TableName: tbl, Item: item("b", "gk", "g1", "gs", "s1", "pad", padding(1500))}},
		{ConditionCheck: &types.ConditionCheck{TableName: tbl, Key: item("c"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "transaction", ddbmeter.Usage{WRU: 8, IndexWRU: 2})

	// a enters index "all" (6 → 14 bytes): one unit for the table, one for the index.
	update := func(id, expr string, values map[string]av) {
		t.Helper()
		var names map[string]string
		if strings.Contains(expr, "#p") {
			names = map[string]string{"#p": "pad"} // a reserved word
		}
		_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: item(id), UpdateExpression: aws.String(expr),
			ExpressionAttributeNames: names, ExpressionAttributeValues: values})
		if err != nil {
			t.Fatal(err)
		}
	}
	update("a", "SET gk = :g, gs = :s", map[string]av{":g": s("g1"), ":s": s("s1")})
	expect(t, m, "entering the index", ddbmeter.Usage{WRU: 1, IndexWRU: 1})

	// a's index key changes: the old entry deleted, the new put.
	update("a", "SET gk = :g", map[string]av{":g": s("g2")})
	expect(t, m, "index key changed", ddbmeter.Usage{WRU: 1, IndexWRU: 2})

	// b leaves the index (1514 → 1510 bytes): 2 units for the table, 2 to delete its entry.
	update("b", "REMOVE gk", nil)
	expect(t, m, "leaving the index", ddbmeter.Usage{WRU: 2, IndexWRU: 2})

	// A put on b refused by its condition still costs b's 2 KB; nothing reaches an index.
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("b"), ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		t.Fatalf("the conditional put: %v", err)
	}
	expect(t, m, "failed condition", ddbmeter.Usage{WRU: 2})

	// A transaction cancelled by b's condition: nothing written; a new item's 1 KB and b's
	// 2 KB, each twice.
	_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: tbl, Item: item("d", "gk", "g1", "gs", "s1")}},
		{Update: &types.Update{TableName: tbl, Key: item("b"), UpdateExpression: aws.String("SET gk = :g"),
			ConditionExpression: aws.String("attribute_not_exists(pk)"), ExpressionAttributeValues: map[string]av{":g": s("g3")}}},
	}})
	var cancelled *types.TransactionCanceledException
	if !errors.As(err, &cancelled) {
		t.Fatalf("the cancelled transaction: %v", err)
	}
	expect(t, m, "cancelled transaction", ddbmeter.Usage{WRU: 2 + 4})

	// e enters index "inc", whose entry is hk, pk, sk and inc (13 bytes) whatever else e holds.
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("e", "hk", "h", "inc", "1", "pad", padding(1100))})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "entering an INCLUDE index", ddbmeter.Usage{WRU: 2, IndexWRU: 1})
	update("e", "SET #p = :p", map[string]av{":p": s(padding(1200))})
	expect(t, m, "an attribute the index does not project", ddbmeter.Usage{WRU: 2})
	update("e", "SET inc = :i", map[string]av{":i": s("2")})
	expect(t, m, "a projected attribute", ddbmeter.Usage{WRU: 2, IndexWRU: 1})

	// A delete costs the deleted item's size, and its entry's delete.
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: item("e")})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "delete", ddbmeter.Usage{WRU: 2, IndexWRU: 1})

	tot := m.Totals()
	if len(tot.Calls) != 0 {
		t.Fatalf("Reset left %v", tot.Calls)
	}

	// The caller its SDK names (app/<id> in the User-Agent) gets its share and the time the
	// meter added to its calls.
	named := dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.AppID = "recorder" })
	if _, err := named.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("f")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item("g")}); err != nil {
		t.Fatal(err)
	}
	tot = m.Totals()
	if tot.ByCaller["recorder"] != (ddbmeter.Usage{WRU: 1}) || tot.ByCaller[""] != (ddbmeter.Usage{WRU: 1}) ||
		tot.OverheadByCaller["recorder"] <= 0 || tot.OverheadByCaller["recorder"]+tot.OverheadByCaller[""] != tot.Overhead {
		t.Fatalf("by caller: %+v", tot)
	}
}

func TestMeterReads(t *testing.T) {
	c, m, table := metered(t)
	ctx := context.Background()
	tbl := aws.String(table)
	// f is 6 + 5000 bytes: two 4 KB read units whole, whatever a read projects.
	for _, it := range []map[string]av{item("f", "gk", "g", "gs", "1", "pad", padding(5000)), item("g", "gk", "g", "gs", "2")} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	m.Reset()

	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: item("f"), ProjectionExpression: aws.String("pk")}); err != nil {
		t.Fatal(err)
	}
	expect(t, m, "eventually consistent get, projected", ddbmeter.Usage{RRU: 1})
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: item("f"), ConsistentRead: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	expect(t, m, "consistent get", ddbmeter.Usage{RRU: 2})
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: item("z")}); err != nil {
		t.Fatal(err)
	}
	expect(t, m, "get of nothing", ddbmeter.Usage{RRU: 0.5})

	_, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: []map[string]av{item("f"), item("g"), item("z")}, ConsistentRead: aws.Bool(true)}}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "batch get: each item rounded", ddbmeter.Usage{RRU: 2 + 1 + 1})

	_, err = c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: tbl, Key: item("g")}}}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "transactional get", ddbmeter.Usage{RRU: 2})

	// A query filtering everything out still reads what it evaluated: f's 5006 bytes.
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: tbl, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk"), FilterExpression: aws.String("#n = :none"),
		ExpressionAttributeNames:  map[string]string{"#n": "gk"},
		ExpressionAttributeValues: map[string]av{":pk": s("f"), ":none": s("nothing")}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "filtered query", ddbmeter.Usage{RRU: 2})

	// The index holds both items whole (5012 + 12 bytes: 2 × 4 KB), eventually consistent.
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("all"),
		KeyConditionExpression: aws.String("gk = :g"), ExpressionAttributeValues: map[string]av{":g": s("g")},
		Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "index query", ddbmeter.Usage{RRU: 1})

	// A query matching nothing still costs a unit.
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: tbl, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk"), ExpressionAttributeValues: map[string]av{":pk": s("nothing")}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, m, "empty query", ddbmeter.Usage{RRU: 1})

	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: tbl}); err != nil {
		t.Fatal(err)
	}
	if tot := m.Totals(); tot.Usage != (ddbmeter.Usage{}) || tot.Calls["DescribeTable"] != 1 {
		t.Fatalf("table management: %+v", tot)
	}
}

// Writes are metered one at a time, so the reads around one write never see another's
// change: thirty concurrent appends to one list cost exactly what they cost one after
// another, the k-th being 13 + 98k bytes after it.
func TestMeterConcurrentWrites(t *testing.T) {
	c, m, table := metered(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := item("q")
	start["l"] = &types.AttributeValueMemberL{Value: []av{}} // 6 + 1 + 3 bytes
	start["pk"] = s("same")                                  // 3 bytes more
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: start}); err != nil {
		t.Fatal(err)
	}
	m.Reset()
	const n = 30
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: item("same"),
				UpdateExpression:          aws.String("SET l = list_append(l, :x)"),
				ExpressionAttributeValues: map[string]av{":x": &types.AttributeValueMemberL{Value: []av{s(strings.Repeat("y", 97))}}}})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want := 0
	for k := 1; k <= n; k++ {
		want += ddbmeter.WriteUnits(13 + 98*k)
	}
	if got := m.Totals(); got.Usage != (ddbmeter.Usage{WRU: float64(want)}) || got.Calls["UpdateItem"] != n {
		t.Fatalf("%+v, want %d WRU", got, want)
	}
}
