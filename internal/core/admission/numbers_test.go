package admission

import (
	"context"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// numberTypes is a type with numbers where its schema reads them: an integer that makes the
// target, an array of integers, and bounds that a rounded value could cross.
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

func numberService(tb testing.TB, store Store) *Service {
	tb.Helper()
	file, err := optype.Parse("numbers.types.yaml", []byte(numberTypes))
	if err != nil {
		tb.Fatal(err)
	}
	s := service(store)
	s.Registry = file.Registry(false)
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
