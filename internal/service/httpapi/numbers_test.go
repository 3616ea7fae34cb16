package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// A type defined only here, with numbers where a schema reads them: an integer that makes
// the target, an array of integers, and bounds that a rounded value could cross.
const numberTypes = `
types:
  - name: account.sync
    version: 1
    description: Sync an account.
    worker: accounts
    deadline: 1h
    stepTimeout: 60s
    maxSteps: 1
    target: "acct:{/id}"
    input:
      type: object
      additionalProperties: false
      required: [id]
      properties:
        id: {type: integer}
        ids: {type: array, items: {type: integer}}
        weight: {type: number, exclusiveMinimum: 0}
        ratio: {type: number, exclusiveMaximum: 0.3}
`

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
	e := newEnv(t, withTypes(t, numberTypes))
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
