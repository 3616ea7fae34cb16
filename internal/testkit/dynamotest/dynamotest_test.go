package dynamotest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// The counter must count every HTTP attempt, SDK retries included, or a "one round trip"
// figure could hide retries.
func TestCounterCountsRetries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"boom"}`))
	}))
	defer srv.Close()
	client, calls := Client(srv.URL)
	if _, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err == nil {
		t.Fatal("expected an error")
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("counted %d attempts, want 4 (the DynamoDB client's default)", n)
	}
}
