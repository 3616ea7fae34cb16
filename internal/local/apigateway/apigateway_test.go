package apigateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// echo is a function that returns the event it got, so tests can see what API Gateway sent.
type echo struct{ fail string }

func (e echo) Invoke(_ context.Context, _ string, payload []byte) ([]byte, string, error) {
	if e.fail != "" {
		return []byte(`{"errorType":"x"}`), e.fail, nil
	}
	out, _ := json.Marshal(events.APIGatewayProxyResponse{StatusCode: 202, Body: string(payload),
		Headers:           map[string]string{"Content-Type": "application/json"},
		MultiValueHeaders: map[string][]string{"X-Multi": {"a", "b"}}})
	return out, "", nil
}

func serve(t *testing.T, inv Invoker, req *http.Request) (*http.Response, events.APIGatewayProxyRequest) {
	t.Helper()
	srv := httptest.NewServer(&Gateway{Invoker: inv, Function: "api", Tokens: DefaultTokens(), Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	defer srv.Close()
	req.URL.Scheme, req.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
	req.RequestURI = ""
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ev events.APIGatewayProxyRequest
	_ = json.Unmarshal(body, &ev)
	return resp, ev
}

func TestEventShape(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/v1/operations?limit=5&state=running", strings.NewReader(`{"a":1}`))
	req.Header.Set("Authorization", "Bearer alice-dev-token")
	req.Header.Add("Idempotency-Key", "k1")
	req.Header.Add("Idempotency-Key", "k2")
	resp, ev := serve(t, echo{}, req)
	if resp.StatusCode != 202 || resp.Header.Values("X-Multi")[1] != "b" {
		t.Fatalf("response %d %v", resp.StatusCode, resp.Header)
	}
	if ev.HTTPMethod != "POST" || ev.Path != "/v1/operations" || ev.RequestContext.Path != "/v1/operations" || ev.Body != `{"a":1}` || ev.IsBase64Encoded {
		t.Fatalf("event %+v", ev)
	}
	if ev.RequestContext.Authorizer["tenant"] != "acme" || ev.RequestContext.Authorizer["principal"] != "alice" {
		t.Fatalf("authorizer %v", ev.RequestContext.Authorizer)
	}
	if len(ev.MultiValueHeaders["Idempotency-Key"]) != 2 || ev.QueryStringParameters["limit"] != "5" {
		t.Fatalf("headers %v query %v", ev.MultiValueHeaders, ev.QueryStringParameters)
	}
}

func TestUnknownTokenHasNoCaller(t *testing.T) {
	for _, auth := range []string{"", "Bearer nope", "Basic alice-dev-token", "alice-dev-token"} {
		req := httptest.NewRequest(http.MethodGet, "/v1/operations/x", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		_, ev := serve(t, echo{}, req)
		if ev.RequestContext.Authorizer != nil {
			t.Fatalf("%q resolved to %v", auth, ev.RequestContext.Authorizer)
		}
	}
}

func TestBinaryBodyIsBase64(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/v1/operations", strings.NewReader("\xff\xfe"))
	_, ev := serve(t, echo{}, req)
	if !ev.IsBase64Encoded || ev.Body != "//4=" {
		t.Fatalf("body %q base64 %v", ev.Body, ev.IsBase64Encoded)
	}
}

func TestFunctionErrorIs502(t *testing.T) {
	resp, _ := serve(t, echo{fail: "Unhandled"}, httptest.NewRequest(http.MethodGet, "/v1/operations/x", nil))
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// answer is a function that answers out.
type answer struct {
	out    string
	fnErr  string
	invErr error
}

func (a answer) Invoke(context.Context, string, []byte) ([]byte, string, error) {
	return []byte(a.out), a.fnErr, a.invErr
}

// Every way the integration fails is API Gateway's 502 and one line saying why, so that a
// 502 seen in a test can be explained from the stack's log.
func TestEveryFailedIntegrationIsLogged(t *testing.T) {
	for name, inv := range map[string]answer{
		"function error":     {out: `{"errorType":"x"}`, fnErr: "Unhandled"},
		"invocation failed":  {invErr: io.ErrUnexpectedEOF},
		"not a proxy answer": {out: `{"hello":1}`},
		"not JSON":           {out: `Task timed out`},
		"body is not base64": {out: `{"statusCode":200,"body":"%%%","isBase64Encoded":true}`},
	} {
		var log strings.Builder
		srv := httptest.NewServer(&Gateway{Invoker: inv, Function: "api", Tokens: DefaultTokens(), Log: slog.New(slog.NewJSONHandler(&log, nil))})
		resp, err := http.Get(srv.URL + "/v1/operations/x")
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway || strings.Count(log.String(), `"msg":"integration failed"`) != 1 {
			t.Errorf("%s: %d, log %q", name, resp.StatusCode, log.String())
		}
	}
}

func TestLoadTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	os.WriteFile(path, []byte(`{"t1":{"tenant":"a","principal":"p"}}`), 0o600)
	if tok, err := LoadTokens(path); err != nil || tok["t1"].Tenant != "a" {
		t.Fatalf("%v %v", tok, err)
	}
	os.WriteFile(path, []byte(`{"t1":{"tenant":""}}`), 0o600)
	if _, err := LoadTokens(path); err == nil {
		t.Fatal("a token without a tenant was accepted")
	}
}

// recorder answers 405 like the API function does and keeps the events it got.
type recorder struct {
	got []events.APIGatewayProxyRequest
}

func (r *recorder) Invoke(_ context.Context, _ string, payload []byte) ([]byte, string, error) {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, "", err
	}
	r.got = append(r.got, ev)
	out, _ := json.Marshal(events.APIGatewayProxyResponse{StatusCode: http.StatusMethodNotAllowed,
		Headers: map[string]string{"Content-Type": "application/problem+json", "Allow": "GET, POST"}, Body: `{}`})
	return out, "", nil
}

// The emulator routes nothing itself: every method on every path reaches the function, which
// answers 405 for a method a known path lacks and 404 for an unknown path (on AWS this needs
// the REST API to forward such methods: it answers undefined ones itself).
func TestEveryMethodReachesTheFunction(t *testing.T) {
	for _, method := range []string{http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodOptions, http.MethodHead, http.MethodTrace, "PURGE"} {
		rec := &recorder{}
		req := httptest.NewRequest(method, "/v1/operations", nil)
		req.Header.Set("Authorization", "Bearer alice-dev-token")
		resp, _ := serve(t, rec, req)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, POST" {
			t.Errorf("%s: %d %v", method, resp.StatusCode, resp.Header)
		}
		if len(rec.got) != 1 || rec.got[0].HTTPMethod != method || rec.got[0].RequestContext.HTTPMethod != method ||
			rec.got[0].Path != "/v1/operations" || rec.got[0].RequestContext.Authorizer["principal"] != "alice" {
			t.Errorf("%s: the function got %+v", method, rec.got)
		}
	}
}
