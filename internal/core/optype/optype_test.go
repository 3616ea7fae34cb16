package optype

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

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

func TestTargets(t *testing.T) {
	r := Builtin()
	tests := []struct {
		typ, input, target string
		bad                []string // pointers expected in the problem
	}{
		{"export.orders", `{"from":"2026-09-01","to":"2026-09-23"}`, "orders:2026-09-01..2026-09-23", nil},
		{"export.orders", `{"from":"2026-09-01","to":"2026-09-01"}`, "orders:2026-09-01..2026-09-01", nil},
		{"export.orders", `{"from":"2026-09-23","to":"2026-09-01"}`, "", []string{"/input/to"}},
		{"export.orders", `{"from":"2026-02-30","to":"2026-03-01"}`, "", []string{"/input/from"}},
		{"export.orders", `{"from":"2024-01-01","to":"2026-01-01"}`, "", []string{"/input/to"}},
		{"export.orders", `{"from":1,"extra":true}`, "", []string{"/input/extra", "/input/from", "/input/to"}},
		{"demo.task", `{"target":"  build-42 "}`, "demo:build-42", nil},
		{"demo.task", `{"target":"x","steps":20,"sleepMs":5000,"outcome":"unknown"}`, "demo:x", nil},
		{"demo.task", `{"target":"x","steps":3.0}`, "demo:x", nil},
		{"demo.task", `{"target":"x","steps":0}`, "", []string{"/input/steps"}},
		{"demo.task", `{"target":"x","steps":21}`, "", []string{"/input/steps"}},
		{"demo.task", `{"target":"x","steps":1.5}`, "", []string{"/input/steps"}},
		{"demo.task", `{"target":"x","sleepMs":-1}`, "", []string{"/input/sleepMs"}},
		{"demo.task", `{"target":"x","outcome":"explode"}`, "", []string{"/input/outcome"}},
		{"demo.task", `{"target":""}`, "", []string{"/input/target"}},
		{"demo.task", `{"target":"a\u0007b"}`, "", []string{"/input/target"}},
		{"demo.task", `{"target":"` + strings.Repeat("x", 257) + `"}`, "", []string{"/input/target"}},
		{"demo.task", `{}`, "", []string{"/input/target"}},
	}
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
		var pointers []string
		for _, f := range pe.Fields {
			pointers = append(pointers, f.Pointer)
		}
		if strings.Join(pointers, ",") != strings.Join(tc.bad, ",") {
			t.Errorf("%s %s: fields %v, want %v", tc.typ, tc.input, pointers, tc.bad)
		}
	}
}

func TestMintedTarget(t *testing.T) {
	typ := Type{Name: "sandbox.session", Version: 1, MintsTarget: true, validate: func(map[string]any) (string, []problem.FieldError) { return "", nil }}
	got, err := typ.Target(map[string]any{}, "op_01ARYZ6S410000000000000000")
	if err != nil || got != "sandbox.session:op_01ARYZ6S410000000000000000" {
		t.Fatalf("got %q %v", got, err)
	}
}

func TestDecodeDemoTaskDefaults(t *testing.T) {
	in, err := DecodeDemoTask(json.RawMessage(`{"target":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if in != (DemoTaskInput{Target: "x", Steps: 1, SleepMs: 0, Outcome: "succeed"}) {
		t.Fatalf("got %+v", in)
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
}

// Demo types are served only where demo types are enabled (issue #12): demo.task can end
// outcome_unknown on request, which keeps its lock and quota slot.
func TestDeployedLeavesOutDemoTypesUnlessEnabled(t *testing.T) {
	for _, tc := range []struct {
		demo bool
		want string
	}{{false, "export.orders"}, {true, "demo.task,export.orders"}} {
		r := Deployed(tc.demo)
		if got := strings.Join(r.Names(), ","); got != tc.want {
			t.Errorf("Deployed(%v): %s, want %s", tc.demo, got, tc.want)
		}
		if _, ok := r.Lookup("demo.task"); ok != tc.demo {
			t.Errorf("Deployed(%v) looks up demo.task: %v", tc.demo, ok)
		}
	}
	for _, name := range Builtin().Names() {
		typ, _ := Builtin().Lookup(name)
		if typ.Demo != (name == "demo.task") {
			t.Errorf("%s: Demo %v", name, typ.Demo)
		}
	}
}
