package httpapi_test

import (
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/optype"
)

// A type defined only here, with a nested object, a pattern and an integer range.
const schemaTypes = `
types:
  - name: provision.environment
    version: 1
    description: Provision an environment.
    worker: provisioner
    deadline: 2h
    stepTimeout: 5m
    maxSteps: 10
    target: "env:{/project}/{/environment}"
    input:
      type: object
      additionalProperties: false
      required: [project, environment, template]
      properties:
        project: {type: string, pattern: "^[a-z0-9-]{1,40}$"}
        environment: {type: string, pattern: "^[a-z0-9-]{1,40}$"}
        template: {type: string}
        size: {type: integer, minimum: 1, maximum: 8}
        network:
          type: object
          additionalProperties: false
          required: [cidr]
          properties:
            cidr: {type: string, pattern: "^[0-9./]+$"}
            public: {type: boolean}
`

func withTypes(t *testing.T, yaml string) option {
	file, err := optype.Parse("schema.types.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return func(e *env) {
		e.service.Registry = file.Registry(optype.WithDemo)
		e.handler.Types = e.service.Registry
	}
}

// Input that its type's JSON Schema refuses is a 400 invalid_input naming the pointer of
// every failing field, and it writes nothing: not one DynamoDB call is made.
func TestSchemaValidationIs400WithPointersAndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withTypes(t, schemaTypes))
	for _, tc := range []struct {
		name, input string
		pointers    string
	}{
		{"missing fields", `{"project":"p"}`, "/input/environment,/input/template"},
		{"an extra field", `{"project":"p","environment":"e","template":"t","colour":"red"}`, "/input/colour"},
		{"wrong types", `{"project":1,"environment":"e","template":["t"],"size":2.5}`, "/input/project,/input/size,/input/template"},
		{"a pattern mismatch", `{"project":"Has Spaces","environment":"e","template":"t"}`, "/input/project"},
		{"out of range", `{"project":"p","environment":"e","template":"t","size":9}`, "/input/size"},
		{"nested: missing", `{"project":"p","environment":"e","template":"t","network":{}}`, "/input/network/cidr"},
		{"nested: pattern and extra", `{"project":"p","environment":"e","template":"t","network":{"cidr":"x","vpn":true}}`, "/input/network/cidr,/input/network/vpn"},
		{"nested: wrong type", `{"project":"p","environment":"e","template":"t","network":{"cidr":"10.0.0.0/16","public":"yes"}}`, "/input/network/public"},
	} {
		r := e.admit("k-"+strings.ReplaceAll(tc.name, " ", "-"), `{"type":"provision.environment","input":`+tc.input+`}`)
		wantProblem(t, r, 400, "invalid_input")
		var pointers []string
		errs, _ := r.json["errors"].([]any)
		for _, x := range errs {
			m := x.(map[string]any)
			pointers = append(pointers, m["pointer"].(string))
			if d, _ := m["detail"].(string); d == "" {
				t.Errorf("%s: a field error without a detail: %s", tc.name, r.body)
			}
		}
		if got := strings.Join(pointers, ","); got != tc.pointers {
			t.Errorf("%s: pointers %s, want %s (%s)", tc.name, got, tc.pointers, r.body)
		}
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("refused input made %d DynamoDB calls", n)
	}
	// The same type admits a valid input, with its target from the template.
	r := e.admit("k-valid", `{"type":"provision.environment","input":{"project":"shop","environment":"qa-1","template":"small","network":{"cidr":"10.0.0.0/16"}}}`)
	if r.status != 202 || r.json["target"] != "env:shop/qa-1" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// A type's quotaWeight reaches the store: with a quota of 5 slots on one counter, one
// operation of weight 3 fits and a second is 429 quota_exceeded.
func TestQuotaWeightFromTheDefinition(t *testing.T) {
	t.Parallel()
	weighted := strings.Replace(schemaTypes, "    maxSteps: 10\n", "    maxSteps: 10\n    quotaWeight: 3\n", 1)
	e := newEnv(t, withTypes(t, weighted), withQuota(5), func(e *env) { e.store.QuotaShards = 1 })
	body := func(env string) string {
		return `{"type":"provision.environment","input":{"project":"shop","environment":"` + env + `","template":"small"}}`
	}
	if r := e.admit("k-w1", body("a")); r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r := e.admit("k-w2", body("b"))
	wantProblem(t, r, 429, "quota_exceeded")
	if !strings.Contains(r.json["detail"].(string), "takes 3") {
		t.Fatalf("%s", r.body)
	}
}
