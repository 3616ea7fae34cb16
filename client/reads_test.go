package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/longrun-dev/longrun/client"
	ct "github.com/longrun-dev/longrun/client/internal/contracttest"
)

// pages serves GET /v1/operations in pages of the given sizes, chained by cursors, and
// records each request's query.
func pages(t *testing.T, sizes ...int) (*script, *client.Client) {
	var steps []http.HandlerFunc
	id := 0
	for i, size := range sizes {
		var items []map[string]any
		for range size {
			id++
			m := rep(client.StateRunning, 2)
			m["operationId"] = fmt.Sprintf("op_01JDY3Q4W5E6R7T8Y9V0A1B2%02d", id)
			items = append(items, m)
		}
		var next any
		if i < len(sizes)-1 {
			next = fmt.Sprintf("cursor-%d", i+1)
		}
		steps = append(steps, func(w http.ResponseWriter, r *http.Request) {
			if want := fmt.Sprintf("cursor-%d", i); i > 0 && r.URL.Query().Get("cursor") != want {
				t.Errorf("page %d: cursor %q, want %q", i+1, r.URL.Query().Get("cursor"), want)
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "nextCursor": next})
		})
	}
	steps = append(steps, func(w http.ResponseWriter, r *http.Request) { t.Error("read past the last page") })
	s, srv := newScript(t, []string{"/v1/operations"}, steps...)
	return s, newClient(t, srv, newClock(), nil)
}

// TestListIteratesOverEveryPage: List yields every item of every page in order, sending the
// filters on every page and each page's cursor on the next; breaking off reads no further.
func TestListIteratesOverEveryPage(t *testing.T) {
	s, c := pages(t, 2, 2, 1)
	var ids []string
	for op, err := range c.List(context.Background(), &client.ListOptions{State: client.StateRunning, Type: "demo.task", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if op.State != client.StateRunning {
			t.Errorf("state %q", op.State)
		}
		ids = append(ids, op.OperationID[len(op.OperationID)-2:])
	}
	if want := []string{"01", "02", "03", "04", "05"}; !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	for i, r := range s.requests() {
		q := r.URL.Query()
		if q.Get("state") != "running" || q.Get("type") != "demo.task" || q.Get("limit") != "2" {
			t.Errorf("page %d: query %q", i+1, r.URL.RawQuery)
		}
	}
	if s.count() != 3 {
		t.Errorf("%d pages read, want 3", s.count())
	}

	s, c = pages(t, 2, 2, 1)
	for op, err := range c.List(context.Background(), nil) {
		if err != nil || op.OperationID == "" {
			t.Fatal(op, err)
		}
		break
	}
	if s.count() != 1 {
		t.Errorf("breaking after the first item read %d pages", s.count())
	}
	if q := s.requests()[0].URL.RawQuery; q != "" {
		t.Errorf("no options sent query %q", q)
	}
}

// TestPager: More and NextPage page by hand, starting at a given cursor, with ErrNoMorePages
// after the last; an error mid-way is yielded by List and ends it.
func TestPager(t *testing.T) {
	s, c := pages(t, 1, 1)
	p := c.NewListPager(&client.ListOptions{Cursor: "cursor-0"})
	if s.count() != 0 {
		t.Fatal("NewListPager did I/O")
	}
	var sizes []int
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page.Items))
	}
	if !slices.Equal(sizes, []int{1, 1}) || s.requests()[0].URL.Query().Get("cursor") != "cursor-0" {
		t.Errorf("pages %v, first query %q", sizes, s.requests()[0].URL.RawQuery)
	}
	if _, err := p.NextPage(context.Background()); !errors.Is(err, client.ErrNoMorePages) {
		t.Errorf("after the last page: %v", err)
	}

	_, srv := newScript(t, []string{"/v1/operations"},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"items":[` + mustJSON(rep(client.StateAccepted, 1)) + `],"nextCursor":"c1"}`))
		},
		func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, client.ErrorCodeInvalidInput, -1, "bad cursor")
		},
	)
	var got []error
	for _, err := range newClient(t, srv, newClock(), nil).List(context.Background(), nil) {
		got = append(got, err)
	}
	if len(got) != 2 || got[0] != nil || !client.IsCode(got[1], client.ErrorCodeInvalidInput) {
		t.Errorf("yielded %v", got)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestCancel: If-Match carries the version seen; without IfVersion there is none. A cancel
// whose answer was lost is retried without If-Match, and not with it (the retry of a
// recorded cancel would be refused as a version mismatch).
func TestCancel(t *testing.T) {
	path := "/v1/operations/" + opID + "/cancel"
	s, srv := newScript(t, []string{path}, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		writeRepStatus(w, http.StatusAccepted, rep(client.StateCancelling, 6), 1)
	})
	c := newClient(t, srv, newClock(), nil)
	version := 5
	op, err := c.Cancel(context.Background(), opID, &client.CancelOptions{IfVersion: &version})
	if err != nil || op.State != client.StateCancelling || !op.CancelRequested || op.Version != 6 {
		t.Fatalf("%+v, %v", op, err)
	}
	if _, err := c.Cancel(context.Background(), opID, nil); err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	if reqs[0].Header.Get("If-Match") != `"5"` || reqs[1].Header.Values("If-Match") != nil {
		t.Errorf("If-Match %q then %q", reqs[0].Header.Get("If-Match"), reqs[1].Header.Values("If-Match"))
	}

	for _, tc := range []struct {
		name     string
		opts     *client.CancelOptions
		requests int
	}{{"without If-Match", nil, 2}, {"with If-Match", &client.CancelOptions{IfVersion: &version}, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := newScript(t, []string{path},
				func(w http.ResponseWriter, r *http.Request) { dropConnection(t, w) },
				func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateCancelling, 6), 1) })
			_, err := newClient(t, srv, newClock(), nil).Cancel(context.Background(), opID, tc.opts)
			var te *client.TransportError
			if tc.requests == 1 && !errors.As(err, &te) || tc.requests == 2 && err != nil || s.count() != tc.requests {
				t.Errorf("got %v after %d requests, want %d", err, s.count(), tc.requests)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		_, srv := newScript(t, []string{path}, func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, client.ErrorCodeVersionMismatch, -1, "moved on")
		})
		if _, err := newClient(t, srv, newClock(), nil).Cancel(context.Background(), opID, &client.CancelOptions{IfVersion: &version}); !client.IsCode(err, client.ErrorCodeVersionMismatch) {
			t.Errorf("got %v", err)
		}
	})
}

// TestGetRetriesTransientFailures: a read survives a reset and a 503 (after its
// Retry-After); a 404 is returned at once.
func TestGetRetriesTransientFailures(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations/" + opID},
		func(w http.ResponseWriter, r *http.Request) { resetConnection(t, w) },
		func(w http.ResponseWriter, r *http.Request) { writeProblem(w, client.ErrorCodeUnavailable, 2, "busy") },
		func(w http.ResponseWriter, r *http.Request) { writeRep(w, rep(client.StateRunning, 2), 1) },
		func(w http.ResponseWriter, r *http.Request) { writeProblem(w, client.ErrorCodeNotFound, -1, "gone") },
	)
	clock := newClock()
	c := newClient(t, srv, clock, nil)
	op, err := c.Get(context.Background(), opID)
	if err != nil || op.Version != 2 || s.count() != 3 {
		t.Fatalf("%+v, %v after %d requests", op, err, s.count())
	}
	if w := clock.Waits(); len(w) != 2 || w[1].Seconds() != 2 {
		t.Errorf("waits %v", w)
	}
	if _, err := c.Get(context.Background(), opID); !client.IsCode(err, client.ErrorCodeNotFound) || s.count() != 4 {
		t.Errorf("got %v after %d requests", err, s.count())
	}
}

// TestTypes: the contract's type list and type examples come out of Types and Type.
func TestTypes(t *testing.T) {
	doc := ct.Contract(t)
	list := doc.Components.Responses["OperationTypeList"].Value.Content["application/json"].Examples["builtin"].Value.Value
	one := doc.Components.Responses["OperationType"].Value.Content["application/json"].Examples["exportOrders"].Value.Value
	_, srv := newScript(t, []string{"/v1/operation-types", "/v1/operation-types/export.orders"}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/operation-types" {
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		_ = json.NewEncoder(w).Encode(one)
	})
	c := newClient(t, srv, newClock(), nil)
	types, err := c.Types(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ty := range types {
		names = append(names, ty.Name)
		if ty.Version < 1 || ty.DeadlineSeconds < 1 || ty.InputSchema["type"] != "object" {
			t.Errorf("type %+v", ty)
		}
	}
	if !slices.Equal(names, []string{"demo.task", "export.orders"}) {
		t.Errorf("names %v", names)
	}
	ty, err := c.Type(context.Background(), "export.orders")
	if err != nil || ty.Name != "export.orders" || ty.Description == "" {
		t.Errorf("%+v, %v", ty, err)
	}
}

// TestResolve: the operator's resolution is sent as the ResolveRequest and answered with the
// representation; a lost answer is not retried (a second resolve would be refused).
func TestResolve(t *testing.T) {
	path := "/v1/operations/" + opID + "/resolve"
	var body map[string]any
	s, srv := newScript(t, []string{path},
		func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewDecoder(r.Body).Decode(&body)
			writeRep(w, rep(client.StateSucceeded, 5), -1)
		},
		func(w http.ResponseWriter, r *http.Request) { dropConnection(t, w) },
		func(w http.ResponseWriter, r *http.Request) { t.Error("a lost resolve was retried") },
	)
	c := newClient(t, srv, newClock(), nil)
	result := map[string]any{"rowCount": 1234}
	op, err := c.Resolve(context.Background(), opID, client.ResolveRequest{Outcome: client.ResolveSucceeded, Reason: "Confirmed.", Result: result})
	if err != nil || op.State != client.StateSucceeded {
		t.Fatalf("%+v, %v", op, err)
	}
	if body["outcome"] != "succeeded" || body["reason"] != "Confirmed." || body["result"].(map[string]any)["rowCount"] != float64(1234) {
		t.Errorf("sent %v", body)
	}
	var te *client.TransportError
	if _, err := c.Resolve(context.Background(), opID, client.ResolveRequest{Outcome: client.ResolveFailed, Reason: "x"}); !errors.As(err, &te) || s.count() != 2 {
		t.Errorf("got %v after %d requests", err, s.count())
	}
}

// TestRaw: the generated client shares the Client's transport and authentication.
func TestRaw(t *testing.T) {
	s, srv := newScript(t, []string{"/v1/operations/" + opID}, func(w http.ResponseWriter, r *http.Request) {
		writeRep(w, rep(client.StateRunning, 2), 1)
	})
	resp, err := newClient(t, srv, newClock(), nil).Raw().GetOperationWithResponse(context.Background(), opID)
	if err != nil || resp.JSON200 == nil || resp.JSON200.Version != 2 || resp.Headers200.RetryAfter == nil || *resp.Headers200.RetryAfter != 1 {
		t.Fatalf("%+v, %v", resp, err)
	}
	if got := s.requests()[0].Header.Get("Authorization"); got != "Bearer alice-dev-token" {
		t.Errorf("Authorization %q", got)
	}
}

// TestNew refuses base URLs it could not resolve status URLs against, and keeps a base
// path.
func TestNew(t *testing.T) {
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://h/", "http:///x", "http://h/?q=1", "http://u:p@h/"} {
		if _, err := client.New(bad, nil); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	s, srv := newScript(t, []string{"/stage/v1/operations/" + opID}, func(w http.ResponseWriter, r *http.Request) {
		writeRep(w, rep(client.StateRunning, 2), 1)
	})
	c, err := client.New(srv.URL+"/stage", &client.ClientOptions{Clock: newClock()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), opID); err != nil || s.count() != 1 {
		t.Errorf("%v after %d requests", err, s.count())
	}
}
