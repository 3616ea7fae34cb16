// Package dynamotest gives tests and benchmarks a real DynamoDB: DynamoDB Local, started by
// the Makefile (LONGRUN_DYNAMODB_ENDPOINT) or, when a package's tests run alone, by Main.
// Each test gets its own table, so tests never see each other's items.
package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/local/conflictproxy"
	"github.com/longrun-dev/longrun/internal/local/ddblocal"
)

// EndpointEnv names the variable that points tests at a running DynamoDB Local.
const EndpointEnv = ddblocal.EndpointEnv

// Main runs a package's tests, starting DynamoDB Local first unless EndpointEnv is set.
// Use it as: func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }
func Main(m *testing.M) int {
	if os.Getenv(EndpointEnv) != "" {
		return m.Run()
	}
	srv, err := ddblocal.Start(context.Background(), ddblocal.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dynamotest:", err)
		return 2
	}
	defer srv.Stop()
	os.Setenv(EndpointEnv, srv.Endpoint)
	return m.Run()
}

// Counter counts DynamoDB requests (HTTP attempts, so SDK retries count too) and how many
// of them ran one after another.
type Counter struct {
	n     atomic.Int64
	mu    sync.Mutex
	calls []Call
}

// Call is one request the counter saw.
type Call struct {
	Operation  string // e.g. "TransactWriteItems"
	Start, End time.Time
}

// Load returns the number of requests so far.
func (c *Counter) Load() int64 { return c.n.Load() }

// Reset forgets every request so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n.Store(0)
	c.calls = nil
}

// Calls returns the requests so far, in the order they started.
func (c *Counter) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.calls)
	slices.SortFunc(out, func(a, b Call) int { return a.Start.Compare(b.Start) })
	return out
}

// RoundTrips is the latency depth of the requests so far: the longest chain of requests
// each started after the previous one ended. Two requests issued side by side are one
// round trip; a request sent after another answered makes two.
func (c *Counter) RoundTrips() int {
	calls := c.Calls()
	depth := make([]int, len(calls))
	best := 0
	for i, call := range calls {
		depth[i] = 1
		for j := range i {
			if !calls[j].End.After(call.Start) && depth[j]+1 > depth[i] {
				depth[i] = depth[j] + 1
			}
		}
		best = max(best, depth[i])
	}
	return best
}

func (c *Counter) record(call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

// NewClient returns a client for the test endpoint and a counter of its calls.
func NewClient(tb testing.TB) (*dynamodb.Client, *Counter) {
	tb.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		tb.Fatalf("%s is not set: run the tests with `make test`, or call dynamotest.Main from TestMain", EndpointEnv)
	}
	return client(endpoint, ddblocal.MaxConns)
}

// Client builds a DynamoDB client for a local endpoint, counting its calls. It has as many
// requests in flight as its callers make: NewClient bounds them when the endpoint is
// DynamoDB Local itself, and the conflict proxy bounds its own to DynamoDB Local.
func Client(endpoint string) (*dynamodb.Client, *Counter) { return client(endpoint, 0) }

// client is Client with at most maxConns requests in flight (0: no bound); the rest queue in
// the client, where nothing times out.
func client(endpoint string, maxConns int) (*dynamodb.Client, *Counter) {
	counter := &Counter{}
	// The Finalize step's tail runs once per attempt, inside the SDK's retry loop.
	count := middleware.FinalizeMiddlewareFunc("CountAttempts", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		counter.n.Add(1)
		call := Call{Operation: middleware.GetOperationName(ctx), Start: time.Now()}
		out, md, err := next.HandleFinalize(ctx, in)
		call.End = time.Now()
		counter.record(call)
		return out, md, err
	})
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		// DynamoDB Local's 4xx responses make the SDK log checksum warnings.
		DisableValidateResponseChecksum: true,
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxConnsPerHost = maxConns
		}),
		APIOptions: []func(*middleware.Stack) error{func(s *middleware.Stack) error {
			return s.Finalize.Add(count, middleware.After)
		}},
	})
	return client, counter
}

// EachStore runs test twice: on a client of plain DynamoDB Local, and on one behind the
// conflict-faithful proxy (transactions hold their items 10–20 ms and overlapping work is
// refused, as on AWS). Plain DynamoDB Local runs transactions one at a time and never
// refuses one, so a race test proves nothing about AWS on it alone.
func EachStore(t *testing.T, test func(t *testing.T, client *dynamodb.Client)) {
	t.Run("plain", func(t *testing.T) {
		client, _ := NewClient(t)
		test(t, client)
	})
	t.Run("conflicts", func(t *testing.T) {
		client, _, _ := NewConflictClient(t, 10*time.Millisecond)
		test(t, client)
	})
}

// NewConflictClient is NewClient behind a conflict-faithful proxy: transactions hold their
// items for hold to 2×hold and overlapping work on them is refused as DynamoDB on AWS
// refuses it. The proxy closes with the test.
func NewConflictClient(tb testing.TB, hold time.Duration) (*dynamodb.Client, *Counter, *conflictproxy.Proxy) {
	tb.Helper()
	return NewSlowConflictClient(tb, hold, 0)
}

// NewSlowConflictClient is NewConflictClient on a slow store: every request the proxy passes
// on to DynamoDB Local waits latency first, as on a loaded machine, but on purpose and the
// same every run. Create the table with a NewClient: it would wait too.
func NewSlowConflictClient(tb testing.TB, hold, latency time.Duration) (*dynamodb.Client, *Counter, *conflictproxy.Proxy) {
	tb.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		tb.Fatalf("%s is not set: run the tests with `make test`, or call dynamotest.Main from TestMain", EndpointEnv)
	}
	p, err := conflictproxy.Start(conflictproxy.Options{Upstream: endpoint, HoldMin: hold, HoldMax: 2 * hold,
		Seed: uint64(time.Now().UnixNano()), Latency: latency})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	client, counter := Client(p.Endpoint)
	return client, counter, p
}

// NewTable creates a fresh table with the production schema and deletes it after the test.
func NewTable(tb testing.TB, client *dynamodb.Client) string {
	tb.Helper()
	name := "longrun-test-" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dynamo.CreateTable(ctx, client, name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
