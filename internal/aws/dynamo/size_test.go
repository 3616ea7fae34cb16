package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/ddbmeter"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
)

// The store counts an item's size as the cost model's calculator does: it decides by it
// what the projection carries without a write unit more.
func TestItemSizeIsTheMeters(t *testing.T) {
	t.Parallel()
	client, _ := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	store := dynamo.New(client, table)
	ctx := context.Background()
	if _, err := store.Admit(ctx, intent("op_1", "k1", "demo:a")); err != nil {
		t.Fatal(err)
	}
	op := dynamotest.Load(t, store, "op_1")
	if _, err := store.Append(ctx, op, operation.Fact{Kind: operation.KindStarted, At: now.Add(time.Second), Source: operation.SourceExecutor,
		Lease: &operation.Lease{Run: "req_1", Execution: "x", Until: now.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	every := map[string]types.AttributeValue{
		"s": s("é✓"), "n0": n("0"), "n1": n("-12300"), "n2": n("0.000123"), "n3": n("1.5e10"), "n4": n("1795860004123456789"),
		"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}}, "t": &types.AttributeValueMemberBOOL{Value: true},
		"z": &types.AttributeValueMemberNULL{Value: true}, "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), n("12")}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v"), "mm": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"1", "22"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
	}
	for name, item := range map[string]map[string]types.AttributeValue{
		"projection": itemAt(t, client, table, "op_1", "META"), "accepted fact": itemAt(t, client, table, "op_1", "FACT#00000001"), "every type": every,
	} {
		if got, want := dynamo.ItemSize(item), ddbmeter.Size(meterItem(item)); got != want {
			t.Errorf("%s: the store counts %d bytes, the meter %d", name, got, want)
		}
	}
}

// itemAt reads an item of an operation's partition.
func itemAt(t *testing.T, client *dynamodb.Client, table, id, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "OP#" + id}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// meterItem is an item as the meter's rules read it.
func meterItem(item map[string]types.AttributeValue) ddbmeter.Item {
	if item == nil {
		return nil
	}
	out := ddbmeter.Item{}
	for k, v := range item {
		out[k] = meterValue(v)
	}
	return out
}

func meterValue(v types.AttributeValue) ddbmeter.Value {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return ddbmeter.Value{S: &v.Value}
	case *types.AttributeValueMemberN:
		return ddbmeter.Value{N: &v.Value}
	case *types.AttributeValueMemberB:
		return ddbmeter.Value{B: v.Value}
	case *types.AttributeValueMemberBOOL:
		return ddbmeter.Value{BOOL: &v.Value}
	case *types.AttributeValueMemberNULL:
		return ddbmeter.Value{NULL: &v.Value}
	case *types.AttributeValueMemberL:
		l := []ddbmeter.Value{}
		for _, e := range v.Value {
			l = append(l, meterValue(e))
		}
		return ddbmeter.Value{L: l}
	case *types.AttributeValueMemberM:
		return ddbmeter.Value{M: meterItem(v.Value)}
	case *types.AttributeValueMemberSS:
		return ddbmeter.Value{SS: v.Value}
	case *types.AttributeValueMemberNS:
		return ddbmeter.Value{NS: v.Value}
	case *types.AttributeValueMemberBS:
		return ddbmeter.Value{BS: v.Value}
	}
	panic(fmt.Sprintf("no such attribute value %T", v))
}
