package eventfilter

import (
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
)

func record(event, sk, kind string) []byte {
	return []byte(`{"eventName":"` + event + `","dynamodb":{"NewImage":{"pk":{"S":"OP#op_1"},"sk":{"S":"` + sk + `"},"kind":{"S":"` + kind + `"}}}}`)
}

func TestOutboxFilter(t *testing.T) {
	p, err := Compile(dynamo.OutboxFilter)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rec  []byte
		want bool
	}{
		{record("INSERT", "FACT#00000001", "accepted"), true},
		{record("MODIFY", "FACT#00000001", "accepted"), false},
		{record("INSERT", "FACT#00000002", "dispatched"), false},
		{record("INSERT", "META", "accepted"), false},
		{[]byte(`{"eventName":"INSERT","dynamodb":{"NewImage":{"sk":{"S":"IDEM"}}}}`), false},
		{[]byte(`{"eventName":"REMOVE","dynamodb":{"OldImage":{}}}`), false},
		{[]byte(`not json`), false},
	}
	for _, tc := range tests {
		if got := p.Match(tc.rec); got != tc.want {
			t.Errorf("%s: %v", tc.rec, got)
		}
	}
}

func TestProjectionFilterAndNumbers(t *testing.T) {
	p, err := Compile(dynamo.ProjectionFilter)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Match(record("MODIFY", "META", "")) || !p.Match(record("INSERT", "META", "")) ||
		p.Match(record("INSERT", "FACT#00000003", "succeeded")) || p.Match(record("REMOVE", "META", "")) {
		t.Fatal("projection filter")
	}
	n, _ := Compile(`{"size":[1, 2.5]}`)
	if !n.Match([]byte(`{"size":2.5}`)) || n.Match([]byte(`{"size":3}`)) || n.Match([]byte(`{}`)) {
		t.Fatal("numbers")
	}
}

func TestUnsupportedOperatorsAreRejected(t *testing.T) {
	for _, p := range []string{`{"a":[{"numeric":[">",1]}]}`, `{"a":[{"anything-but":"x"}]}`, `{"a":"x"}`, `[]`} {
		if _, err := Compile(p); err == nil {
			t.Errorf("%s compiled", p)
		}
	}
}
