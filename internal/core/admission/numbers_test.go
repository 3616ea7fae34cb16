package admission

import (
	"context"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/jcs"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

func numberService(tb testing.TB, store Store) *Service {
	tb.Helper()
	file, err := optype.Load("testdata/numbers.types.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	s := service(store)
	s.Registry = file.Registry(optype.WithoutDemo)
	return s
}

func admitBody(s *Service, body string) error {
	_, err := s.Admit(context.Background(), Request{Scope: Scope{"acme", "alice"}, Key: "k",
		MediaType: "application/json", Body: []byte(body)})
	return err
}

// The body of issue #20: 300 numbers of a huge negative exponent in an integer array, 3 KiB,
// which took 9.8 s on the local stack. It is refused at its first number, as it is parsed.
func BenchmarkHugeExponentsAreRefused(b *testing.B) {
	s := numberService(b, &fakeStore{})
	body := `{"type":"account.sync","input":{"id":1,"ids":[` + strings.TrimSuffix(strings.Repeat("1e-999999,", 300), ",") + `]}}`
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := admitBody(s, body); problem.CodeOf(err) != problem.InvalidInput {
			b.Fatalf("admitted, or refused otherwise: %v", err)
		}
	}
}

// One value reaches the schema, the target and the worker (issue #20, item 4): what admission
// stores is what a worker gets, and that input, validated again, makes the same target. A
// number that reads as an integer must be exactly that integer, whatever its spelling; a
// fraction is read as the double it rounds to, and the schema judges that double.
func TestOneValueReachesTheSchemaTheTargetAndTheWorker(t *testing.T) {
	for _, tc := range []struct {
		input   string
		target  string // "" = refused at pointer
		stored  string
		pointer string
	}{
		{`{"id":9007199254740993.0}`, "", "", "/input/id"},
		{`{"id":9.007199254740993e15}`, "", "", "/input/id"},
		{`{"id":90071992547409930e-1}`, "", "", "/input/id"},
		{`{"id":9007199254740993}`, "", "", "/input/id"},
		{`{"id":9007199254740992.5}`, "", "", "/input/id"}, // a fraction that reads as an integer
		{`{"id":1,"ids":[2,0.99999999999999999]}`, "", "", "/input/ids/1"},
		{`{"id":1,"weight":1.0000000000000001e30}`, "", "", "/input/weight"},
		{`{"id":1,"ratio":0.29999999999999999}`, "", "", "/input/ratio"}, // the double of 0.3, not less than 0.3
		{`{"id":9007199254740992.0}`, "acct:9007199254740992", `{"id":9007199254740992}`, ""},
		{`{"id":9007199254740991,"ids":[-9007199254740991]}`, "acct:9007199254740991", `{"id":9007199254740991,"ids":[-9007199254740991]}`, ""},
		{`{"id":1e30}`, "acct:1000000000000000000000000000000", `{"id":1e+30}`, ""},
		{`{"id":-0.0,"ratio":0.2999999999999999,"weight":5e-324}`, "acct:0", `{"id":0,"ratio":0.2999999999999999,"weight":5e-324}`, ""},
		{`{"id":20e-1,"weight":333333333.33333329}`, "acct:2", `{"id":2,"weight":333333333.3333333}`, ""},
	} {
		store := &fakeStore{}
		s := numberService(t, store)
		err := admitBody(s, `{"type":"account.sync","input":`+tc.input+`}`)
		if tc.target == "" {
			pe := problem.As(err)
			if err == nil || pe.Code != problem.InvalidInput || len(pe.Fields) != 1 || pe.Fields[0].Pointer != tc.pointer {
				t.Errorf("%s: %v (%+v), want invalid_input at %s", tc.input, err, pe.Fields, tc.pointer)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.input, err)
			continue
		}
		a := store.got[0].First.Admission
		if a.Target != tc.target || string(a.Input) != tc.stored {
			t.Errorf("%s: target %s, stored %s; want %s, %s", tc.input, a.Target, a.Input, tc.target, tc.stored)
		}
		typ, _ := s.Registry.Lookup("account.sync")
		worker, err := typ.WithDefaults(a.Input)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := jcs.Parse(worker)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := typ.Target(parsed.(map[string]any), "op_x"); err != nil || again != a.Target {
			t.Errorf("%s: the worker's input %s makes target %q, %v; admission's is %q", tc.input, worker, again, err, a.Target)
		}
	}
}

// The most exact-value work an accepted body can ask for: as many numbers as 64 KiB holds,
// each spelled otherwise than its canonical form and as large as a double goes, so each is
// compared exactly with what it reads as, and the schema reads each again.
func BenchmarkLargestNumbersAreAdmitted(b *testing.B) {
	s := numberService(b, &fakeStore{})
	body := `{"type":"account.sync","input":{"id":1,"ids":[`
	n := (MaxBodyBytes - len(body) - 4) / len("1.0e300,")
	body += strings.TrimSuffix(strings.Repeat("1.0e300,", n), ",") + `]}}`
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := admitBody(s, body); err != nil {
			b.Fatal(err)
		}
	}
}
