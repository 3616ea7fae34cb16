package optype

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

func example(t *testing.T) *File {
	t.Helper()
	f, err := Load("testdata/example.types.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLoadExample(t *testing.T) {
	f := example(t)
	if got := strings.Join(f.Registry(WithoutDemo).Names(), ","); got != "infra.build,infra.deploy,sandbox.session" {
		t.Fatalf("names %s", got)
	}
	deploy, _ := f.Registry(WithoutDemo).Lookup("infra.deploy")
	if deploy.Version != 3 || deploy.Worker != "deployer" || deploy.Deadline != 2*time.Hour || deploy.StepTimeout != 15*time.Minute ||
		deploy.MaxSteps != 100 || deploy.StepDelay != 30*time.Second || deploy.Retention != 48*time.Hour || deploy.QuotaWeight != 5 ||
		deploy.MintsTarget || deploy.Demo {
		t.Errorf("infra.deploy: %+v", deploy)
	}
	if got := strings.Join(f.Registry(WithoutDemo).Workers(), ","); got != "deployer,sandbox" {
		t.Errorf("workers %s", got)
	}
	dir, _ := filepath.Abs("testdata")
	if w := f.Local["deployer"]; w.Go != "./workers/deployer" || w.Command != nil || w.Env["LOG_LEVEL"] != "debug" || w.Dir != dir {
		t.Errorf("deployer: %+v (dir %s)", w, dir)
	}
	if w := f.Local["sandbox"]; w.Go != "" || strings.Join(w.Command, " ") != "python3 worker.py" || w.Env["MODE"] != "1" || w.Dir != dir {
		t.Errorf("sandbox: %+v", w)
	}
	// Parse, unlike Load, does not touch the file system: Dir is the path's directory.
	pf, err := Parse("conf/types.yaml", []byte(`{"types":[{"name":"a","version":1,"description":"d","worker":"w","deadline":"1h",
		"stepTimeout":"1m","maxSteps":1,"target":"minted","input":{"type":"object"}}],"local":{"w":{"command":["./w"]}}}`))
	if err != nil {
		t.Fatalf("a JSON file: %v", err)
	}
	if pf.Local["w"].Dir != "conf" || len(pf.Types) != 1 || !pf.Types[0].MintsTarget {
		t.Errorf("JSON file: %+v", pf)
	}
	if _, err := Load("testdata/missing.yaml"); err == nil || !strings.Contains(err.Error(), "testdata/missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// Schema validation of a test-defined type with nested objects, on admission's json.Number
// input.
func TestSchemaValidation(t *testing.T) {
	r := example(t).Registry(WithoutDemo)
	ok := `{"project":"shop","environment":"prod","spec":{"region":"eu"}}`
	in := input(t, `{"project":"shop","environment":"prod","spec":{"region":"eu","replicas":3}}`)
	if _, isNumber := in["spec"].(map[string]any)["replicas"].(json.Number); !isNumber {
		t.Fatal("the test input must carry json.Number, as admission's does")
	}
	deploy, _ := r.Lookup("infra.deploy")
	if got, err := deploy.Target(in, "op_x"); err != nil || got != "env:shop/prod" {
		t.Fatalf("json.Number input: %q %v", got, err)
	}
	checkTargets(t, r, []targetCase{
		{"infra.deploy", ok, "env:shop/prod", nil},
		{"infra.deploy", `{"project":"shop","environment":"dev","spec":{"region":"eu","replicas":2.0,"options":{"canary":true}},"notes":"n"}`, "env:shop/dev", nil},
		// missing, top level and nested
		{"infra.deploy", `{"environment":"prod","spec":{"region":"eu"}}`, "", []string{"/input/project"}},
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{}}`, "", []string{"/input/spec/region"}},
		{"infra.deploy", `{}`, "", []string{"/input/environment", "/input/project", "/input/spec"}},
		// extra, top level and nested
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"eu"},"zone":1,"b":2}`, "", []string{"/input/b", "/input/zone"}},
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"eu","zone":"a"}}`, "", []string{"/input/spec/zone"}},
		// wrong type
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":"eu"}`, "", []string{"/input/spec"}},
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"eu","replicas":2.5}}`, "", []string{"/input/spec/replicas"}},
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"eu","replicas":"2"}}`, "", []string{"/input/spec/replicas"}},
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"eu","options":{"canary":"yes"}}}`, "", []string{"/input/spec/options/canary"}},
		// range, length, enum, pattern
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"eu","replicas":11}}`, "", []string{"/input/spec/replicas"}},
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"e"}}`, "", []string{"/input/spec/region"}},
		{"infra.deploy", `{"project":"shop","environment":"qa","spec":{"region":"eu"}}`, "", []string{"/input/environment"}},
		{"infra.deploy", `{"project":"Shop","environment":"prod","spec":{"region":"eu"}}`, "", []string{"/input/project"}},
		{"infra.deploy", `{"project":"shop","environment":"prod","spec":{"region":"eu"},"notes":"` + strings.Repeat("n", 21) + `"}`, "", []string{"/input/notes"}},
		// every error at once, sorted by pointer
		{"infra.deploy", `{"project":"Shop","environment":"qa","spec":{"replicas":0,"x":1},"y":1}`, "",
			[]string{"/input/environment", "/input/project", "/input/spec/region", "/input/spec/replicas", "/input/spec/x", "/input/y"}},
	})
	for in, want := range map[string]problem.FieldError{
		`{"project":"Shop","environment":"prod","spec":{"region":"eu"}}`:                 fe("/input/project", "project must match the pattern ^[a-z][a-z0-9-]*$."),
		`{"project":"shop","environment":"prod","spec":{}}`:                              fe("/input/spec/region", "region is required."),
		`{"project":"shop","environment":"prod","spec":{"region":"eu","zone":1}}`:        fe("/input/spec/zone", `"zone" is not a field of this operation type.`),
		`{"project":"shop","environment":"prod","spec":{"region":"e"}}`:                  fe("/input/spec/region", "region must be at least 2 characters long."),
		`{"project":"shop","environment":"prod","spec":{"region":"eu","replicas":true}}`: fe("/input/spec/replicas", "replicas must be an integer, not a boolean."),
	} {
		_, err := deploy.Target(input(t, in), "op_x")
		if got := fieldsOf(t, err); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %+v, want %+v", in, got, want)
		}
	}
}

// Target templates: several placeholders, nested pointers, integers in decimal, and the
// whole value normalized by NormalizeTarget.
func TestTargetTemplates(t *testing.T) {
	r := example(t).Registry(WithoutDemo)
	checkTargets(t, r, []targetCase{
		{"infra.deploy", `{"project":"shop","environment":"staging","spec":{"region":"eu"}}`, "env:shop/staging", nil},
		{"infra.build", `{"spec":{"region":"eu-west-1"},"number":42}`, "build:eu-west-1#42", nil},
		{"infra.build", `{"spec":{"region":"eu"},"number":42.0}`, "build:eu#42", nil},
		{"infra.build", `{"spec":{"region":"eu"},"number":1e2}`, "build:eu#100", nil},
		{"infra.build", `{"spec":{"region":"eu"},"number":0}`, "build:eu#0", nil},
		{"infra.build", `{"spec":{"region":"  eu"},"number":7}`, "build:eu#7", nil},
		{"infra.build", `{"spec":{"region":"cafe\u0301"},"number":1}`, "build:caf\u00e9#1", nil},
		{"infra.build", `{"spec":{"region":"e\u200bu"},"number":1}`, "", []string{"/input/spec/region"}},
		{"infra.build", `{"spec":{"region":"` + strings.Repeat("r", 260) + `"},"number":1}`, "", []string{"/input/spec/region"}},
		{"infra.build", `{"spec":{"region":"eu"},"number":1.5}`, "", []string{"/input/number"}},
		{"infra.build", `{"spec":{"region":"eu"}}`, "", []string{"/input/number"}},
		// additionalProperties is not false here: other members are allowed and ignored.
		{"infra.build", `{"spec":{"region":"eu","other":1},"number":3,"note":"x"}`, "build:eu#3", nil},
	})
	sandbox, _ := r.Lookup("sandbox.session")
	got, err := sandbox.Target(map[string]any{}, "op_01ARYZ6S410000000000000000")
	if err != nil || got != "sandbox.session:op_01ARYZ6S410000000000000000" || !sandbox.MintsTarget {
		t.Fatalf("minted: %q %v", got, err)
	}
	got, err = sandbox.Target(nil, "op_y") // an absent input is an empty object
	if err != nil || got != "sandbox.session:op_y" {
		t.Fatalf("minted, nil input: %q %v", got, err)
	}
	if _, err := sandbox.Target(input(t, `{"x":1}`), "op_z"); pointersOf(fieldsOf(t, err)) != "/input/x" {
		t.Fatalf("minted types validate their input too: %v", err)
	}
}

func TestWithDefaults(t *testing.T) {
	r := example(t).Registry(WithoutDemo)
	deploy, _ := r.Lookup("infra.deploy")
	demo, _ := Builtin().Lookup("demo.task")
	orders, _ := Builtin().Lookup("export.orders")
	for _, tc := range []struct {
		typ      Type
		in, want string
	}{
		{demo, `{"target":"x"}`, `{"outcome":"succeed","sleepMs":0,"steps":1,"target":"x"}`},
		{demo, `{"target":"x","steps":3.0,"outcome":"fail"}`, `{"outcome":"fail","sleepMs":0,"steps":3.0,"target":"x"}`},
		{demo, `{"target":"<&>","sleepMs":12345678901234567890}`, `{"outcome":"succeed","sleepMs":12345678901234567890,"steps":1,"target":"<&>"}`},
		{orders, `{"from":"2026-01-01","to":"2026-01-02"}`, `{"from":"2026-01-01","to":"2026-01-02"}`},
		// into a present nested object, not into an absent one without a default
		{deploy, `{"project":"p","environment":"dev","spec":{"region":"eu"}}`, `{"environment":"dev","project":"p","spec":{"region":"eu","replicas":2}}`},
		{deploy, `{"project":"p","environment":"dev","spec":{"region":"eu","replicas":7,"options":{}}}`,
			`{"environment":"dev","project":"p","spec":{"options":{"canary":false},"region":"eu","replicas":7}}`},
		{deploy, `{"project":"p","spec":{"options":{"canary":true}}}`, `{"project":"p","spec":{"options":{"canary":true},"replicas":2}}`},
		{deploy, `{"spec":"not an object"}`, `{"spec":"not an object"}`},
	} {
		got, err := tc.typ.WithDefaults(json.RawMessage(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s %s: %s %v, want %s", tc.typ.Name, tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `[]`, `null`, `"x"`, `{"a":`, `{} {}`} {
		if got, err := demo.WithDefaults(json.RawMessage(bad)); err == nil {
			t.Errorf("%q: %s accepted", bad, got)
		}
	}
	// WithDefaults does not change the schema's defaults: a second call sees them unchanged.
	first, _ := deploy.WithDefaults(json.RawMessage(`{"spec":{"options":{}}}`))
	second, _ := deploy.WithDefaults(json.RawMessage(`{"spec":{"options":{}}}`))
	if string(first) != string(second) || string(first) != `{"spec":{"options":{"canary":false},"replicas":2}}` {
		t.Errorf("%s then %s", first, second)
	}
}

// A Type made in Go, not loaded, has no schema and no template: only a minted target works.
func TestTypeWithoutDefinition(t *testing.T) {
	minted := Type{Name: "sandbox.session", Version: 1, MintsTarget: true}
	if got, err := minted.Target(map[string]any{"any": 1}, "op_1"); err != nil || got != "sandbox.session:op_1" {
		t.Fatalf("minted: %q %v", got, err)
	}
	if _, err := (Type{Name: "x.y"}).Target(map[string]any{}, "op_1"); problem.CodeOf(err) != problem.Internal {
		t.Fatalf("no template: %v", err)
	}
	if s := minted.InputSchema(); s != nil {
		t.Fatalf("schema %s", s)
	}
}

// Each schema keyword's failure reads as a sentence about the member.
func TestLeafDetails(t *testing.T) {
	f, err := Parse("kinds.yaml", []byte(`types:
  - name: kinds
    version: 1
    description: One property per keyword.
    worker: w
    deadline: 1h
    stepTimeout: 1m
    maxSteps: 1
    target: minted
    input:
      type: object
      properties:
        c: {const: 1.5}
        e: {enum: [1, true, null, x]}
        xmin: {type: number, exclusiveMinimum: 0}
        xmax: {type: number, exclusiveMaximum: 2.5}
        mult: {type: integer, multipleOf: 5}
        long: {type: string, maxLength: 2}
        few: {type: array, minItems: 2}
        many: {type: array, maxItems: 1}
        uniq: {type: array, uniqueItems: true}
        small: {type: object, minProperties: 1}
        big: {type: object, maxProperties: 1}
        never: false
        mail: {type: string, format: email}
        when: {type: string, format: date-time}
        id: {type: string, format: uuid}
        one: {oneOf: [{type: integer}, {type: number}]}
        nul: {type: "null"}
        nested: {type: array, items: {type: string}}
`))
	if err != nil {
		t.Fatal(err)
	}
	typ := f.Types[0]
	for in, want := range map[string]problem.FieldError{
		`{"c":1}`:                  fe("/input/c", "c must be 1.5."),
		`{"e":2}`:                  fe("/input/e", `e must be one of 1, true, null, x.`),
		`{"xmin":0}`:               fe("/input/xmin", "xmin must be greater than 0."),
		`{"xmax":2.5}`:             fe("/input/xmax", "xmax must be less than 2.5."),
		`{"mult":7}`:               fe("/input/mult", "mult must be a multiple of 5."),
		`{"long":"abc"}`:           fe("/input/long", "long must be at most 2 characters long."),
		`{"few":[1]}`:              fe("/input/few", "few must have at least 2 items."),
		`{"many":[1,2]}`:           fe("/input/many", "many must have at most 1 items."),
		`{"uniq":[1,2,1]}`:         fe("/input/uniq", "uniq must not repeat an item (items 0 and 2 are equal)."),
		`{"small":{}}`:             fe("/input/small", "small must have at least 1 members."),
		`{"big":{"a":1,"b":2}}`:    fe("/input/big", "big must have at most 1 members."),
		`{"never":1}`:              fe("/input/never", "never is not allowed."),
		`{"mail":"nobody"}`:        fe("/input/mail", "mail must be an email address."),
		`{"when":"2026-01-01"}`:    fe("/input/when", "when must be a date and time written as in RFC 3339 (YYYY-MM-DDThh:mm:ssZ)."),
		`{"id":"x"}`:               fe("/input/id", "id must be a UUID."),
		`{"one":1}`:                fe("/input/one", "one: 'oneOf' failed, subschemas 0, 1 matched."),
		`{"nul":0}`:                fe("/input/nul", "nul must be null, not a number."),
		`{"nested":["a",{"b":1}]}`: fe("/input/nested/1", "1 must be a string, not an object."),
	} {
		_, err := typ.Target(input(t, in), "op_1")
		if got := fieldsOf(t, err); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %+v, want %+v", in, got, want)
		}
	}
	if got, err := typ.Target(input(t, `{"c":1.50,"e":null,"mult":10,"one":"x"}`), "op_1"); err == nil {
		t.Errorf("one: a string matches neither alternative, yet %q", got)
	} else if got := fieldsOf(t, err); len(got) != 2 || got[0] != fe("/input/one", "one must be a number, not a string.") ||
		got[1] != fe("/input/one", "one must be an integer, not a string.") {
		// Every alternative's leaf error is listed, sorted by pointer, then detail.
		t.Errorf("oneOf with no match: %+v", got)
	}
}

// YAML values the schema may hold become the JSON they mean; YAML-only ones are refused.
func TestSchemaFromYAML(t *testing.T) {
	const head = "types:\n  - {name: y, version: 1, description: d, worker: w, deadline: 1h, stepTimeout: 1m, maxSteps: 1, target: minted, input: "
	f, err := Parse("y.yaml", []byte(head+"{type: object, properties: {a: {enum: [null, true, 1.5, 2026-01-01, 0x10, ~]}}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(f.Types[0].InputSchema()); got != `{"type":"object","properties":{"a":{"enum":[null,true,1.5,"2026-01-01",16,null]}}}` {
		t.Errorf("schema %s", got)
	}
	for value, want := range map[string]string{
		"{type: object, default: !!binary aGk=}":            "!!binary values are not JSON",
		"{type: object, <<: {title: t}}":                    "merge keys (<<) are not supported",
		"{type: object, properties: {a: {}, a: {}}}":        `duplicate key "a"`,
		"{type: object, properties: {[1]: {}}}":             "a mapping key must be a string",
		"{type: object, properties: {a: {default: .nan}}}":  ".nan is not a JSON number",
		"{type: object, properties: {a: {enum: [-.inf]}}}":  "-.inf is not a JSON number",
		"{type: object, title: 1, properties: {a: {x: 1}}}": `unknown keyword "x" at /properties/a`,
	} {
		_, err := Parse("y.yaml", []byte(head+value+"}\n"))
		if err == nil || !strings.Contains(err.Error(), `y.yaml: type "y": input: `+want) {
			t.Errorf("%s: %v", value, err)
		}
	}
}
