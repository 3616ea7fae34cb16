package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// numberTypes is admission's fixture: a type with numbers where its schema reads them (an
// integer that makes the target, an array of integers, bounds a rounded value could cross).
func numberTypes(t *testing.T) option {
	yaml, err := os.ReadFile("../../core/admission/testdata/numbers.types.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return withTypes(t, string(yaml))
}

// hugeExponents is the body of issue #20: 300 numbers of a huge negative exponent in an
// integer array, 3 KiB. Each used to read as 0, and the schema library spent 35–190 ms
// turning each literal into an exact fraction: 9.8 s in all on the local stack.
func hugeExponents() string {
	return `{"type":"account.sync","input":{"id":1,"ids":[` + strings.TrimSuffix(strings.Repeat("1e-999999,", 300), ",") + `]}}`
}

// A number of a huge exponent is refused as the body is parsed, before anything reads its
// value: a 400 that names it, no DynamoDB call, nothing written. (How fast it is refused is
// BenchmarkHugeExponentsAreRefused's, in internal/core/admission.)
func TestHugeExponentsAreRefusedAsTheBodyIsParsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, numberTypes(t))
	before := e.snapshot()
	e.calls.Reset()
	for _, body := range []string{
		hugeExponents(),
		`{"type":"account.sync","input":{"id":1,"weight":1e-400}}`,
		`{"type":"account.sync","input":{"id":1e-99999999999999999999}}`,
		`{"type":"account.sync","input":{"id":0e99999999}}`,
		`{"type":"account.sync","input":{"id":1.` + strings.Repeat("0", 100) + `}}`,
	} {
		r := e.admit("k-huge-exponent", body)
		wantProblem(t, r, http.StatusBadRequest, "invalid_input")
		if d, _ := r.json["detail"].(string); !strings.Contains(d, "The body is not acceptable JSON: number out of range: ") {
			t.Errorf("%.60s: detail %q", body, d)
		}
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls for refused bodies", n)
	}
	e.unchanged(before)
}

// Two spellings of one id take one lock, and a number that a double would turn into another
// id is refused rather than given a lock of its own (issue #20, item 4: 9007199254740993.0
// was admitted with the target acct:9007199254740993 and stored as 9007199254740992).
func TestOneIDOneLockWhateverItsSpelling(t *testing.T) {
	t.Parallel()
	e := newEnv(t, numberTypes(t))
	first := e.admit("k-id-1", `{"type":"account.sync","input":{"id":9007199254740992.0}}`)
	if first.status != http.StatusAccepted || first.json["target"] != "acct:9007199254740992" {
		t.Fatalf("%d %s", first.status, first.body)
	}
	before := e.snapshot()
	e.calls.Reset()
	for i, body := range []string{
		`{"type":"account.sync","input":{"id":9007199254740993.0}}`,
		`{"type":"account.sync","input":{"id":9.007199254740993e15}}`,
		`{"type":"account.sync","input":{"id":1,"ratio":0.29999999999999999}}`,
	} {
		r := e.admit(fmt.Sprintf("k-id-refused-%d", i), body)
		wantProblem(t, r, http.StatusBadRequest, "invalid_input")
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls for refused bodies", n)
	}
	second := e.admit("k-id-2", `{"type":"account.sync","input":{"id":90071992547409920e-1}}`)
	wantProblem(t, second, http.StatusConflict, "target_busy")
	if second.json["operationId"] != first.json["operationId"] {
		t.Fatalf("target_busy names %v, want %v", second.json["operationId"], first.json["operationId"])
	}
	e.unchanged(before)
}
