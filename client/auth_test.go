package client_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/longrun-dev/longrun/client"
)

const (
	accessKey    = "AKIDEXAMPLE"
	secretKey    = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	sessionToken = "session-token-example"
	region       = "eu-west-1"
)

// signed is what the verifying server received, and what it made of the signature.
type signed struct {
	method, path, rawQuery string
	body                   []byte
	date                   string
	signedHeaders          []string
	err                    error
}

// sigV4Server verifies every request's Signature Version 4 on its own, from the RFC-like
// description AWS publishes (canonical request, string to sign, derived key), with
// crypto/hmac rather than the SDK that signed it, over the path, query, headers and body it
// actually received.
func sigV4Server(t *testing.T, answer http.HandlerFunc) (*httptest.Server, func() []signed) {
	var mu sync.Mutex
	var got []signed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s := signed{method: r.Method, path: r.URL.Path, rawQuery: r.URL.RawQuery, body: body, date: r.Header.Get("X-Amz-Date")}
		s.signedHeaders, s.err = verifySigV4(r, r.URL.EscapedPath(), body)
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []signed {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// verifySigV4 checks r's Authorization as a signature of a request with the given path and
// body (the received ones; a test passes others to prove a difference is caught).
func verifySigV4(r *http.Request, path string, body []byte) ([]string, error) {
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return nil, fmt.Errorf("Authorization %q is not AWS4-HMAC-SHA256", auth)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(part, "=")
		fields[k] = v
	}
	date := r.Header.Get("X-Amz-Date")
	if len(date) != len("20060102T150405Z") {
		return nil, fmt.Errorf("X-Amz-Date %q", date)
	}
	scope := date[:8] + "/" + region + "/execute-api/aws4_request"
	if fields["Credential"] != accessKey+"/"+scope {
		return nil, fmt.Errorf("Credential %q, want %s/%s", fields["Credential"], accessKey, scope)
	}
	signedHeaders := strings.Split(fields["SignedHeaders"], ";")
	var headers strings.Builder
	for _, h := range signedHeaders {
		var v string
		switch h {
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		default:
			vals := r.Header.Values(h)
			if len(vals) == 0 {
				return nil, fmt.Errorf("signed header %s is not in the request", h)
			}
			for i := range vals {
				vals[i] = strings.Join(strings.Fields(vals[i]), " ")
			}
			v = strings.Join(vals, ",")
		}
		headers.WriteString(h + ":" + v + "\n")
	}
	query := r.URL.Query()
	var pairs []string
	for k, vs := range query {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(k)+"="+uriEncode(v))
		}
	}
	slices.Sort(pairs)
	sum := sha256.Sum256(body)
	canonical := strings.Join([]string{r.Method, path, strings.Join(pairs, "&"), headers.String(), fields["SignedHeaders"], hex.EncodeToString(sum[:])}, "\n")
	creq := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + hex.EncodeToString(creq[:])
	key := []byte("AWS4" + secretKey)
	for _, part := range []string{date[:8], region, "execute-api", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	if want := hex.EncodeToString(hmacSHA256(key, toSign)); !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return signedHeaders, fmt.Errorf("signature %s, want %s over\n%s", fields["Signature"], want, canonical)
	}
	return signedHeaders, nil
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// uriEncode is SigV4's URI encoding: every byte but the unreserved ones, as %XX.
func uriEncode(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func sigV4Client(t *testing.T, srv *httptest.Server, clock *fakeClock) *client.Client {
	t.Helper()
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, sessionToken)}
	c, err := client.New(srv.URL+"/prod", &client.ClientOptions{HTTPClient: freshConnections(), Auth: client.SigV4(cfg), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSigV4SignsTheExactRequest: an admission, a filtered list and a read through a stage
// prefix are each signed, with static credentials at the injected time, over exactly the
// path (the stage included), query, headers (the Idempotency-Key among them) and body
// the API received; a retry is signed afresh at its own time.
func TestSigV4SignsTheExactRequest(t *testing.T) {
	n := 0
	srv, received := sigV4Server(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		switch {
		case r.Method == http.MethodPost && n == 1:
			writeProblem(w, client.ErrorCodeUnavailable, 2, "busy")
		case r.Method == http.MethodPost:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", "/prod/v1/operations/"+opID)
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"operationId":"` + opID + `","type":"demo.task","target":"demo:x","state":"accepted","statusUrl":"/prod/v1/operations/` + opID + `","createdAt":"2026-11-30T10:00:00Z"}`))
		case r.URL.Path == "/prod/v1/operations":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"items":[],"nextCursor":null}`))
		default:
			m := rep(client.StateSucceeded, 4)
			m["statusUrl"] = "/prod/v1/operations/" + opID
			writeRep(w, m, -1)
		}
	})
	clock := newClock()
	c := sigV4Client(t, srv, clock)
	ctx := context.Background()
	op, err := c.Create(ctx, client.CreateRequest{Type: "demo.task", Input: map[string]any{"target": "invoice 42 / ü"}, Key: "k-sig"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range c.List(ctx, &client.ListOptions{State: client.StateRunning, Type: "demo.task", Limit: 5, Cursor: "a b+c/="}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.NewPoller(op)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}

	got := received()
	if len(got) != 4 {
		t.Fatalf("%d requests, want 4", len(got))
	}
	wantDates := []string{"20261130T100000Z", "20261130T100002Z", "20261130T100002Z", "20261130T100002Z"}
	wantPaths := []string{"/prod/v1/operations", "/prod/v1/operations", "/prod/v1/operations", "/prod/v1/operations/" + opID}
	for i, s := range got {
		if s.err != nil {
			t.Errorf("request %d (%s %s): %v", i+1, s.method, s.path, s.err)
		}
		if s.date != wantDates[i] || s.path != wantPaths[i] {
			t.Errorf("request %d: %s at %s, want %s at %s", i+1, s.path, s.date, wantPaths[i], wantDates[i])
		}
		for _, h := range []string{"host", "x-amz-date", "x-amz-security-token"} {
			if !slices.Contains(s.signedHeaders, h) {
				t.Errorf("request %d: %s is not signed (%v)", i+1, h, s.signedHeaders)
			}
		}
	}
	for _, s := range got[:2] {
		for _, h := range []string{"content-length", "content-type", "idempotency-key"} {
			if !slices.Contains(s.signedHeaders, h) {
				t.Errorf("admission: %s is not signed (%v)", h, s.signedHeaders)
			}
		}
		if want := `{"type":"demo.task","input":{"target":"invoice 42 / ü"}}`; string(s.body) != want {
			t.Errorf("admission body %s, want %s", s.body, want)
		}
	}
	if q, _ := url.ParseQuery(got[2].rawQuery); q.Get("cursor") != "a b+c/=" || q.Get("state") != "running" || q.Get("limit") != "5" {
		t.Errorf("list query %q", got[2].rawQuery)
	}
}

// TestSigV4VerifierCatchesTampering proves the verifier above can fail: the same signature
// checked against another body or another path does not verify.
func TestSigV4VerifierCatchesTampering(t *testing.T) {
	var checks []error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, ok := verifySigV4(r, r.URL.EscapedPath(), body)
		_, otherBody := verifySigV4(r, r.URL.EscapedPath(), append(body, ' '))
		_, otherPath := verifySigV4(r, strings.TrimPrefix(r.URL.EscapedPath(), "/prod"), body)
		checks = append(checks, ok, otherBody, otherPath)
		writeProblem(w, client.ErrorCodeInvalidInput, -1, "stop")
	}))
	defer srv.Close()
	_, _ = sigV4Client(t, srv, newClock()).Create(context.Background(), client.CreateRequest{Type: "demo.task", Key: "k"}, nil)
	if len(checks) != 3 || checks[0] != nil || checks[1] == nil || checks[2] == nil {
		t.Fatalf("verifier results %v: want the real request to verify and the tampered ones not", checks)
	}
}

// TestSigV4NeedsCredentialsAndRegion: a config without them sends nothing and says why.
func TestSigV4NeedsCredentialsAndRegion(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations/" + opID}, func(w http.ResponseWriter, r *http.Request) {})
	for _, cfg := range []aws.Config{
		{Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, "")},
		{Region: region},
	} {
		c, err := client.New(srv.URL, &client.ClientOptions{Auth: client.SigV4(cfg), Clock: newClock()})
		if err != nil {
			t.Fatal(err)
		}
		var te *client.TransportError
		if _, err := c.Get(context.Background(), opID); err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "SigV4") {
			t.Errorf("Get with %+v: %v", cfg, err)
		}
	}
	if s.count() != 0 {
		t.Errorf("%d requests sent unsigned", s.count())
	}
}

// TestBearerTokenAndUserAgent: every request carries the token and the product tokens.
func TestBearerTokenAndUserAgent(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations/" + opID, "/v1/operations/" + opID + "/cancel"},
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateCancelling, 3), 1) })
	c := newClient(t, srv, newClock(), func(o *client.ClientOptions) {
		o.Auth = client.BearerToken("bob-dev-token")
		o.UserAgent = "billing/2.1"
	})
	if _, err := c.Get(context.Background(), opID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(context.Background(), opID, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range s.requests() {
		if r.Header.Get("Authorization") != "Bearer bob-dev-token" || r.Header.Get("User-Agent") != "billing/2.1 longrun-go-client" {
			t.Errorf("%s %s: Authorization %q, User-Agent %q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("User-Agent"))
		}
	}
	if s.count() != 2 {
		t.Errorf("%d requests", s.count())
	}
}
