package optype

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// input decodes as admission does: numbers stay json.Number.
func input(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func fieldsOf(t *testing.T, err error) []problem.FieldError {
	t.Helper()
	pe := problem.As(err)
	if err == nil || pe.Code != problem.InvalidInput {
		t.Fatalf("err = %v, want invalid_input", err)
	}
	return pe.Fields
}

func fe(pointer, detail string) problem.FieldError {
	return problem.FieldError{Pointer: pointer, Detail: detail}
}

func pointersOf(fields []problem.FieldError) string {
	var pointers []string
	for _, f := range fields {
		pointers = append(pointers, f.Pointer)
	}
	return strings.Join(pointers, ",")
}

type targetCase struct {
	typ, input, target string
	bad                []string // pointers expected in the problem
}

func checkTargets(t *testing.T, r *Registry, tests []targetCase) {
	t.Helper()
	for _, tc := range tests {
		typ, ok := r.Lookup(tc.typ)
		if !ok {
			t.Fatalf("%s not registered", tc.typ)
		}
		got, err := typ.Target(input(t, tc.input), "op_x")
		if tc.bad == nil {
			if err != nil || got != tc.target {
				t.Errorf("%s %s: got %q, %v; want %q", tc.typ, tc.input, got, err, tc.target)
			}
			continue
		}
		pe := problem.As(err)
		if err == nil || pe.Code != problem.InvalidInput {
			t.Errorf("%s %s: err = %v, want invalid_input", tc.typ, tc.input, err)
			continue
		}
		if got := pointersOf(pe.Fields); got != strings.Join(tc.bad, ",") {
			t.Errorf("%s %s: fields %v, want %v", tc.typ, tc.input, pe.Fields, tc.bad)
		}
	}
}

// The built-in types accept and refuse exactly what their hand-written validators did.
func TestTargets(t *testing.T) {
	checkTargets(t, Builtin(), []targetCase{
		{"export.orders", `{"from":"2026-09-01","to":"2026-09-23"}`, "orders:2026-09-01..2026-09-23", nil},
		{"export.orders", `{"from":"2026-09-01","to":"2026-09-01"}`, "orders:2026-09-01..2026-09-01", nil},
		{"export.orders", `{"from":"2024-01-01","to":"2025-01-01"}`, "orders:2024-01-01..2025-01-01", nil}, // 366 days
		{"export.orders", `{"from":"2025-01-01","to":"2026-01-03"}`, "", []string{"/input/to"}},            // 367 days
		{"export.orders", `{"from":"2026-09-23","to":"2026-09-01"}`, "", []string{"/input/to"}},
		{"export.orders", `{"from":"2026-02-30","to":"2026-03-01"}`, "", []string{"/input/from"}},
		{"export.orders", `{"from":"2026-9-1","to":"2026-09-02"}`, "", []string{"/input/from"}},
		{"export.orders", `{"from":"2026-09-01T00:00:00Z","to":"2026-09-02"}`, "", []string{"/input/from"}},
		{"export.orders", `{"from":"2024-01-01","to":"2026-01-01"}`, "", []string{"/input/to"}},
		{"export.orders", `{"from":1,"extra":true}`, "", []string{"/input/extra", "/input/from", "/input/to"}},
		{"export.orders", `{"from":"2026-13-01","extra":1}`, "", []string{"/input/extra", "/input/from", "/input/to"}},
		// The checks run only on input the schema accepted, as the old validator returned
		// before its range checks.
		{"export.orders", `{"from":"2026-09-23","to":"2026-09-01","extra":1}`, "", []string{"/input/extra"}},
		{"export.orders", `{}`, "", []string{"/input/from", "/input/to"}},
		{"demo.task", `{"target":"  build-42 "}`, "demo:build-42", nil},
		{"demo.task", `{"target":"x","steps":20,"sleepMs":5000,"outcome":"unknown"}`, "demo:x", nil},
		{"demo.task", `{"target":"x","steps":1,"sleepMs":0,"outcome":"fail"}`, "demo:x", nil},
		{"demo.task", `{"target":"x","steps":3.0}`, "demo:x", nil},
		{"demo.task", `{"target":"x","steps":0}`, "", []string{"/input/steps"}},
		{"demo.task", `{"target":"x","steps":21}`, "", []string{"/input/steps"}},
		{"demo.task", `{"target":"x","steps":1.5}`, "", []string{"/input/steps"}},
		{"demo.task", `{"target":"x","steps":"3"}`, "", []string{"/input/steps"}},
		{"demo.task", `{"target":"x","sleepMs":-1}`, "", []string{"/input/sleepMs"}},
		{"demo.task", `{"target":"x","sleepMs":5001}`, "", []string{"/input/sleepMs"}},
		{"demo.task", `{"target":"x","outcome":"explode"}`, "", []string{"/input/outcome"}},
		{"demo.task", `{"target":"x","outcome":null}`, "", []string{"/input/outcome"}},
		{"demo.task", `{"target":"x","colour":"red"}`, "", []string{"/input/colour"}},
		{"demo.task", `{"target":7}`, "", []string{"/input/target"}},
		{"demo.task", `{"target":""}`, "", []string{"/input/target"}},
		{"demo.task", `{"target":"   "}`, "", []string{"/input/target"}},
		{"demo.task", `{"target":"a\u0007b"}`, "", []string{"/input/target"}},
		{"demo.task", `{"target":"` + strings.Repeat("x", 257) + `"}`, "", []string{"/input/target"}},
		{"demo.task", `{}`, "", []string{"/input/target"}},
	})
}

// Field details read as sentences about the member, as the hand-written validators' did.
func TestFieldDetails(t *testing.T) {
	orders, _ := Builtin().Lookup("export.orders")
	demo, _ := Builtin().Lookup("demo.task")
	for _, tc := range []struct {
		typ  Type
		in   string
		want []problem.FieldError
	}{
		{orders, `{"from":1,"extra":true}`, []problem.FieldError{
			fe("/input/extra", `"extra" is not a field of this operation type.`),
			fe("/input/from", "from must be a string, not a number."),
			fe("/input/to", "to is required."),
		}},
		{orders, `{"from":"2026-02-30","to":"2026-03-01"}`, []problem.FieldError{fe("/input/from", "from must be a calendar date written YYYY-MM-DD.")}},
		{orders, `{"from":"2026-09-23","to":"2026-09-01"}`, []problem.FieldError{fe("/input/to", "to must not be before from.")}},
		{orders, `{"from":"2024-01-01","to":"2026-01-01"}`, []problem.FieldError{fe("/input/to", "The range may span at most 366 days.")}},
		{demo, `{"target":"x","steps":0,"sleepMs":9000}`, []problem.FieldError{
			fe("/input/sleepMs", "sleepMs must be at most 5000."),
			fe("/input/steps", "steps must be at least 1."),
		}},
		{demo, `{"target":"x","steps":1.5}`, []problem.FieldError{fe("/input/steps", "steps must be an integer, not a number.")}},
		{demo, `{"target":"x","outcome":"explode"}`, []problem.FieldError{fe("/input/outcome", "outcome must be one of succeed, fail, unknown, flaky.")}},
		{demo, `{"target":""}`, []problem.FieldError{fe("/input/target", "target must not be empty.")}},
		{demo, `{"target":"x","a/b~c":1}`, []problem.FieldError{fe("/input/a~1b~0c", `"a/b~c" is not a field of this operation type.`)}},
	} {
		_, err := tc.typ.Target(input(t, tc.in), "op_x")
		got := fieldsOf(t, err)
		if len(got) != len(tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.typ.Name, tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s %s: field %d = %+v, want %+v", tc.typ.Name, tc.in, i, got[i], tc.want[i])
			}
		}
		if len(got) == 1 && problem.As(err).Detail != tc.want[0].Detail {
			t.Errorf("%s %s: detail %q", tc.typ.Name, tc.in, problem.As(err).Detail)
		}
	}
}

func TestUnknownType(t *testing.T) {
	if _, ok := Builtin().Lookup("export.Orders"); ok {
		t.Fatal("type names are exact")
	}
	if got := strings.Join(Builtin().Names(), ","); got != "demo.task,export.orders" {
		t.Fatalf("names %s", got)
	}
}

// One target, one spelling: NFC and NFD spellings of "é" are one target; characters that
// change how a target reads without being seen are refused (issue #12, low findings).
func TestTargetsAreNormalizedAndVisible(t *testing.T) {
	composed, err := NormalizeTarget("demo", "caf\u00e9")
	if err != nil {
		t.Fatal(err)
	}
	decomposed, err := NormalizeTarget("demo", "cafe\u0301")
	if err != nil || decomposed != composed {
		t.Fatalf("NFD spelling: %q %v, NFC spelling %q", decomposed, err, composed)
	}
	for name, v := range map[string]string{
		"bidi override":        "invoice\u202egpj.exe",
		"bidi isolate":         "a\u2066b",
		"left-to-right mark":   "a\u200eb",
		"zero-width space":     "ab\u200bc",
		"zero-width joiner":    "a\u200db",
		"byte order mark":      "\ufeffabc",
		"soft hyphen":          "ab\u00adc",
		"C1 control":           "a\u0085b",
		"line separator":       "a\u2028b",
		"escape":               "a\x1bb",
		"delete":               "a\x7fb",
		"arabic letter mark":   "a\u061cb",
		"word joiner":          "a\u2060b",
		"paragraph separator":  "a\u2029b",
		"tab inside the value": "a\tb",
	} {
		if got, err := NormalizeTarget("demo", v); err == nil {
			t.Errorf("%s: %q accepted as %q", name, v, got)
		}
	}
	for _, ok := range []string{"build-42", "环境/生产", "emoji-🚀", "naïve résumé"} {
		if _, err := NormalizeTarget("demo", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	// The template path goes through NormalizeTarget too.
	demo, _ := Builtin().Lookup("demo.task")
	a, errA := demo.Target(input(t, `{"target":"caf\u00e9"}`), "op_x")
	b, errB := demo.Target(input(t, `{"target":"cafe\u0301"}`), "op_x")
	if errA != nil || errB != nil || a != b || a != "demo:caf\u00e9" {
		t.Fatalf("NFC via template: %q %v, %q %v", a, errA, b, errB)
	}
	if _, err := demo.Target(input(t, `{"target":"ab\u200bc"}`), "op_x"); pointersOf(fieldsOf(t, err)) != "/input/target" {
		t.Fatalf("zero-width space via template: %v", err)
	}
}

// Targets that display alike are one target, or are refused (issue #20, item 5): every
// space character is one ASCII space and a run of them is one; compatibility forms (full-width
// letters and digits, half-width kana, ligatures) are their ordinary characters (NFKC); and a
// word that mixes scripts, where a letter of one passes for a letter of another, is refused.
// A word wholly in one script is its own target, even where it looks like a word of another.
func TestLookAlikeTargetsAreOneTargetOrRefused(t *testing.T) {
	for want, spellings := range map[string][]string{
		"build 42": {"build 42", "build\u00a042", "build\u300042", "build\u200742", "build\u202f42", "build\u205f42",
			"build\u168042", "build  42", "build \u00a0\u3000 42", "\u3000build 42\u00a0", "ｂｕｉｌｄ　４２"},
		"build42":   {"ｂｕｉｌｄ４２", "build４２"},
		"file":      {"\ufb01le"},
		"カタカナ":      {"ｶﾀｶﾅ"},
		"caf\u00e9": {"cafe\u0301", "ｃａｆé"},
	} {
		for _, v := range spellings {
			got, err := NormalizeTarget("demo", v)
			if err != nil || got != "demo:"+want {
				t.Errorf("%+q: %+q, %v; want %+q", v, got, err, "demo:"+want)
			}
		}
	}
	for name, v := range map[string]string{
		"a Cyrillic a in a Latin word":       "b\u0430d-42",
		"a Cyrillic i in a Latin word":       "bu\u0456ld 42",
		"a Greek omicron in a Latin word":    "b\u03bfx",
		"an Armenian letter in a Latin word": "b\u057dild",
		"a Latin o in a Cyrillic word":       "\u043f\u0440o\u0434",
		"a full-width Cyrillic look-alike":   "ｂ\u0430ｄ",
	} {
		if got, err := NormalizeTarget("demo", v); err == nil {
			t.Errorf("%s: %+q accepted as %+q", name, v, got)
		} else if !strings.Contains(err.Error(), "mix") {
			t.Errorf("%s: %+q: %v", name, v, err)
		}
	}
	for _, v := range []string{"shop/\u043f\u0440\u043e\u0434", "東京tower", "カタカナ漢字", "한국어abc", "\u0441\u043e\u0440",
		"naïve résumé", "emoji-🚀", "环境/生产", "\u03b1\u03b2-1", "ab_\u0430\u0431"} {
		if got, err := NormalizeTarget("demo", v); err != nil {
			t.Errorf("%+q refused: %v", v, err)
		} else if got != "demo:"+v {
			t.Errorf("%+q became %+q", v, got)
		}
	}
	// Through a type's template, a refused target names the member it came from.
	demo, _ := Builtin().Lookup("demo.task")
	if _, err := demo.Target(input(t, `{"target":"bu\u0456ld"}`), "op_x"); pointersOf(fieldsOf(t, err)) != "/input/target" {
		t.Fatalf("a mixed-script word via template: %v", err)
	}
}

// Demo types are served only where demo types are enabled (issue #12): demo.task can end
// outcome_unknown on request, which keeps its lock and quota slot.
func TestDeployedLeavesOutDemoTypesUnlessEnabled(t *testing.T) {
	for _, tc := range []struct {
		demo Demo
		want string
	}{{WithoutDemo, "export.orders"}, {WithDemo, "demo.task,export.orders"}} {
		r := Deployed(tc.demo)
		if got := strings.Join(r.Names(), ","); got != tc.want {
			t.Errorf("Deployed(%v): %s, want %s", tc.demo, got, tc.want)
		}
		if _, ok := r.Lookup("demo.task"); ok != (tc.demo == WithDemo) {
			t.Errorf("Deployed(%v) looks up demo.task: %v", tc.demo, ok)
		}
		if got := strings.Join(BuiltinFile().Registry(tc.demo).Names(), ","); got != tc.want {
			t.Errorf("BuiltinFile().Registry(%v): %s", tc.demo, got)
		}
	}
	for _, name := range Builtin().Names() {
		typ, _ := Builtin().Lookup(name)
		if typ.Demo != (name == "demo.task") {
			t.Errorf("%s: Demo %v", name, typ.Demo)
		}
	}
	if got := strings.Join(Deployed(WithoutDemo).Workers(), ","); got != "export-orders" {
		t.Errorf("Deployed(WithoutDemo) workers: %s", got)
	}
}
