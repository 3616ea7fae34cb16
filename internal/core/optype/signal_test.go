package optype

import (
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// signalBase is a valid file of one type with three signals, written out of alphabetical
// order; each case below breaks it in one way.
const signalBase = `types:
  - name: t.sig
    version: 1
    description: A type with signals.
    worker: w-sig
    deadline: 1h
    stepTimeout: 60s
    maxSteps: 5
    target: minted
    input: {type: object}
    signals:
      review:
        senders: [tenant, operator]
        notCreator: true
        schema: {type: object}
      approval:
        senders: [caller, operator]
        callback: true
        schema:
          type: object
          additionalProperties: false
          required: [approved]
          properties:
            approved: {type: boolean}
            by: {type: string, maxLength: 20}
      note:
        senders: [tenant]
        schema: {type: object}
`

// editSignals replaces old in signalBase by new, failing the test if old is not there.
func editSignals(t *testing.T, pairs ...string) string {
	t.Helper()
	s := signalBase
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("signalBase has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func signalType(t *testing.T, yaml string) Type {
	t.Helper()
	f, err := Parse("defs.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Types) != 1 {
		t.Fatalf("%d types", len(f.Types))
	}
	return f.Types[0]
}

func signalNames(typ Type) string {
	var names []string
	for _, s := range typ.Signals {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

// A good declaration loads as written: the signals in the file's order (what discovery
// shows, and what a client reads), each with its senders, rules and schema as compact JSON
// in the file's member order. A parser that sorted, dropped a flag or reordered the schema
// would break here; so would Schema handing out the type's own bytes.
func TestSignalDeclarationsLoad(t *testing.T) {
	typ := signalType(t, signalBase)
	if got := signalNames(typ); got != "review,approval,note" {
		t.Fatalf("signals %s, want the file's order review,approval,note", got)
	}
	review, _ := typ.Signal("review")
	approval, _ := typ.Signal("approval")
	note, ok := typ.Signal("note")
	if !ok || strings.Join(senderNames(review.Senders), ",") != "tenant,operator" || !review.NotCreator || review.Callback {
		t.Fatalf("review %+v", review)
	}
	if strings.Join(senderNames(approval.Senders), ",") != "caller,operator" || approval.NotCreator || !approval.Callback {
		t.Fatalf("approval %+v", approval)
	}
	if strings.Join(senderNames(note.Senders), ",") != "tenant" || note.NotCreator || note.Callback {
		t.Fatalf("note %+v", note)
	}
	const schema = `{"type":"object","additionalProperties":false,"required":["approved"],"properties":{"approved":{"type":"boolean"},"by":{"type":"string","maxLength":20}}}`
	if got := string(approval.Schema()); got != schema {
		t.Fatalf("schema\n%s\nwant\n%s", got, schema)
	}
	approval.Schema()[0] = 'X'
	if again, _ := typ.Signal("approval"); string(again.Schema()) != schema {
		t.Fatal("Schema hands out the type's own bytes")
	}
	if _, ok := typ.Signal("missing"); ok {
		t.Fatal("a signal never declared was found")
	}
	if s, ok := (Type{}).Signal("approval"); ok || s.Name != "" {
		t.Fatalf("a type without signals has %+v", s)
	}
	// A type that declares none has none, and an empty mapping is none too.
	for _, yaml := range []string{strings.Split(signalBase, "    signals:")[0], strings.Split(signalBase, "    signals:")[0] + "    signals: {}\n"} {
		if typ := signalType(t, yaml); len(typ.Signals) != 0 {
			t.Fatalf("signals %s", signalNames(typ))
		}
	}
	// The built-in demo.task's approval, as the demo and the e2e tests send it.
	demo, _ := Builtin().Lookup("demo.task")
	if a, ok := demo.Signal("approval"); !ok || !a.Callback || !a.Allows(SenderCaller, true) || !a.Allows(SenderOperator, false) || a.Allows(SenderTenant, false) {
		t.Fatalf("demo.task approval %+v", a)
	}
}

// Signals declared on one line (a flow mapping) keep the file's order too: ordering by line
// alone would leave them in Go's map order, different on each load.
func TestSignalsOnOneLineKeepTheFilesOrder(t *testing.T) {
	yaml := strings.Split(signalBase, "    signals:")[0] +
		"    signals: {zeta: {senders: [tenant], schema: {type: object}}, alpha: {senders: [tenant], schema: {type: object}}, mid: {senders: [tenant], schema: {type: object}}, beta: {senders: [tenant], schema: {type: object}}}\n"
	for range 20 {
		if got := signalNames(signalType(t, yaml)); got != "zeta,alpha,mid,beta" {
			t.Fatalf("signals %s, want zeta,alpha,mid,beta", got)
		}
	}
}

func senderNames(senders []Sender) []string {
	var out []string
	for _, s := range senders {
		out = append(out, string(s))
	}
	return out
}

// Who may send: the roles listed, the creator as any principal of the tenant when the
// tenant may, and never the creator of a four-eyes signal. A rule that read tenant as
// "not the creator", or let an operator past notCreator, would break here.
func TestSignalAllows(t *testing.T) {
	for _, c := range []struct {
		senders    []Sender
		notCreator bool
		role       Sender
		creator    bool
		want       bool
	}{
		{[]Sender{SenderCaller}, false, SenderCaller, true, true},
		{[]Sender{SenderCaller}, false, SenderTenant, false, false},
		{[]Sender{SenderCaller}, false, SenderOperator, false, false},
		{[]Sender{SenderTenant}, false, SenderCaller, true, true}, // the creator is a principal of the tenant
		{[]Sender{SenderTenant}, false, SenderTenant, false, true},
		{[]Sender{SenderTenant}, false, SenderOperator, false, false},
		{[]Sender{SenderOperator}, false, SenderOperator, false, true},
		{[]Sender{SenderOperator}, false, SenderOperator, true, true},
		{[]Sender{SenderOperator}, false, SenderCaller, true, false},
		{[]Sender{SenderOperator}, false, SenderTenant, false, false},
		{[]Sender{SenderTenant, SenderOperator}, true, SenderCaller, true, false},
		{[]Sender{SenderTenant, SenderOperator}, true, SenderOperator, true, false}, // four eyes: not even as an operator
		{[]Sender{SenderTenant, SenderOperator}, true, SenderTenant, false, true},
		{[]Sender{SenderTenant, SenderOperator}, true, SenderOperator, false, true},
		{[]Sender{SenderCaller, SenderOperator}, true, SenderOperator, false, true},
		{nil, false, SenderCaller, true, false},
	} {
		s := Signal{Name: "x", Senders: c.senders, NotCreator: c.notCreator}
		if got := s.Allows(c.role, c.creator); got != c.want {
			t.Errorf("senders %v notCreator %v: Allows(%s, creator %v) = %v, want %v", c.senders, c.notCreator, c.role, c.creator, got, c.want)
		}
	}
}

// Every problem a signal's declaration can have stops start-up with a message naming the
// file, the type and the field under signals. A parser that let one through would serve a
// signal nobody may send, or with data nothing checks.
func TestSignalDeclarationErrors(t *testing.T) {
	const typ = `defs.yaml: type "t.sig": `
	for _, tc := range []struct {
		name string
		yaml string
		want []string // each must appear in the message
	}{
		{"signals not a mapping", editSignals(t, "    signals:\n      review:", "    signals: [review]\n    x-signals:\n      review:"), []string{typ + "signals: must be a mapping"}},
		{"bad name", editSignals(t, "      note:", "      Note_1:"), []string{typ + "signals.Note_1: the name must match ^[a-z][a-z0-9_-]{0,63}$"}},
		{"name too long", editSignals(t, "      note:", "      n"+strings.Repeat("o", 64)+":"), []string{typ + "signals.n" + strings.Repeat("o", 64) + ": the name must match"}},
		{"name with a slash", editSignals(t, "      note:", `      "no/te":`), []string{typ + "signals.no/te: the name must match"}},
		{"duplicate name", editSignals(t, "      note:", "      approval:"), []string{typ + "signals.approval: duplicate key"}},
		{"declaration not a mapping", editSignals(t, "      note:\n        senders: [tenant]\n        schema: {type: object}\n", "      note: [tenant]\n"), []string{typ + "signals.note: must be a mapping"}},
		{"missing senders", editSignals(t, "        senders: [tenant]\n", ""), []string{typ + "signals.note.senders: missing (required)"}},
		{"unknown sender", editSignals(t, "senders: [tenant]", "senders: [tenant, admin]"), []string{typ + `signals.note.senders: "admin" is not one of caller, tenant, operator`, "(line 27)"}},
		{"duplicate sender", editSignals(t, "senders: [tenant]", "senders: [tenant, tenant]"), []string{typ + `signals.note.senders: "tenant" is listed twice`}},
		{"empty senders", editSignals(t, "senders: [tenant]", "senders: []"), []string{typ + "signals.note.senders: must be a non-empty list of caller, tenant, operator"}},
		{"senders not a list", editSignals(t, "senders: [tenant]", "senders: tenant"), []string{typ + "signals.note.senders: must be a non-empty list"}},
		{"sender not a string", editSignals(t, "senders: [tenant]", "senders: [1]"), []string{typ + "signals.note.senders: must be a string"}},
		{"notCreator with only caller", editSignals(t, "senders: [tenant]", "senders: [caller]\n        notCreator: true"), []string{typ + "signals.note.notCreator: no sender is left: the caller is the creator"}},
		{"notCreator not a boolean", editSignals(t, "notCreator: true", "notCreator: yes-please"), []string{typ + "signals.review.notCreator: must be true or false"}},
		{"callback not a boolean", editSignals(t, "callback: true", "callback: 1"), []string{typ + "signals.approval.callback: must be true or false"}},
		{"missing schema", editSignals(t, "        senders: [tenant]\n        schema: {type: object}\n", "        senders: [tenant]\n"), []string{typ + "signals.note.schema: missing (required)"}},
		{"schema not an object type", editSignals(t, "        senders: [tenant]\n        schema: {type: object}\n", "        senders: [tenant]\n        schema: {type: string}\n"), []string{typ + "signals.note.schema: ", "must declare type: object"}},
		{"schema without a type", editSignals(t, "        senders: [tenant]\n        schema: {type: object}\n", "        senders: [tenant]\n        schema: {properties: {a: {type: string}}}\n"), []string{typ + "signals.note.schema: ", "must declare type: object"}},
		{"schema not a mapping", editSignals(t, "        senders: [tenant]\n        schema: {type: object}\n", "        senders: [tenant]\n        schema: [object]\n"), []string{typ + "signals.note.schema: must be a JSON Schema object"}},
		{"schema unknown keyword", editSignals(t, "by: {type: string, maxLength: 20}", "by: {type: string, maxLenght: 20}"), []string{typ + `signals.approval.schema: unknown keyword "maxLenght" at /properties/by`}},
		{"schema compile error", editSignals(t, "by: {type: string, maxLength: 20}", `by: {type: string, maxLength: "20"}`), []string{typ + "signals.approval.schema: not a valid JSON Schema"}},
		{"unknown key", editSignals(t, "        senders: [tenant]\n", "        senders: [tenant]\n        colour: red\n"), []string{typ + "signals.note.colour: unknown key (known: schema, senders, notCreator, callback)"}},
		{"misspelled key", editSignals(t, "notCreator: true", "notcreator: true"), []string{typ + "signals.review.notcreator: unknown key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("defs.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("accepted: %+v", f.Types[0].Signals)
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

// A signal's data is checked against its schema, and its field errors point into the
// request's body, which is the data itself: "/approved", not "/input/approved" nor
// "/data/approved". A signal made in Go (no schema) takes any object and nothing else.
func TestSignalValidate(t *testing.T) {
	approval, _ := signalType(t, signalBase).Signal("approval")
	for _, c := range []struct {
		data     string
		pointers string // "" when valid
	}{
		{`{"approved":true}`, ""},
		{`{"approved":false,"by":"bob"}`, ""},
		{`{"approved":"yes"}`, "/approved"},
		{`{}`, "/approved"},
		{`{"approved":true,"by":"` + strings.Repeat("b", 21) + `"}`, "/by"},
		{`{"approved":true,"extra":1}`, "/extra"},
		{`{"approved":1,"by":2}`, "/approved,/by"},
	} {
		err := approval.Validate(input(t, c.data))
		if c.pointers == "" {
			if err != nil {
				t.Errorf("%s: %v", c.data, err)
			}
			continue
		}
		if got := pointersOf(fieldsOf(t, err)); got != c.pointers {
			t.Errorf("%s: pointers %s, want %s (%v)", c.data, got, c.pointers, err)
		}
	}
	bad := approval.Validate(input(t, `{"approved":"yes"}`))
	if fields := fieldsOf(t, bad); len(fields) != 1 || fields[0] != fe("/approved", "approved must be a boolean, not a string.") {
		t.Fatalf("fields %+v", fields)
	}
	var inGo Signal
	if err := inGo.Validate(map[string]any{"anything": 1}); err != nil {
		t.Fatalf("a signal without a schema refused an object: %v", err)
	}
	for _, notObject := range []any{nil, "x", []any{}} {
		err := inGo.Validate(notObject)
		if pe := problem.As(err); err == nil || pe.Code != problem.InvalidInput || pointersOf(pe.Fields) != "" || len(pe.Fields) != 1 {
			t.Errorf("%v: %v", notObject, err)
		}
	}
}
