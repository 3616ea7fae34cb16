package api_test

import (
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/runes"
	"github.com/longrun-dev/longrun/worker"
)

// The worker module imports nothing of longrun's, so it keeps its own copy of runes.Cut: a
// Go worker's text must be cut exactly as the recorder cuts a report's, and this holds the
// two to one behaviour at each limit the protocol sets (api/worker/vectors holds the other
// SDKs to it).
func TestTheGoWorkerCutsTextAsTheRecorderDoes(t *testing.T) {
	texts := []string{"", "short", strings.Repeat("é", 300), strings.Repeat("😀", 2100), "a\xffb\xfe" + strings.Repeat("x", 250), strings.Repeat("ab", 1000) + "é"}
	for _, s := range texts {
		p := worker.Fail("failed", s, s).Problem()
		if want := runes.Cut(s, worker.MaxTitleChars); p.Title != want {
			t.Fatalf("title %.20q…: %.40q…, runes.Cut gives %.40q…", s, p.Title, want)
		}
		if want := runes.Cut(s, worker.MaxDetailChars); p.Detail != want {
			t.Fatalf("detail %.20q…: %.40q…, runes.Cut gives %.40q…", s, p.Detail, want)
		}
		m := worker.Continue(nil).WithProgress(worker.Progress{Message: s}).Progress().Message
		if want := runes.Cut(s, worker.MaxMessageChars); m != want {
			t.Fatalf("message %.20q…: %.40q…, runes.Cut gives %.40q…", s, m, want)
		}
	}
}
