package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A request that could not be sent (no listener, a name that does not resolve) is
// ErrNotSent; one that was written and got no answer, or got an error status, is not.
func TestClientTellsNeverSentFromMayHaveBeenSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	lossy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer lossy.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer broken.Close()

	for _, tc := range []struct {
		name    string
		url     string
		notSent bool
	}{
		{"connection refused", refused, true},
		{"a name that does not resolve", "http://provisioner.invalid", true},
		{"connection closed after the request", lossy.URL, false},
		{"an error status", broken.URL, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// (No proxy from the environment: the name must be looked up here.)
			c := Client{URL: tc.url, HTTP: &http.Client{Transport: &http.Transport{}}}
			_, err := c.Create(ctx, "k", Request{Project: "p", Environment: "e", Template: "t"})
			if err == nil || errors.Is(err, ErrNotSent) != tc.notSent {
				t.Fatalf("error %v: ErrNotSent %v, want %v", err, errors.Is(err, ErrNotSent), tc.notSent)
			}
		})
	}
}

// An environment asked for with a callback URL is made in the fake's time and POSTed to the
// URL, as JSON and with no credentials, ready (or failed, for a broken template, with a
// reason); a 5xx is tried again. The URL is never shown, neither in the callback nor in a
// read of the environment, and the environment is not ready to a poll before it is made.
func TestACallbackURLGetsTheEnvironmentWhenItIsMade(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, string(b))
		if len(got) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable) // tried again
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer hook.Close()
	fake := &Fake{ReadyAfter: 1, CallbackAfter: 100 * time.Millisecond, Broken: []string{"broken"}}
	srv := httptest.NewServer(Handler(fake))
	defer srv.Close()
	c := Client{URL: srv.URL}
	ctx := context.Background()

	env, err := c.Create(ctx, "k1", Request{Project: "p", Environment: "e", Template: "small", CallbackURL: hook.URL + "/v1/callbacks/cb-1"})
	if err != nil || env.Status != "creating" || env.CallbackURL != "" {
		t.Fatalf("%+v %v", env, err)
	}
	if now, _ := c.Get(ctx, env.ID); now.Status != "creating" {
		t.Fatalf("ready to a poll before it was made: %+v", now)
	}
	for len(fake.Deliveries()) < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	r, body := got[1], bodies[1]
	mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/callbacks/cb-1" || r.Header.Get("Authorization") != "" ||
		r.Header.Get("Content-Type") != "application/json" || strings.Contains(body, "callback") {
		t.Fatalf("%s %s %v %s", r.Method, r.URL, r.Header, body)
	}
	var sent Environment
	if err := json.Unmarshal([]byte(body), &sent); err != nil || sent.ID != env.ID || sent.Status != "ready" {
		t.Fatalf("%s %v", body, err)
	}
	if d := fake.Deliveries(); d[0].Status != 503 || d[1].Status != 202 {
		t.Fatalf("%+v", d)
	}

	broken, err := c.Create(ctx, "k2", Request{Project: "p", Environment: "e2", Template: "broken", CallbackURL: hook.URL + "/v1/callbacks/cb-2"})
	if err != nil {
		t.Fatal(err)
	}
	for len(fake.Deliveries()) < 3 {
		time.Sleep(20 * time.Millisecond)
	}
	if now, _ := c.Get(ctx, broken.ID); now.Status != "failed" || now.Reason == "" {
		t.Fatalf("%+v", now)
	}
}
