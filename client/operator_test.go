package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/client"
	ct "github.com/longrun-dev/longrun/client/internal/contracttest"
)

// serveJSON answers every request with v as JSON, and the ETag given.
func serveJSON(v any, etag string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_example")
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		_ = json.NewEncoder(w).Encode(v)
	}
}

// The contract's history examples come out of History typed: every entry's kind, source and
// state is one the client knows, times are read, and the ETag is the version's.
func TestSpecHistoriesDecode(t *testing.T) {
	doc := ct.Contract(t)
	examples := examplesOf(doc, "History")
	if len(examples) < 2 {
		t.Fatalf("%d history examples", len(examples))
	}
	for name, value := range examples {
		t.Run(name, func(t *testing.T) {
			want := value.(map[string]any)
			id := want["operationId"].(string)
			etag := `"` + json.Number(toJSONNumber(want["version"])).String() + `"`
			_, srv := newScript(t, []string{"/v1/operations/" + id + "/history"}, serveJSON(want, etag))
			h, err := newClient(t, srv, newClock(), nil).History(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			entries := want["entries"].([]any)
			if h.OperationID != id || float64(h.Version) != toFloat(want["version"]) || len(h.Entries) != len(entries) || h.ETag != etag || h.RequestID != "req_example" {
				t.Fatalf("%+v", h)
			}
			for i, e := range h.Entries {
				w := entries[i].(map[string]any)
				if !e.Kind.Valid() || !e.By.Valid() || !e.State.Valid() || e.At.IsZero() || string(e.Kind) != w["kind"] || e.Version != i+1 {
					t.Errorf("entry %d: %+v, want %v", i+1, e, w)
				}
				if _, ok := w["retry"]; ok != (e.Retry != nil) {
					t.Errorf("entry %d: retry %+v, want %v", i+1, e.Retry, w["retry"])
				}
				if s, ok := w["signal"].(map[string]any); ok && (e.Signal == nil || e.Signal.Name != s["name"] || len(e.Signal.Data) == 0) {
					t.Errorf("entry %d: signal %+v, want %v", i+1, e.Signal, s)
				}
			}
		})
	}
}

func toJSONNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The contract's attention and stats examples come out of Attention and Stats typed; a
// null oldestInFlight is nil.
func TestSpecAttentionAndStatsDecode(t *testing.T) {
	doc := ct.Contract(t)
	for name, value := range examplesOf(doc, "AttentionPage") {
		t.Run(name, func(t *testing.T) {
			want := value.(map[string]any)
			_, srv := newScript(t, []string{"/v1/attention"}, serveJSON(want, ""))
			page, err := newClient(t, srv, newClock(), nil).Attention(context.Background(), &client.AttentionOptions{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			items := want["items"].([]any)
			if len(page.Items) != len(items) || page.NextCursor != "" {
				t.Fatalf("%+v", page)
			}
			for i, it := range page.Items {
				w := items[i].(map[string]any)
				checkDecoded(t, &it.Operation, w["operation"].(map[string]any))
				if it.Tenant != w["tenant"] {
					t.Errorf("tenant %q, want %v", it.Tenant, w["tenant"])
				}
			}
		})
	}
	stats := examplesOf(doc, "Stats")
	if len(stats) < 2 {
		t.Fatalf("%d stats examples", len(stats))
	}
	for name, value := range stats {
		t.Run(name, func(t *testing.T) {
			want := value.(map[string]any)
			_, srv := newScript(t, []string{"/v1/stats"}, serveJSON(want, ""))
			st, err := newClient(t, srv, newClock(), nil).Stats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			in := want["inFlight"].(map[string]any)
			if float64(st.InFlight.Running) != toFloat(in["running"]) || float64(st.InFlight.Accepted) != toFloat(in["accepted"]) ||
				float64(st.OutcomeUnknown) != toFloat(want["outcomeUnknown"]) || st.AsOf.IsZero() || st.Partial != want["partial"] {
				t.Fatalf("%+v, want %v", st, want)
			}
			if o, ok := want["oldestInFlight"].(map[string]any); ok {
				if st.OldestInFlight == nil || st.OldestInFlight.Tenant != o["tenant"] {
					t.Fatalf("oldest %+v, want %v", st.OldestInFlight, o)
				}
				checkDecoded(t, &st.OldestInFlight.Operation, o["operation"].(map[string]any))
			} else if st.OldestInFlight != nil {
				t.Fatalf("oldest %+v, want none", st.OldestInFlight)
			}
		})
	}
}

// Resolve sends IfVersion as If-Match, outside the body; a retry's refusals are typed codes.
func TestResolveRetrySendsIfMatch(t *testing.T) {
	path := "/v1/operations/" + opID + "/resolve"
	var got []*http.Request
	var bodies []map[string]any
	record := func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		got, bodies = append(got, r), append(bodies, b)
	}
	s, srv := newScript(t, []string{path},
		func(w http.ResponseWriter, r *http.Request) {
			record(w, r)
			writeRep(w, rep(client.StateRunning, 5), 1)
		},
		func(w http.ResponseWriter, r *http.Request) {
			record(w, r)
			writeProblem(w, client.ErrorCodeNotRetryable, 0, "The step was not recorded.")
		},
	)
	c := newClient(t, srv, newClock(), nil)
	v := 4
	if _, err := c.Resolve(context.Background(), opID, client.ResolveRequest{Outcome: client.ResolveRetry, Reason: "Safe.", IfVersion: &v}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Resolve(context.Background(), opID, client.ResolveRequest{Outcome: client.ResolveFailed, Reason: "x"})
	if !client.IsCode(err, client.ErrorCodeNotRetryable) || s.count() != 2 {
		t.Fatalf("%v after %d", err, s.count())
	}
	if got[0].Header.Get("If-Match") != `"4"` || bodies[0]["outcome"] != "retry" || len(bodies[0]) != 2 || got[1].Header.Get("If-Match") != "" {
		t.Fatalf("sent %v %v, then %v", got[0].Header, bodies[0], got[1].Header)
	}
}

// ListOptions' target and window go out as the contract's parameters, the times in UTC.
func TestListSendsTargetAndWindow(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations"}, serveJSON(map[string]any{"items": []any{}, "nextCursor": nil}, ""))
	c := newClient(t, srv, newClock(), nil)
	paris := time.FixedZone("CET", 3600)
	for _, err := range c.List(context.Background(), &client.ListOptions{Target: "demo:build-",
		CreatedAfter: time.Date(2026, 11, 30, 11, 0, 0, 0, paris), CreatedBefore: time.Date(2026, 11, 30, 12, 30, 0, 500_000_000, time.UTC)}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	q := s.requests()[0].URL.Query()
	if q.Get("target") != "demo:build-" || q.Get("createdAfter") != "2026-11-30T10:00:00Z" || q.Get("createdBefore") != "2026-11-30T12:30:00.5Z" {
		t.Fatalf("query %v", q)
	}
}
