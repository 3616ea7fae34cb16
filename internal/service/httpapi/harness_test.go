package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/ids"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
	"github.com/longrun-dev/longrun/internal/testkit/dynamotest"
	"github.com/longrun-dev/longrun/internal/testkit/openapitest"
)

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m)) }

// clock is an injectable, adjustable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// env is one API over a fresh DynamoDB Local table.
type env struct {
	t       testing.TB
	handler *httpapi.Handler
	client  *dynamodb.Client
	calls   *dynamotest.Counter
	table   string
	store   *dynamo.Store
	clock   *clock
	service *admission.Service
	spec    *openapitest.Validator
}

type option func(*env)

func withQuota(n int) option { return func(e *env) { e.service.Quota = n } }

// withClient wraps the store's DynamoDB client, to inject faults.
func withClient(wrap func(dynamo.Client) dynamo.Client) option {
	return func(e *env) { e.store.Client = wrap(e.store.Client) }
}

var specOnce = sync.OnceValues(func() (*openapitest.Validator, error) { return openapitest.New(context.Background()) })

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	client, calls := dynamotest.NewClient(t)
	table := dynamotest.NewTable(t, client)
	spec, err := specOnce()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, client: client, calls: calls, table: table, clock: &clock{t: t0}, spec: spec}
	// The production settings: the store's retries are a count, so a loaded machine, where
	// DynamoDB Local takes seconds a call, needs no wider budget than AWS.
	e.store = dynamo.New(client, table)
	gen := &ids.Generator{Now: e.clock.Now, Entropy: rand.Reader}
	e.service = &admission.Service{Store: e.store, Registry: optype.Builtin(), Now: e.clock.Now, NewID: gen.Operation,
		Window: 24 * time.Hour, Quota: admission.DefaultQuota}
	// Discovery serves admission's own registry, as the function wires it.
	e.handler = &httpapi.Handler{Admission: e.service, Operations: e.store, Types: e.service.Registry, NewRequestID: gen.Request,
		Intents: &intent.Service{Store: e.store, Now: e.clock.Now}, Now: e.clock.Now,
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	for _, o := range opts {
		o(e)
	}
	calls.Reset() // count only what requests cost, not table creation
	return e
}

// req is one API call. Zero values mean: alice, POST-style JSON, no key.
type req struct {
	method, path string
	caller       string // "alice", "bob", "carol" (acme, second principal), "" = anonymous
	userArn      string // a SigV4 caller instead: the IAM identity API Gateway resolved
	keys         []string
	contentType  string
	body         string
	stagePrefix  string
	header       map[string]string
	query        map[string][]string
	offSpec      bool // a route the API does not have: nothing in the spec to check against
}

type res struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

var callers = map[string][3]string{"alice": {"acme", "alice"}, "bob": {"globex", "bob"}, "carol": {"acme", "carol"},
	"ops": {"longrun", "ops", "operator"}}

func (e *env) do(r req) res {
	e.t.Helper()
	if r.method == "" {
		r.method = http.MethodPost
	}
	if r.path == "" {
		r.path = "/v1/operations"
	}
	if r.contentType == "" && r.method == http.MethodPost {
		r.contentType = "application/json"
	}
	ev := events.APIGatewayProxyRequest{HTTPMethod: r.method, Path: r.path, Body: r.body,
		Headers: map[string]string{}, MultiValueHeaders: map[string][]string{}}
	ev.RequestContext.Path = r.stagePrefix + r.path
	ev.RequestContext.RequestID = "apigw-request-id-should-not-leak"
	if c, ok := callers[r.caller]; ok {
		ev.RequestContext.Authorizer = map[string]any{"tenant": c[0], "principal": c[1]}
		if c[2] != "" {
			ev.RequestContext.Authorizer["role"] = c[2]
		}
	}
	if r.userArn != "" {
		// What API Gateway puts in the context of an IAM-authorized request.
		account := strings.Split(r.userArn, ":")[4]
		ev.RequestContext.Identity = events.APIGatewayRequestIdentity{AccountID: account, UserArn: r.userArn,
			Caller: "AROAEXAMPLEID:" + path.Base(r.userArn), User: "AROAEXAMPLEID:" + path.Base(r.userArn)}
	}
	set := func(k string, vs ...string) {
		ev.Headers[k] = vs[len(vs)-1]
		ev.MultiValueHeaders[k] = vs
	}
	if r.contentType != "none" && r.contentType != "" {
		set("Content-Type", r.contentType)
	}
	if len(r.keys) > 0 {
		set("Idempotency-Key", r.keys...)
	}
	for k, v := range r.header {
		set(k, v)
	}
	ev.QueryStringParameters, ev.MultiValueQueryStringParameters = map[string]string{}, r.query
	for k, vs := range r.query {
		ev.QueryStringParameters[k] = vs[len(vs)-1]
	}
	out, err := e.handler.Handle(context.Background(), ev)
	if err != nil {
		e.t.Fatalf("handler returned an error to Lambda: %v", err)
	}
	h := http.Header{}
	for k, v := range out.Headers {
		h.Set(k, v)
	}
	got := res{status: out.StatusCode, header: h, body: []byte(out.Body)}
	_ = json.Unmarshal(got.body, &got.json)

	// Every response must match api/openapi.yaml and carry the contract's universal headers.
	hr, _ := http.NewRequest(r.method, "http://127.0.0.1:8080"+r.path, strings.NewReader(r.body))
	hr.URL.RawQuery = url.Values(r.query).Encode()
	for k, v := range ev.Headers {
		hr.Header.Set(k, v)
	}
	if err := e.spec.ValidateResponse(context.Background(), hr, []byte(r.body), got.status, h, got.body); err != nil && !r.offSpec {
		e.t.Errorf("%s %s -> %d does not match the OpenAPI document: %v\n%s", r.method, r.path, got.status, err, got.body)
	}
	if h.Get("X-Request-Id") == "" || !strings.HasPrefix(h.Get("X-Request-Id"), "req_") {
		e.t.Errorf("missing X-Request-Id: %v", h)
	}
	if got.status >= 400 && h.Get("Content-Type") != "application/problem+json" {
		e.t.Errorf("error without problem+json: %v", h)
	}
	for _, leak := range []string{e.table, "apigw-request-id", "arn:aws", "amazonaws"} {
		if bytes.Contains(got.body, []byte(leak)) || strings.Contains(flat(h), leak) {
			e.t.Errorf("response leaks a provider identifier %q: %s", leak, got.body)
		}
	}
	return got
}

func flat(h http.Header) string {
	var b strings.Builder
	for k, v := range h {
		b.WriteString(k + ":" + strings.Join(v, ",") + "\n")
	}
	return b.String()
}

// admit posts an admission with one key as alice unless the request says otherwise.
func (e *env) admit(key, body string) res {
	e.t.Helper()
	return e.do(req{caller: "alice", keys: []string{key}, body: body})
}

// snapshot returns every item in the table, in a stable order, to prove what a request
// did or did not change.
func (e *env) snapshot() []map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		e.t.Fatal(err)
	}
	items := out.Items
	key := func(m map[string]types.AttributeValue) string {
		return m["pk"].(*types.AttributeValueMemberS).Value + "|" + m["sk"].(*types.AttributeValueMemberS).Value
	}
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	return items
}

// unchanged fails unless the table holds exactly what before held.
func (e *env) unchanged(before []map[string]types.AttributeValue) {
	e.t.Helper()
	if after := e.snapshot(); !reflect.DeepEqual(before, after) {
		e.t.Fatalf("the table changed: %d items before, %d after", len(before), len(after))
	}
}

// operations counts operations (projection items) in the table.
func (e *env) operations() int {
	n := 0
	for _, item := range e.snapshot() {
		if item["sk"].(*types.AttributeValueMemberS).Value == "META" {
			n++
		}
	}
	return n
}

func demo(target string) string { return `{"type":"demo.task","input":{"target":"` + target + `"}}` }

func wantProblem(t testing.TB, r res, status int, code string) {
	t.Helper()
	if r.status != status || r.json["code"] != code {
		t.Fatalf("got %d %s, want %d %s", r.status, r.body, status, code)
	}
	if r.json["type"] != "https://longrun.dev/problems/"+code || r.json["requestId"] != r.header.Get("X-Request-Id") {
		t.Fatalf("problem body: %s", r.body)
	}
}
