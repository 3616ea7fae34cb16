package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/longrun-dev/longrun/internal/core/jcs"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

func validKey(k string) bool {
	if len(k) < 1 || len(k) > 128 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

func FuzzValidateKey(f *testing.F) {
	for _, k := range []string{"", " ", "~", "a\tb", "clé", "8e03978e-40d5-43e8-bc93-6894a57f9324", strings.Repeat("k", 128), strings.Repeat("k", 129), "a\x7f", "\x00"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		err := ValidateKey(k)
		if (err == nil) != validKey(k) {
			t.Fatalf("ValidateKey(%q) = %v", k, err)
		}
		if err != nil && problem.CodeOf(err) != problem.InvalidIdempotencyKey {
			t.Fatalf("code %s", problem.CodeOf(err))
		}
	})
}

func fingerprint(t *testing.T, mediaType string, typ optype.Type, target, body string) string {
	t.Helper()
	parsed, err := jcs.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	fp, err := Fingerprint(mediaType, typ, target, parsed)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// Each component of the canonical request must move the fingerprint; formatting must not.
func TestFingerprintComponents(t *testing.T) {
	demo, _ := optype.Builtin().Lookup("demo.task")
	body := `{"type":"demo.task","input":{"target":"a","steps":2}}`
	base := fingerprint(t, "application/json", demo, "demo:a", body)
	if len(base) != 64 {
		t.Fatalf("not a SHA-256 hex digest: %s", base)
	}
	same := []string{
		`{"input":{"steps":2,"target":"a"},"type":"demo.task"}`,
		` { "type" : "demo.task" , "input" : { "target" : "\u0061" , "steps" : 2.0 } } `,
		`{"type":"demo.task","input":{"target":"a","steps":20e-1}}`,
	}
	for _, b := range same {
		if got := fingerprint(t, "application/json", demo, "demo:a", b); got != base {
			t.Errorf("%s changed the fingerprint", b)
		}
	}
	bumped := demo
	bumped.Version = 2
	differ := map[string]string{
		"body":         fingerprint(t, "application/json", demo, "demo:a", `{"type":"demo.task","input":{"target":"a","steps":3}}`),
		"media type":   fingerprint(t, "application/merge-patch+json", demo, "demo:a", body),
		"type version": fingerprint(t, "application/json", bumped, "demo:a", body),
		"target":       fingerprint(t, "application/json", demo, "demo:b", body),
	}
	for name, fp := range differ {
		if fp == base {
			t.Errorf("%s does not change the fingerprint", name)
		}
	}
}

// fakeStore answers like the DynamoDB store would, without a table: enough to test the
// service's decisions, never the storage semantics (those run against DynamoDB Local).
type fakeStore struct {
	existing *Record
	got      []Intent
}

func (s *fakeStore) Admit(_ context.Context, in Intent) (*Record, error) {
	s.got = append(s.got, in)
	if s.existing != nil && s.existing.OperationID == "own" {
		r := in.Record
		return &r, nil
	}
	return s.existing, nil
}

func service(store Store) *Service {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	return &Service{Store: store, Registry: optype.Builtin(), Now: func() time.Time { return now },
		NewID: func() string { return "op_01ARYZ6S410000000000000000" }, Window: time.Hour, Quota: 5}
}

func TestOwnCommitSeenAgainIsNotAReplay(t *testing.T) {
	// An SDK retry of a transaction that had committed finds the record it wrote itself.
	store := &fakeStore{existing: &Record{OperationID: "own"}}
	out, err := service(store).Admit(context.Background(), Request{Scope: Scope{"acme", "alice"}, Key: "k",
		MediaType: "application/json", Body: []byte(`{"type":"demo.task","input":{"target":"a"}}`)})
	if err != nil || out.Replayed {
		t.Fatalf("out %+v err %v", out, err)
	}
}

func TestIntentCarriesWindowQuotaAndScope(t *testing.T) {
	store := &fakeStore{}
	s := service(store)
	_, err := s.Admit(context.Background(), Request{Scope: Scope{"acme", "alice"}, Key: "k", MediaType: "application/json",
		Body: []byte(`{"type":"demo.task","input":{"target":"a"}}`), BasePath: "/prod"})
	if err != nil {
		t.Fatal(err)
	}
	in := store.got[0]
	if !in.Record.ExpiresAt.Equal(s.Now().Add(time.Hour)) || in.QuotaLimit != 5 || !in.First.Admission.QuotaReserved {
		t.Fatalf("intent %+v", in)
	}
	if in.First.Admission.Tenant != "acme" || in.First.Admission.Principal != "alice" || in.Record.Location != "/prod/v1/operations/op_01ARYZ6S410000000000000000" {
		t.Fatalf("intent %+v", in.First.Admission)
	}
	if string(in.First.Admission.Input) != `{"target":"a"}` {
		t.Fatalf("stored input %s", in.First.Admission.Input)
	}
}

// A key reused with another request is refused naming the operation the stored record (the
// caller's own: records are keyed by scope) holds.
func TestKeyReusedNamesTheKeysOperation(t *testing.T) {
	store := &fakeStore{existing: &Record{Fingerprint: "another request", OperationID: "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3"}}
	_, err := service(store).Admit(context.Background(), Request{Scope: Scope{"acme", "alice"}, Key: "k",
		MediaType: "application/json", Body: []byte(`{"type":"demo.task","input":{"target":"a"}}`)})
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.IdempotencyKeyReused || pe.OperationID != "op_01JDY3Q4W5E6R7T8Y9V0A1B2C3" {
		t.Fatalf("err %v (%+v)", err, pe)
	}
}

func TestCheckMediaType(t *testing.T) {
	for _, tc := range []struct {
		mediaType string
		params    map[string]string
		want      problem.Code // "" = accepted
	}{
		{"application/json", nil, ""},
		{"application/json", map[string]string{"charset": "utf-8"}, ""},
		{"application/json", map[string]string{"charset": "UTF-8"}, ""},
		{"application/json", map[string]string{"charset": "Utf-8", "foo": "bar"}, ""},
		{"application/json", map[string]string{"foo": "bar"}, ""},
		{"", nil, problem.InvalidInput}, // missing or unparseable: part of the fingerprint
		{"text/plain", nil, problem.UnsupportedMediaType},
		{"application/merge-patch+json", nil, problem.UnsupportedMediaType},
		{"application/json", map[string]string{"charset": "utf-16"}, problem.UnsupportedMediaType},
		{"application/json", map[string]string{"charset": "utf8"}, problem.UnsupportedMediaType},
		{"application/json", map[string]string{"charset": ""}, problem.UnsupportedMediaType},
		{"application/json", map[string]string{"charset": "iso-8859-1"}, problem.UnsupportedMediaType},
	} {
		if got := problem.CodeOf(CheckMediaType(tc.mediaType, tc.params)); got != tc.want {
			t.Errorf("%q %v: %q, want %q", tc.mediaType, tc.params, got, tc.want)
		}
	}
}

// A long charset is echoed cut to 64 characters, never through one: the problem's detail
// stays valid UTF-8 however the client's text falls.
func TestCheckMediaTypeEchoesValidUTF8(t *testing.T) {
	cs := "x" + strings.Repeat("é", 100) // a byte cut at 64 would split an é
	err := CheckMediaType("application/json", map[string]string{"charset": cs})
	var pe *problem.Error
	if !errors.As(err, &pe) || !utf8.ValidString(pe.Detail) || !strings.Contains(pe.Detail, "x"+strings.Repeat("é", 62)+"…") {
		t.Fatalf("%v", err)
	}
}

// Integers a double cannot hold exactly are refused by pointer, before the fingerprint could
// round two different requests into one (issue #12, low findings).
func TestInexactIntegersAreRefused(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []string // pointers; none: accepted by this check
	}{
		{`{"type":"demo.task","input":{"target":"a","steps":9007199254740993}}`, []string{"/input/steps"}},
		{`{"type":"demo.task","input":{"target":"a","x":[1,{"y/z":-9007199254740993}]}}`, []string{"/input/x/1/y~1z"}},
		{`{"type":"demo.task","input":{"target":"a","steps":9007199254740991}}`, nil},
		{`{"type":"demo.task","input":{"target":"a","steps":-9007199254740991}}`, nil},
		{`{"type":"demo.task","input":{"target":"a","ratio":1e30,"f":333333333.33333329}}`, nil},
	} {
		_, err := parseBody("application/json", nil, []byte(tc.body))
		var got []string
		if pe := problem.As(err); err != nil && pe.Code == problem.InvalidInput {
			for _, f := range pe.Fields {
				got = append(got, f.Pointer)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: refused %v, want %v", tc.body, got, tc.want)
		}
	}
}

// The correlation id and the traceparent are recorded in the accepted fact and are not the
// request: a retry carrying others has the same fingerprint, so it replays.
func TestTraceFieldsAreRecordedButNotFingerprinted(t *testing.T) {
	store := &fakeStore{}
	body := []byte(`{"type":"demo.task","input":{"target":"a"}}`)
	for _, tp := range []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
		if _, err := service(store).Admit(context.Background(), Request{Scope: Scope{"acme", "alice"}, Key: "k",
			MediaType: "application/json", Body: body, CorrelationID: tp[3:35], Traceparent: tp}); err != nil {
			t.Fatal(err)
		}
	}
	first, second := store.got[0], store.got[1]
	if a := first.First.Admission; a.Traceparent != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || a.CorrelationID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("admission %+v", a)
	}
	if first.Record.Fingerprint != second.Record.Fingerprint {
		t.Fatal("the traceparent changes the fingerprint: a retry would be key_reused")
	}
}
