package local_test

import (
	"context"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/local"
)

// The functions read the files as one comma-separated list (LONGRUN_TYPES_FILE), so a path
// with a comma, or an empty one, would load other files than were given: Start refuses
// them before it starts anything.
func TestStartRefusesTypesFilesItCannotList(t *testing.T) {
	for _, files := range [][]string{{"a,b.types.yaml"}, {"team.types.yaml", ""}, {" "}} {
		stack, err := local.Start(context.Background(), local.Options{TypesFiles: files})
		if stack != nil {
			stack.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "TypesFiles") {
			t.Errorf("TypesFiles %q: %v, want an error naming TypesFiles", files, err)
		}
	}
}
