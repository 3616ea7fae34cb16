package provisioner

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
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
