package optype

import (
	"errors"
	"strings"
	"testing"
)

// base is a valid file of one type; each case below breaks it in one way.
const base = `types:
  - name: t.one
    version: 1
    description: A test type.
    worker: w-one
    deadline: 1h
    stepTimeout: 60s
    maxSteps: 5
    target: "ns:{/id}"
    input:
      type: object
      required: [id, n, flag, spec, from, to]
      properties:
        id: {type: string}
        n: {type: integer}
        flag: {type: boolean}
        opt: {type: string}
        spec:
          type: object
          required: [region]
          properties:
            region: {type: string}
            zone: {type: string}
        from: {type: string}
        to: {type: string}
    checks:
      - dateRange: {from: /from, to: /to, maxDays: 30}
local:
  w-one: {go: ./w}
`

// edit replaces old in base by new, failing the test if old is not there, so a case cannot
// silently test the valid file.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	s := base
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("base has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func TestBaseIsValid(t *testing.T) {
	f, err := Parse("defs.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Types) != 1 || f.Types[0].Name != "t.one" || f.Local["w-one"].Go != "./w" {
		t.Fatalf("%+v", f)
	}
}

// Every problem a definition can have stops start-up with a message naming the file, the
// type (or local worker) and the field.
func TestLoadErrors(t *testing.T) {
	const typ = `defs.yaml: type "t.one": `
	for _, tc := range []struct {
		name string
		yaml string
		want []string // each must appear in the message
	}{
		{"bad YAML", "types: [\n  {name: x\n", []string{"defs.yaml: line ", "invalid YAML"}},
		{"tab indentation", "types:\n\t- name: x\n", []string{"defs.yaml: line 2", "invalid YAML"}},
		{"empty file", "", []string{"defs.yaml: the file is empty"}},
		{"comments only", "# nothing\n", []string{"defs.yaml: the file is empty"}},
		{"two documents", base + "---\n" + base, []string{"defs.yaml: line ", "one YAML document, not 2"}},
		{"root not a mapping", "- 1\n", []string{"defs.yaml: must be a mapping"}},
		{"unknown top-level key", edit(t, "local:", "extra: 1\nlocal:"), []string{`defs.yaml: extra: unknown key`, "(line 28)"}},
		{"no types", "local: {}\n", []string{"defs.yaml: types: missing"}},
		{"empty types", "types: []\n", []string{"defs.yaml: types: must be a list of at least one type"}},
		{"unknown type key", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    colour: red\n"), []string{typ + "colour: unknown key", "(line 9)"}},
		{"misspelled key", edit(t, "stepTimeout:", "steptimeout:"), []string{typ + "steptimeout: unknown key", typ + "stepTimeout: missing"}},
		{"duplicate key", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    maxSteps: 6\n"), []string{typ + "maxSteps: duplicate key"}},
		{"type not a mapping", "types: [x]\n", []string{"defs.yaml: types[0]: must be a mapping"}},
		{"missing name", edit(t, "  - name: t.one\n    version", "  - version"), []string{"defs.yaml: types[0]: name: missing"}},
		{"bad name", edit(t, "name: t.one", "name: T.One"), []string{`defs.yaml: types[0]: name: "T.One" must match`}},
		{"bad name is types[i] everywhere", edit(t, "name: t.one", "name: t..one", "deadline: 1h", "deadline: soon"),
			[]string{`defs.yaml: types[0]: name: "t..one" must match`, `defs.yaml: types[0]: deadline: "soon" is not a duration`}},
		{"name not a string", edit(t, "name: t.one", "name: 12"), []string{"defs.yaml: types[0]: name: must be a string"}},
		{"name too long", edit(t, "name: t.one", "name: t."+strings.Repeat("a", 63)), []string{"defs.yaml: types[0]: name: ", "longer than 64 bytes"}},
		{"duplicate name", edit(t, "local:", strings.TrimPrefix(base, "types:\n")+"local:"), []string{typ + "name: duplicate of types[0]"}},
		{"missing version", edit(t, "    version: 1\n", ""), []string{typ + "version: missing"}},
		{"version 0", edit(t, "version: 1", "version: 0"), []string{typ + "version: must be from 1 to 2147483647, not 0"}},
		{"version not an integer", edit(t, "version: 1", `version: "1"`), []string{typ + "version: must be an integer"}},
		{"version 1.5", edit(t, "version: 1", `version: 1.5`), []string{typ + "version: must be an integer"}},
		{"missing description", edit(t, "    description: A test type.\n", ""), []string{typ + "description: missing"}},
		{"blank description", edit(t, "description: A test type.", `description: "  "`), []string{typ + "description: must not be empty"}},
		{"description too long", edit(t, "description: A test type.", "description: "+strings.Repeat("d", 1001)), []string{typ + "description: is 1001 characters; at most 1000"}},
		{"version over int32", edit(t, "version: 1", "version: 2147483648"), []string{typ + "version: must be from 1 to 2147483647, not 2147483648"}},
		{"demo not a boolean", edit(t, "    worker:", "    demo: \"yes\"\n    worker:"), []string{typ + "demo: must be true or false"}},
		{"missing worker", edit(t, "    worker: w-one\n", ""), []string{typ + "worker: missing"}},
		{"bad worker", edit(t, "worker: w-one", "worker: W_one"), []string{typ + `worker: "W_one" must match`}},
		{"worker too long", edit(t, "worker: w-one", "worker: w"+strings.Repeat("x", 40)), []string{typ + "worker: ", "must match"}},
		{"missing deadline", edit(t, "    deadline: 1h\n", ""), []string{typ + "deadline: missing"}},
		{"bad deadline", edit(t, "deadline: 1h", "deadline: 1x"), []string{typ + `deadline: "1x" is not a duration`}},
		{"zero deadline", edit(t, "deadline: 1h", "deadline: 0s"), []string{typ + "deadline: must be more than 0"}},
		{"deadline too long", edit(t, "deadline: 1h", "deadline: 8761h"), []string{typ + "deadline: must be more than 0 and at most 8760h"}},
		{"deadline fractional", edit(t, "deadline: 1h", "deadline: 1500ms"), []string{typ + "deadline: 1.5s is not a whole number of seconds"}},
		{"bad stepTimeout", edit(t, "stepTimeout: 60s", "stepTimeout: a minute"), []string{typ + `stepTimeout: "a minute" is not a duration`}},
		{"zero stepTimeout", edit(t, "stepTimeout: 60s", "stepTimeout: 0"), []string{typ + "stepTimeout: must be more than 0"}},
		{"stepTimeout over 15m", edit(t, "stepTimeout: 60s", "stepTimeout: 16m", "deadline: 1h", "deadline: 2h"), []string{typ + "stepTimeout: must be more than 0 and at most 15m", "Lambda"}},
		{"stepTimeout over deadline", edit(t, "stepTimeout: 60s", "stepTimeout: 10m", "deadline: 1h", "deadline: 5m"), []string{typ + "stepTimeout: 10m0s exceeds the deadline 5m0s"}},
		{"stepTimeout fractional", edit(t, "stepTimeout: 60s", "stepTimeout: 1.5s"), []string{typ + "stepTimeout: 1.5s is not a whole number of seconds"}},
		{"bad stepDelay", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    stepDelay: later\n"), []string{typ + `stepDelay: "later" is not a duration`}},
		{"negative stepDelay", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    stepDelay: -1s\n"), []string{typ + "stepDelay: must not be negative"}},
		{"stepDelay at deadline", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    stepDelay: 1h\n"), []string{typ + "stepDelay: 1h0m0s must be less than the deadline 1h0m0s"}},
		{"stepDelay fractional", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    stepDelay: 250ms\n"), []string{typ + "stepDelay: 250ms is not a whole number of seconds"}},
		{"bad retention", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    retention: forever\n"), []string{typ + `retention: "forever" is not a duration`}},
		{"short retention", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    retention: 30m\n"), []string{typ + "retention: must be 0 (the deployment default) or from 1h0m0s to 8760h0m0s, not 30m0s"}},
		{"long retention", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    retention: 8761h\n"), []string{typ + "retention: must be 0"}},
		{"missing maxSteps", edit(t, "    maxSteps: 5\n", ""), []string{typ + "maxSteps: missing"}},
		{"maxSteps 0", edit(t, "maxSteps: 5", "maxSteps: 0"), []string{typ + "maxSteps: must be from 1 to 10000, not 0"}},
		{"maxSteps over 10000", edit(t, "maxSteps: 5", "maxSteps: 10001"), []string{typ + "maxSteps: must be from 1 to 10000, not 10001"}},
		{"quotaWeight 0", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    quotaWeight: 0\n"), []string{typ + "quotaWeight: must be from 1 to 100, not 0"}},
		{"quotaWeight 101", edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    quotaWeight: 101\n"), []string{typ + "quotaWeight: must be from 1 to 100, not 101"}},
		{"missing input", edit(t, "    input:\n", "    inputs:\n"), []string{typ + "input: missing", typ + "inputs: unknown key"}},
		{"schema compile error", edit(t, "n: {type: integer}", `n: {type: integer, minimum: "one"}`), []string{typ + "input: not a valid JSON Schema", "/properties/n/minimum"}},
		{"schema bad regex", edit(t, "id: {type: string}", `id: {type: string, pattern: "["}`), []string{typ + "input: not a valid JSON Schema", "/properties/id/pattern"}},
		{"schema root not an object type", edit(t, "      type: object\n      required: [id, n", "      type: array\n      required: [id, n"), []string{typ + "input: the root must declare type: object"}},
		{"schema root without type", edit(t, "      type: object\n      required: [id, n", "      required: [id, n"), []string{typ + "input: the root must declare type: object"}},
		{"schema not a mapping", edit(t, "    input:\n", "    input: [1]\n    x-input:\n"), []string{typ + "input: must be a JSON Schema object"}},
		{"schema unknown format", edit(t, "id: {type: string}", "id: {type: string, format: dat}"), []string{typ + `input: format "dat" at /properties/id is not one longrun checks`, "(line 14)"}},
		{"schema unknown keyword", edit(t, "id: {type: string}", "id: {type: string, maxLenght: 3}"), []string{typ + `input: unknown keyword "maxLenght" at /properties/id`, "(line 14)"}},
		{"schema old keyword", edit(t, "      required: [id, n", "      definitions: {}\n      required: [id, n"), []string{typ + `input: "definitions" at the root is not a JSON Schema 2020-12 keyword; use $defs`}},
		{"schema other draft", edit(t, "      type: object\n      required: [id, n", "      $schema: http://json-schema.org/draft-07/schema#\n      type: object\n      required: [id, n"), []string{typ + "input: $schema must be https://json-schema.org/draft/2020-12/schema"}},
		{"schema remote $ref", edit(t, "id: {type: string}", "id: {$ref: 'https://example.com/id.json'}"), []string{typ + "input: not a valid JSON Schema", "example.com"}},
		{"schema dangling $ref", edit(t, "id: {type: string}", "id: {$ref: '#/$defs/nope'}"), []string{typ + "input: not a valid JSON Schema"}},
		{"schema bad default", edit(t, "n: {type: integer}", "n: {type: integer, minimum: 1, default: 0}"), []string{typ + "input: /properties/n/default is not valid for its property: n must be at least 1."}},
		{"schema bad nested default", edit(t, "zone: {type: string}", "zone: {type: string, default: 3}"), []string{typ + "input: /properties/spec/properties/zone/default is not valid"}},
		{"schema YAML-only value", edit(t, "id: {type: string}", "id: {type: string, default: .inf}"), []string{typ + "input: .inf is not a JSON number"}},
		{"missing target", edit(t, "    target: \"ns:{/id}\"\n", ""), []string{typ + "target: missing"}},
		{"target not a string", edit(t, `target: "ns:{/id}"`, "target: [ns]"), []string{typ + "target: must be a string"}},
		{"target without namespace", edit(t, `target: "ns:{/id}"`, `target: "{/id}"`), []string{typ + `target: "{/id}" must be "minted" or <namespace>:<template>`}},
		{"target bad namespace", edit(t, `target: "ns:{/id}"`, `target: "Ns_1:{/id}"`), []string{typ + `target: namespace "Ns_1" must match`}},
		{"target namespace too long", edit(t, `target: "ns:{/id}"`, `target: "n`+strings.Repeat("s", 64)+`:{/id}"`), []string{typ + `target: namespace "n`, "is longer than 64 bytes"}},
		{"target empty template", edit(t, `target: "ns:{/id}"`, `target: "ns:"`), []string{typ + "target: the template after the namespace is empty"}},
		{"target blank constant", edit(t, `target: "ns:{/id}"`, `target: "ns:  "`), []string{typ + "target: the constant target must not be empty"}},
		{"target invisible text", edit(t, `target: "ns:{/id}"`, `target: "ns:a\u200b{/id}"`), []string{typ + "target: the template text must be valid UTF-8 without control"}},
		{"target mixed-script text", edit(t, `target: "ns:{/id}"`, `target: "ns:b\u0430d-{/id}"`), []string{typ + `target: the template text must not mix scripts in one word: "b\u0430d" mixes Latin and Cyrillic`}},
		{"target unknown pointer", edit(t, `target: "ns:{/id}"`, `target: "ns:{/nope}"`), []string{typ + `target: unknown pointer "/nope": no property "nope" is declared in the input schema`}},
		{"target unknown nested pointer", edit(t, `target: "ns:{/id}"`, `target: "ns:{/spec/city}"`), []string{typ + `target: unknown pointer "/spec/city": no property "city" is declared under "/spec"`}},
		{"target optional pointer", edit(t, `target: "ns:{/id}"`, `target: "ns:{/opt}"`), []string{typ + `target: optional pointer "/opt": "opt" is not listed in required`}},
		{"target optional nested pointer", edit(t, `target: "ns:{/id}"`, `target: "ns:{/spec/zone}"`), []string{typ + `target: optional pointer "/spec/zone": "zone" is not listed in required under "/spec"`}},
		{"target boolean pointer", edit(t, `target: "ns:{/id}"`, `target: "ns:{/flag}"`), []string{typ + `target: pointer "/flag" names a property of type boolean; it must name a string or integer property`}},
		{"target object pointer", edit(t, `target: "ns:{/id}"`, `target: "ns:{/spec}"`), []string{typ + `target: pointer "/spec" names a property of type object`}},
		{"target through a non-object", edit(t, `target: "ns:{/id}"`, `target: "ns:{/id/x}"`), []string{typ + `target: pointer "/id/x": the property "/id" is not declared type: object`}},
		{"target unclosed brace", edit(t, `target: "ns:{/id}"`, `target: "ns:{/id"`), []string{typ + `target: unbalanced brace: "{" at byte 3 has no matching "}"`}},
		{"target stray brace", edit(t, `target: "ns:{/id}"`, `target: "ns:{/id}}"`), []string{typ + `target: unbalanced brace: "}" at byte 8 has no matching "{"`}},
		{"target nested brace", edit(t, `target: "ns:{/id}"`, `target: "ns:{/i{d}"`), []string{typ + "target: unbalanced brace", "opens inside a placeholder"}},
		{"target pointer without slash", edit(t, `target: "ns:{/id}"`, `target: "ns:{id}"`), []string{typ + `target: pointer "id" must start with "/"`}},
		{"target bad escape", edit(t, `target: "ns:{/id}"`, `target: "ns:{/i~2d}"`), []string{typ + `target: pointer "/i~2d": "~" must be followed by 0 or 1`}},
		{"checks not a list", edit(t, "    checks:\n      - dateRange: {from: /from, to: /to, maxDays: 30}\n", "    checks: {}\n"), []string{typ + "checks: must be a list"}},
		{"unknown check", edit(t, "- dateRange:", "- weekday:"), []string{typ + `checks[0]: unknown check "weekday"`}},
		{"check of two kinds", edit(t, "- dateRange: {from: /from, to: /to, maxDays: 30}", "- {dateRange: {}, weekday: {}}"), []string{typ + "checks[0]: must be a mapping of exactly one check"}},
		{"dateRange unknown key", edit(t, "maxDays: 30}", "maxDays: 30, step: 1}"), []string{typ + "checks[0].dateRange.step: unknown key"}},
		{"dateRange missing maxDays", edit(t, ", maxDays: 30}", "}"), []string{typ + "checks[0].dateRange.maxDays: missing"}},
		{"dateRange maxDays 0", edit(t, "maxDays: 30", "maxDays: 0"), []string{typ + "checks[0].dateRange.maxDays: must be from 1 to 100000, not 0"}},
		{"dateRange unknown pointer", edit(t, "from: /from,", "from: /since,"), []string{typ + `checks[0].dateRange.from: unknown pointer "/since"`}},
		{"dateRange optional pointer", edit(t, "to: /to,", "to: /opt,"), []string{typ + `checks[0].dateRange.to: optional pointer "/opt"`}},
		{"dateRange integer pointer", edit(t, "to: /to,", "to: /n,"), []string{typ + `checks[0].dateRange.to: pointer "/n" names a property of type integer; it must name a string property`}},
		{"dateRange same pointer", edit(t, "to: /to,", "to: /from,"), []string{typ + "checks[0].dateRange.to: must name another member than from"}},
		{"dateRange bad pointer", edit(t, "from: /from,", "from: from,"), []string{typ + `checks[0].dateRange.from: pointer "from" must start with "/"`}},
		{"local both", edit(t, "w-one: {go: ./w}", "w-one: {go: ./w, command: [./w]}"), []string{`defs.yaml: local "w-one": give one of go, command, node or python, not go and command`}},
		{"local node and python", edit(t, "w-one: {go: ./w}", "w-one: {node: ./dist/index.handler, python: ./app.handler}"), []string{`defs.yaml: local "w-one": give one of go, command, node or python, not node and python`}},
		{"local node without a function", edit(t, "w-one: {go: ./w}", "w-one: {node: ./dist/index}"), []string{`defs.yaml: local "w-one": node: must name a handler as Lambda does, after its directory: ./dir/file.function (got "./dist/index")`}},
		{"local python not a handler", edit(t, "w-one: {go: ./w}", "w-one: {python: ./src/}"), []string{`defs.yaml: local "w-one": python: must name a handler`}},
		{"local neither", edit(t, "w-one: {go: ./w}", "w-one: {env: {A: b}}"), []string{`defs.yaml: local "w-one": give go (a main package), command (a Lambda Runtime API program), node or python`}},
		{"local unknown key", edit(t, "w-one: {go: ./w}", "w-one: {go: ./w, image: x}"), []string{`defs.yaml: local "w-one": image: unknown key`}},
		{"local bad worker name", edit(t, "w-one: {go: ./w}", "Bad_Worker: {go: ./w}"), []string{`defs.yaml: local "Bad_Worker": worker name must match`}},
		{"local empty go", edit(t, "w-one: {go: ./w}", `w-one: {go: ""}`), []string{`defs.yaml: local "w-one": go: must not be empty`}},
		{"local empty command", edit(t, "w-one: {go: ./w}", "w-one: {command: []}"), []string{`defs.yaml: local "w-one": command: must be a non-empty list`}},
		{"local command not a list", edit(t, "w-one: {go: ./w}", "w-one: {command: ./w}"), []string{`defs.yaml: local "w-one": command: must be a non-empty list`}},
		{"local blank program", edit(t, "w-one: {go: ./w}", `w-one: {command: ["", x]}`), []string{`defs.yaml: local "w-one": command[0]: the program must not be empty`}},
		{"local bad env name", edit(t, "w-one: {go: ./w}", "w-one: {go: ./w, env: {1X: y}}"), []string{`defs.yaml: local "w-one": env.1X: variable name must match`}},
		{"local env not a mapping", edit(t, "w-one: {go: ./w}", "w-one: {go: ./w, env: [A]}"), []string{`defs.yaml: local "w-one": env: must be a mapping`}},
		{"local not a mapping", edit(t, "w-one: {go: ./w}", "w-one: ./w"), []string{`defs.yaml: local "w-one": must be a mapping`}},
		{"local section not a mapping", edit(t, "local:\n  w-one: {go: ./w}\n", "local: [w-one]\n"), []string{"defs.yaml: local: must be a mapping"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("defs.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if f != nil {
				t.Errorf("a file came back with the error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// One start-up reports every problem in the file, each on its own line.
func TestLoadErrorsAreAllReported(t *testing.T) {
	s := edit(t, "deadline: 1h", "deadline: 1x", "maxSteps: 5", "maxSteps: 0", `target: "ns:{/id}"`, `target: "ns:{/nope}"`,
		"w-one: {go: ./w}", "w-one: {}", "local:", "  - name: t.two\n    version: 0\nlocal:")
	_, err := Parse("defs.yaml", []byte(s))
	if err == nil {
		t.Fatal("accepted")
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("not joined: %T", err)
	}
	var msgs []string
	for _, e := range joined.Unwrap() {
		msgs = append(msgs, e.Error())
	}
	want := []string{
		`defs.yaml: type "t.one": deadline: "1x" is not a duration`,
		`defs.yaml: type "t.one": maxSteps: must be from 1 to 10000`,
		`defs.yaml: type "t.one": target: unknown pointer "/nope"`,
		`defs.yaml: type "t.two": description: missing`,
		`defs.yaml: type "t.two": version: must be from 1 to 2147483647`,
		`defs.yaml: type "t.two": input: missing`,
		`defs.yaml: local "w-one": give go`,
	}
	for _, w := range want {
		found := false
		for _, m := range msgs {
			found = found || strings.HasPrefix(m, w)
		}
		if !found {
			t.Errorf("no message %q in\n%s", w, strings.Join(msgs, "\n"))
		}
	}
	if errors.Unwrap(err) != nil {
		t.Error("a joined error unwraps to a list, not one error")
	}
}

// Valid spellings the format allows: JSON input, YAML anchors, optional settings, a
// constant target, a nested placeholder and an integer one.
func TestLoadAccepts(t *testing.T) {
	for name, s := range map[string]string{
		"constant target":        edit(t, `target: "ns:{/id}"`, `target: "ns:singleton"`),
		"nested and integer":     edit(t, `target: "ns:{/id}"`, `target: "ns:{/spec/region}-{/n}"`),
		"escaped pointer":        edit(t, `target: "ns:{/id}"`, `target: "ns:{/a~1b~0c}"`, "required: [id,", `required: ["a/b~c", id,`, "id: {type: string}", "id: {type: string}\n        a/b~c: {type: string}"),
		"every optional setting": edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    demo: false\n    stepDelay: 0\n    retention: 0s\n    quotaWeight: 100\n"),
		"retention bounds":       edit(t, "    maxSteps: 5\n", "    maxSteps: 5\n    retention: 1h\n"),
		"stepTimeout = deadline": edit(t, "stepTimeout: 60s", "stepTimeout: 15m", "deadline: 1h", "deadline: 15m"),
		"anchors":                edit(t, "id: {type: string}", "id: &str {type: string}", "opt: {type: string}", "opt: *str"),
		"extension keyword":      edit(t, "id: {type: string}", "id: {type: string, x-ui: {widget: text}}"),
		"no checks, no local":    strings.Split(edit(t, "    checks:\n      - dateRange: {from: /from, to: /to, maxDays: 30}\n", ""), "local:")[0],
		"command worker":         edit(t, "w-one: {go: ./w}", "w-one: {command: [python3, w.py], env: {A_1: x, B: 2}}"),
		"local for other worker": edit(t, "w-one: {go: ./w}", "w-one: {go: ./w}\n  elsewhere: {go: ./x}"),
	} {
		f, err := Parse("defs.yaml", []byte(s))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(f.Types) != 1 {
			t.Errorf("%s: %d types", name, len(f.Types))
		}
	}
	f, err := Parse("defs.yaml", []byte(edit(t, "w-one: {go: ./w}", "w-one: {command: [python3, w.py], env: {A_1: x, B: 2}}")))
	if err != nil || strings.Join(f.Local["w-one"].Command, " ") != "python3 w.py" || f.Local["w-one"].Env["B"] != "2" {
		t.Fatalf("command worker: %+v %v", f, err)
	}
	f, err = Parse("defs.yaml", []byte(edit(t, "w-one: {go: ./w}", "w-one: {node: ./dist/index.handler}\n  w-two: {python: ./src/pkg.app.handler}")))
	if err != nil || f.Local["w-one"].Node != "./dist/index.handler" || f.Local["w-two"].Python != "./src/pkg.app.handler" {
		t.Fatalf("node and python workers: %+v %v", f.Local, err)
	}
	if dir, h := SplitHandler(f.Local["w-two"].Python); dir != "./src" || h != "pkg.app.handler" {
		t.Fatalf("SplitHandler: %q %q", dir, h)
	}
	if dir, h := SplitHandler("index.handler"); dir != "." || h != "index.handler" {
		t.Fatalf("SplitHandler without a directory: %q %q", dir, h)
	}
	f, err = Parse("defs.yaml", []byte(edit(t, `target: "ns:{/id}"`, `target: "ns:singleton"`)))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"id": "a", "n": 1, "flag": true, "spec": map[string]any{"region": "r"}, "from": "2026-01-01", "to": "2026-01-02"}
	if got, err := f.Types[0].Target(in, "op_1"); err != nil || got != "ns:singleton" {
		t.Fatalf("constant target: %q %v", got, err)
	}
	// The dateRange check with maxDays 30 from the base file.
	in["to"] = "2026-02-01"
	if _, err := f.Types[0].Target(in, "op_1"); pointersOf(fieldsOf(t, err)) != "/input/to" || !strings.Contains(err.Error(), "at most 30 days") {
		t.Fatalf("31 days: %v", err)
	}
	// A date the schema does not check (no format: date) fails the check on its pointer.
	in["from"] = "soon"
	if _, err := f.Types[0].Target(in, "op_1"); pointersOf(fieldsOf(t, err)) != "/input/from" || !strings.Contains(err.Error(), "from must be a calendar date") {
		t.Fatalf("bad date: %v", err)
	}
}
