// Package apigateway emulates API Gateway (REST, Lambda proxy integration) for the local
// stack: it turns an HTTP request into the proxy event API Gateway would send, with the
// caller resolved by an emulated authorizer from bearer tokens, invokes the API function,
// and writes its proxy response back as HTTP.
package apigateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/runes"
)

// Caller is who a token stands for.
type Caller struct {
	Tenant    string `json:"tenant"`
	Principal string `json:"principal"`
	Role      string `json:"role,omitempty"` // "operator" may resolve unknown outcomes
}

// Tokens maps bearer tokens to callers.
type Tokens map[string]Caller

// DefaultTokens are the contract's local tokens.
func DefaultTokens() Tokens {
	return Tokens{
		"alice-dev-token": {Tenant: "acme", Principal: "alice"},
		"bob-dev-token":   {Tenant: "globex", Principal: "bob"},
		"ops-dev-token":   {Tenant: "longrun", Principal: "ops", Role: "operator"},
	}
}

// LoadTokens reads a JSON object of token → {tenant, principal}.
func LoadTokens(path string) (Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t Tokens
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("tokens %s: %w", path, err)
	}
	for tok, c := range t {
		if tok == "" || c.Tenant == "" || c.Principal == "" {
			return nil, fmt.Errorf("tokens %s: every token needs a tenant and a principal", path)
		}
	}
	return t, nil
}

// Invoker invokes the API function.
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte) (out []byte, functionError string, err error)
}

// Gateway serves HTTP by invoking Function.
type Gateway struct {
	Invoker  Invoker
	Function string
	Tokens   Tokens
	Log      *slog.Logger
}

// maxBody is API Gateway's payload limit; the function enforces the API's own, smaller one.
const maxBody = 10 << 20

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		gatewayError(w, http.StatusRequestEntityTooLarge, "Request Too Long")
		return
	}
	payload, _ := json.Marshal(g.event(r, body))
	out, fnErr, err := g.Invoker.Invoke(r.Context(), g.Function, payload)
	if err != nil || fnErr != "" {
		// API Gateway answers a failed integration with its own 502; the API function is
		// written never to fail that way.
		g.Log.ErrorContext(r.Context(), "integration failed", "function_error", fnErr, "error", fmt.Sprint(err), "payload", runes.Cut(string(out), 512))
		gatewayError(w, http.StatusBadGateway, "Internal server error")
		return
	}
	var resp events.APIGatewayProxyResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode == 0 {
		g.Log.ErrorContext(r.Context(), "integration failed", "error", "not a proxy response: "+fmt.Sprint(err), "payload", runes.Cut(string(out), 512))
		gatewayError(w, http.StatusBadGateway, "Internal server error")
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		w.Header().Del(k)
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	respBody := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if respBody, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			g.Log.ErrorContext(r.Context(), "integration failed", "error", "body not base64: "+err.Error())
			gatewayError(w, http.StatusBadGateway, "Internal server error")
			return
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

// event builds the proxy event. The caller goes into the authorizer context only for a known
// token; without one the function itself answers 401.
func (g *Gateway) event(r *http.Request, body []byte) events.APIGatewayProxyRequest {
	ev := events.APIGatewayProxyRequest{
		Resource:   r.URL.Path,
		Path:       r.URL.Path,
		HTTPMethod: r.Method,
		Headers:    map[string]string{}, MultiValueHeaders: map[string][]string{},
		QueryStringParameters: map[string]string{}, MultiValueQueryStringParameters: map[string][]string{},
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID:    requestID(),
			Path:         r.URL.Path, // no stage prefix locally: the API is served at /v1
			HTTPMethod:   r.Method,
			Stage:        "local",
			ResourcePath: r.URL.Path,
			RequestTime:  time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"),
			Identity:     events.APIGatewayRequestIdentity{SourceIP: host(r.RemoteAddr), UserAgent: r.UserAgent()},
		},
	}
	for k, vs := range r.Header {
		ev.Headers[k] = vs[len(vs)-1]
		ev.MultiValueHeaders[k] = vs
	}
	for k, vs := range r.URL.Query() {
		ev.QueryStringParameters[k] = vs[len(vs)-1]
		ev.MultiValueQueryStringParameters[k] = vs
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if c, known := g.Tokens[strings.TrimSpace(tok)]; known {
			ev.RequestContext.Authorizer = map[string]any{"tenant": c.Tenant, "principal": c.Principal}
			if c.Role != "" {
				ev.RequestContext.Authorizer["role"] = c.Role
			}
		}
	}
	return ev
}

func gatewayError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": message})
}

func requestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func host(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}
