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
