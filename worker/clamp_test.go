package worker

import (
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/runes"
)

// The worker package imports nothing of longrun's internal packages, so it keeps its own
// copy of runes.Cut: a Go worker's text must be cut exactly as longrun cuts a report's, and
// this holds the two to one behaviour.
func TestClampCutsAsLongrunDoes(t *testing.T) {
	texts := []string{"", "short", strings.Repeat("é", 300), strings.Repeat("😀", 2100), "a\xffb\xfe" + strings.Repeat("x", 250), strings.Repeat("ab", 1000) + "é"}
	for _, s := range texts {
		for _, limit := range []int{1, 2, 3, 10, MaxTitleChars, MaxMessageChars, MaxDetailChars} {
			if got, want := clamp(s, limit), runes.Cut(s, limit); got != want {
				t.Fatalf("clamp(%.20q…, %d) = %.40q…, runes.Cut gives %.40q…", s, limit, got, want)
			}
		}
	}
}
