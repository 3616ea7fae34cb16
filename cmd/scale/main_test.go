package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A short run of the scale model, in the quota-faithful mode and with longrun's processes
// killed (not the worker's: a step it was running ends outcome_unknown by the contract,
// which make scale counts apart), so that make test proves the promises under quotas: nothing accepted is lost, nothing ends
// other than as its worker said, and every answer is linearizable. Its stack takes free
// ports.
func TestAShortScaleModelKeepsThePromises(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	code := run(ctx, []string{"-duration", "20s", "-rate", "1", "-kill-every", "5s", "-drain", "10m", "-kill-workers=false",
		"-log", filepath.Join(t.TempDir(), "scale.log")}, &out, false)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	t.Log(out.String())
	var admitted, terminal int
	if _, err := fmt.Sscanf(last, "scale: admitted %d terminal %d", &admitted, &terminal); err != nil || code != 0 ||
		admitted < 15 || terminal != admitted || !strings.Contains(last, " lost 0 misclassified 0 ") ||
		!strings.HasSuffix(last, " linearizable yes") || !strings.Contains(out.String(), "kills map[") {
		t.Fatalf("exit %d, last line %q (%v)", code, last, err)
	}
}
