package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/client"
)

// payloadOf is a token's payload as JSON members.
func payloadOf(t *testing.T, token string) map[string]any {
	t.Helper()
	body, _, ok := strings.Cut(strings.TrimPrefix(token, "lrpoll1."), ".")
	if !ok || !strings.HasPrefix(token, "lrpoll1.") {
		t.Fatalf("token %q is not lrpoll1.<payload>.<checksum>", token)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// mint writes a token of payload with a checksum that matches, as a forger who knows the
// format would.
func mint(t *testing.T, payload map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return "lrpoll1." + base64.RawURLEncoding.EncodeToString(raw) + "." + base64.RawURLEncoding.EncodeToString(sum[:8])
}

// TestResumeTokenRoundTrip: a token taken mid-way carries the status URL the poller would
// read next and the version and state it has seen, and nothing else; a poller made from it by another
// client of the same API reads that URL (never the one the first poller started at), keeps
// a lagging read from taking it back, and follows the operation to its end.
func TestResumeTokenRoundTrip(t *testing.T) {
	s, srv := newScript(t, []string{locationPath, movedPath},
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, at(movedPath, client.StateRunning, 2), 1) },
		// after the resume: a lagging read, then the next version, then the end
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, at(movedPath, client.StateDispatched, 1), 1) },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, at(movedPath, client.StateRunning, 3), 1) },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, at(movedPath, client.StateSucceeded, 4), -1) },
	)
	ctx := context.Background()
	first := newClient(t, srv, newClock(), nil)
	p, err := first.NewPoller(accepted(locationPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	token, err := p.ResumeToken()
	if err != nil {
		t.Fatal(err)
	}
	payload := payloadOf(t, token)
	if keys := slices.Sorted(maps.Keys(payload)); !slices.Equal(keys, []string{"base", "operationId", "state", "url", "version"}) {
		t.Errorf("the token carries %v, want base, operationId, state, url and version only", keys)
	}
	if payload["url"] != movedPath || payload["version"] != float64(2) || payload["operationId"] != opID || payload["state"] != "running" || payload["base"] != srv.URL+"/" {
		t.Errorf("payload %v", payload)
	}
	if strings.Contains(token, "alice") || strings.Contains(strings.ToLower(mustJSON(payload)), "bearer") {
		t.Errorf("the token carries a credential: %v", payload)
	}

	clock := newClock()
	later := newClient(t, srv, clock, nil)
	resumed, err := later.NewPollerFromResumeToken(token)
	if err != nil {
		t.Fatal(err)
	}
	if op := resumed.Operation(); op.OperationID != opID || op.Version != 2 || op.StatusURL != movedPath || op.State != client.StateRunning || resumed.Done() {
		t.Fatalf("resumed poller starts at %+v", op)
	}
	if op, err := resumed.Poll(ctx); err != nil || op.Version != 2 || op.State != client.StateRunning {
		t.Fatalf("after a lagging read: %+v, %v; want version 2 running kept", op, err)
	}
	op, err := resumed.PollUntilDone(ctx, &client.PollOptions{MinDelay: time.Second})
	if err != nil || op.State != client.StateSucceeded || op.Version != 4 || !resumed.Done() {
		t.Fatalf("ended with %+v, %v", op, err)
	}
	reqs := s.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, r := range reqs[1:] {
		if r.URL.Path != movedPath || r.Header.Get("Authorization") != "Bearer alice-dev-token" {
			t.Errorf("the resumed poller sent %s %s with %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
	}
	if _, err := resumed.ResumeToken(); err == nil {
		t.Error("a done poller wrote a resume token")
	}
}

// TestResumeTokenRefusals: a token that is garbage, cut short, changed, of another format
// version, of a client of another base URL, or naming a URL off the API's origin is refused
// as ErrInvalidResumeToken, saying why, and nothing is sent.
func TestResumeTokenRefusals(t *testing.T) {
	s, srv := newScript(t, []string{movedPath}, func(w http.ResponseWriter, r *http.Request) {
		writeRep(w, at(movedPath, client.StateRunning, 2), 1)
	})
	c := newClient(t, srv, newClock(), nil)
	p, err := c.NewPoller(&client.Operation{OperationID: opID, StatusURL: movedPath})
	if err != nil {
		t.Fatal(err)
	}
	good, err := p.ResumeToken()
	if err != nil {
		t.Fatal(err)
	}
	body, check, _ := strings.Cut(strings.TrimPrefix(good, "lrpoll1."), ".")
	changed := map[string]any{"base": srv.URL + "/", "operationId": opID, "url": "/v1/operations/op_other", "version": 2}
	changedRaw := mustJSON(changed)
	valid := func(edit func(m map[string]any)) string {
		m := map[string]any{"base": srv.URL + "/", "operationId": opID, "url": movedPath, "version": 0}
		edit(m)
		return mint(t, m)
	}
	other, err := client.New(srv.URL+"/prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		name, token, says string
		by                *client.Client
	}{
		{"empty", "", "not a resume token", c},
		{"garbage", "not a token at all", "not a resume token", c},
		{"another format version", "lrpoll2." + body + "." + check, "another format version", c},
		{"cut short", good[:len(good)-len(check)-1], "cut short", c},
		{"payload not base64", "lrpoll1.!!!." + check, "payload is damaged", c},
		{"a character changed", "lrpoll1." + flip(body) + "." + check, "checksum does not match", c},
		{"payload replaced, checksum kept", "lrpoll1." + base64.RawURLEncoding.EncodeToString([]byte(changedRaw)) + "." + check, "checksum does not match", c},
		{"an unknown member", valid(func(m map[string]any) { m["authorization"] = "Bearer x" }), "not a poller's state", c},
		{"a done state", valid(func(m map[string]any) { m["state"] = "succeeded" }), "not one a poller goes on from", c},
		{"no operation", valid(func(m map[string]any) { delete(m, "operationId") }), "names no operation", c},
		{"an absolute URL elsewhere", valid(func(m map[string]any) { m["url"] = "https://evil.example/v1/operations/" + opID }), "names no operation or status path", c},
		{"a network-path URL elsewhere", valid(func(m map[string]any) { m["url"] = "//evil.example/v1/operations/" + opID }), "not on the API's origin", c},
		{"another base URL", good, "minted for the API at " + srv.URL + "/", other},
	} {
		t.Run(c2.name, func(t *testing.T) {
			_, err := c2.by.NewPollerFromResumeToken(c2.token)
			if !errors.Is(err, client.ErrInvalidResumeToken) {
				t.Fatalf("got %v, want ErrInvalidResumeToken", err)
			}
			if !strings.Contains(err.Error(), c2.says) {
				t.Errorf("error %q does not say %q", err, c2.says)
			}
		})
	}
	if _, err := c.NewPollerFromResumeToken(good); err != nil {
		t.Errorf("the good token was refused: %v", err)
	}
	if n := s.count(); n != 0 {
		t.Errorf("%d requests sent while refusing tokens", n)
	}
}

// flip changes one character in the middle of s to another of the same alphabet.
func flip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
