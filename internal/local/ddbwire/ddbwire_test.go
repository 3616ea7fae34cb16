package ddbwire_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/local/ddbwire"
)

func TestOperation(t *testing.T) {
	for target, want := range map[string]string{
		"DynamoDB_20120810.PutItem":           "PutItem",
		"DynamoDBStreams_20120810.GetRecords": "",
		"":                                    "",
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("X-Amz-Target", target)
		if got, ok := ddbwire.Operation(r); got != want || ok != (want != "") {
			t.Errorf("%q: %q %v", target, got, ok)
		}
	}
}

func TestForwardKeepsTheRequest(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/x?y=1", strings.NewReader("ignored"))
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/…")
	r.Header.Set("Content-Length", "7")
	up, _ := url.Parse("http://127.0.0.1:8000")
	f, err := ddbwire.Forward(r, up, []byte(`{"TableName":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f.Body)
	if f.URL.String() != "http://127.0.0.1:8000/x?y=1" || string(b) != `{"TableName":"t"}` ||
		f.Header.Get("Authorization") != r.Header.Get("Authorization") || f.Header.Get("Content-Length") != "" {
		t.Fatalf("%s %s %v", f.URL, b, f.Header)
	}
}

// The proxy's own call is made in its caller's database (its credentials), never with the
// caller's target or body.
func TestCallAsksAsTheCaller(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"Item":{}}`))
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=tenant/…")
	r.Header.Set("X-Amz-Date", "20261201T000000Z")
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	up, _ := url.Parse("http://127.0.0.1:8000")
	c, err := ddbwire.Call(r.Context(), r, up, "DescribeTable", map[string]string{"TableName": "t"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c.Body)
	if string(b) != `{"TableName":"t"}` || c.Header.Get("X-Amz-Target") != "DynamoDB_20120810.DescribeTable" ||
		c.Header.Get("Authorization") != r.Header.Get("Authorization") || c.Header.Get("X-Amz-Date") != "20261201T000000Z" ||
		c.Header.Get("X-Amz-Security-Token") != "" || c.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
		t.Fatalf("%s %v", b, c.Header)
	}
}

// shortBody serves a 200 whose body stops before its Content-Length, as DynamoDB Local has
// been seen to do under load.
func shortBody(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"Item":{"pk":{"S":"op_`))
		if hj, ok := w.(http.Hijacker); ok {
			conn, _, _ := hj.Hijack()
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An answer that ends short reaches the caller as DynamoDB's retryable 500, never as a 200
// the SDK cannot read; a whole answer is passed on as it came.
func TestCopyAnswer(t *testing.T) {
	resp, err := http.Get(shortBody(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rec := httptest.NewRecorder()
	if err := ddbwire.CopyAnswer(rec, resp); err == nil {
		t.Fatal("a short answer was copied without an error")
	}
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("X-Amzn-Errortype") != "InternalServerError" ||
		!strings.Contains(rec.Body.String(), "#InternalServerError") {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}

	whole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Amzn-Requestid", "r1")
		_, _ = w.Write([]byte(`{"Item":{}}`))
	}))
	defer whole.Close()
	resp, err = http.Get(whole.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rec = httptest.NewRecorder()
	if err := ddbwire.CopyAnswer(rec, resp); err != nil || rec.Code != 200 || rec.Body.String() != `{"Item":{}}` || rec.Header().Get("X-Amzn-Requestid") != "r1" {
		t.Fatalf("%v %d %s", err, rec.Code, rec.Body)
	}
}
