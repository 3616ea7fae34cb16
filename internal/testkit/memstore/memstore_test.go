package memstore_test

import (
	"testing"

	"github.com/longrun-dev/longrun/internal/testkit/memstore"
	"github.com/longrun-dev/longrun/internal/testkit/storetest"
)

// The in-memory store keeps the contract the DynamoDB store keeps (internal/aws/dynamo's
// TestStoreContract runs the same assertions on DynamoDB Local).
func TestContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Store { return memstore.New() })
}
