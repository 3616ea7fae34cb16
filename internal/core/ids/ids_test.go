package ids

import (
	"bytes"
	"crypto/rand"
	"sort"
	"testing"
	"time"
)

func TestOperationIDsSortByTimeAndAreValid(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	g := &Generator{Now: func() time.Time { return now }, Entropy: rand.Reader}
	var got []string
	for i := 0; i < 100; i++ {
		now = now.Add(time.Millisecond)
		id := g.Operation()
		if !Valid("op_", id) {
			t.Fatalf("invalid id %q", id)
		}
		got = append(got, id)
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("ids minted later must sort later")
	}
}

func TestEncodeKnownValue(t *testing.T) {
	// All-zero entropy at a known instant: the time part must encode the milliseconds.
	now := time.UnixMilli(1469918176385) // ULID spec example: 01ARYZ6S41
	g := &Generator{Now: func() time.Time { return now }, Entropy: bytes.NewReader(make([]byte, 10))}
	if got := g.Operation(); got != "op_01ARYZ6S410000000000000000" {
		t.Fatalf("got %s", got)
	}
}

func TestValidRejects(t *testing.T) {
	for _, s := range []string{"", "op_", "op_01ARYZ6S41000000000000000", "op_01ARYZ6S41000000000000000I", "xx_01ARYZ6S410000000000000000", "op_81ARYZ6S410000000000000000", "op_01aryz6s410000000000000000"} {
		if Valid("op_", s) {
			t.Errorf("%q accepted", s)
		}
	}
}
