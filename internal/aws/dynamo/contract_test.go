package dynamo_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
	"github.com/longrun-dev/longrun/internal/testkit/storetest"
)

// The DynamoDB store keeps the store contract, on plain DynamoDB Local and behind the
// conflict proxy. The in-memory store that the decisions' tests run on passes the same
// assertions (internal/testkit/memstore), so the two cannot drift apart unnoticed.
func TestStoreContract(t *testing.T) {
	t.Parallel()
	dynamotest.EachStore(t, func(t *testing.T, client *dynamodb.Client) {
		storetest.Run(t, func(t *testing.T) storetest.Store {
			return dynamo.New(client, dynamotest.NewTable(t, client))
		})
	})
}
