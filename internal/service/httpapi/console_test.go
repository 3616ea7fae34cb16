package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/service/console"
	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// The console's files are served under /console before any caller is resolved (they hold no
// data), with the console's own headers and the API's request id; without a console those
// paths are 404 like any path the API does not have, and /v1 still wants a caller.
func TestConsoleIsServedWithoutCredentials(t *testing.T) {
	c, err := console.New(console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	newHandler := func(cons httpapi.Console) *httpapi.Handler {
		return &httpapi.Handler{Console: cons, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			NewRequestID: func() string { seq++; return "req_test" + strings.Repeat("0", seq%3) }}
	}
	get := func(h *httpapi.Handler, method, path string) events.APIGatewayProxyResponse {
		out, err := h.Handle(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: method, Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	h := newHandler(c)
	for path, want := range map[string]string{"/console/": "text/html; charset=utf-8", "/console/console.js": "text/javascript; charset=utf-8"} {
		r := get(h, http.MethodGet, path)
		if r.StatusCode != http.StatusOK || r.Headers["Content-Type"] != want || r.Headers["X-Request-Id"] == "" ||
			!strings.HasPrefix(r.Headers["Content-Security-Policy"], "default-src 'none'") {
			t.Errorf("GET %s: %d %v", path, r.StatusCode, r.Headers)
		}
	}
	// The assets may be cached briefly; the page never is.
	if cc := get(h, http.MethodGet, "/console/console.css").Headers["Cache-Control"]; cc != "public, max-age=300" {
		t.Errorf("console.css Cache-Control %q", cc)
	}
	if cc := get(h, http.MethodGet, "/console/").Headers["Cache-Control"]; cc != "no-store" {
		t.Errorf("index Cache-Control %q", cc)
	}
	if r := get(h, http.MethodGet, "/console/secret.txt"); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /console/secret.txt: %d", r.StatusCode)
	}
	if r := get(h, http.MethodGet, "/v1/operations"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/operations without a caller: %d", r.StatusCode)
	}
	if r := get(h, http.MethodGet, "/consoles"); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /consoles without a caller: %d, want the API's 401", r.StatusCode)
	}
	none := newHandler(nil)
	for _, path := range []string{"/console", "/console/", "/console/console.js"} {
		r := get(none, http.MethodGet, path)
		if r.StatusCode != http.StatusNotFound || r.Headers["Content-Type"] != "application/problem+json" || r.Headers["Cache-Control"] != "no-store" {
			t.Errorf("no console, GET %s: %d %v", path, r.StatusCode, r.Headers)
		}
	}
}
