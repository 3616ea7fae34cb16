package ids

import (
	"crypto/rand"
	"testing"
	"time"
)

// An id minted at t starts with TimePrefix(t) and reads back as t to the millisecond; ids
// minted a millisecond earlier sort below the prefix, a millisecond later above.
func TestTimePrefixBoundsIDsByTime(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 123_456_789, time.UTC)
	mint := func(t time.Time) string {
		return (&Generator{Now: func() time.Time { return t }, Entropy: rand.Reader}).Operation()
	}
	for range 50 {
		id := mint(at)
		if got := id[3:13]; got != TimePrefix(at) {
			t.Fatalf("%s does not start with %s", id, TimePrefix(at))
		}
		if m, ok := Minted("op_", id); !ok || !m.Equal(at.Truncate(time.Millisecond)) {
			t.Fatalf("Minted(%s) = %v %v, want %v", id, m, ok, at.Truncate(time.Millisecond))
		}
		if before := mint(at.Add(-time.Millisecond)); before >= "op_"+TimePrefix(at) {
			t.Fatalf("%s, minted a millisecond before, is not below the prefix %s", before, TimePrefix(at))
		}
		if after := mint(at.Add(time.Millisecond)); after <= "op_"+TimePrefix(at)+"ZZZZZZZZZZZZZZZZ" {
			t.Fatalf("%s, minted a millisecond after, is not above every id of %s", after, TimePrefix(at))
		}
	}
	if got := TimePrefix(time.UnixMilli(1469918176385)); got != "01ARYZ6S41" { // the ULID spec's example
		t.Fatalf("TimePrefix = %s", got)
	}
	if got := TimePrefix(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)); got != "0000000000" {
		t.Fatalf("before 1970: %s", got)
	}
	if got := TimePrefix(time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC)); got != "7ZZZZZZZZZ" {
		t.Fatalf("past the range: %s", got)
	}
	if _, ok := Minted("op_", "op_nope"); ok {
		t.Fatal("Minted accepted an invalid id")
	}
}
