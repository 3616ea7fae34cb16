package devstack

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/optype"
)

// What a types file's local section asks for is what gets built: a Go worker of another
// module on its own, a command worker not at all, longrun's own workers with longrun's
// functions; and each worker gets its section's environment, then the stack's.
func TestBuildsFollowTheLocalSection(t *testing.T) {
	dir := t.TempDir()
	file, err := optype.Parse(filepath.Join(dir, "team.types.yaml"), []byte(`
types:
  - {name: team.go, version: 1, description: A Go worker., worker: gow, deadline: 1m, stepTimeout: 10s, maxSteps: 1, target: minted, input: {type: object}}
  - {name: team.py, version: 1, description: A command worker., worker: pyw, deadline: 1m, stepTimeout: 20s, maxSteps: 1, target: minted, input: {type: object}}
local:
  gow: {go: ./gow, env: {A: "1"}}
  pyw: {command: [python3, worker.py]}
`))
	if err != nil {
		t.Fatal(err)
	}
	fns, err := functions(file, false, map[string]string{"B": "2"})
	if err != nil {
		t.Fatal(err)
	}
	root := "/src/longrun"
	own, separate := builds(append(fns, function{name: "worker-demo-task", goPkg: filepath.Join(root, "functions", "worker-demo-task")}), root)
	if got := fmt.Sprint(own); got != "[./functions/api ./functions/dispatcher ./functions/notifier ./functions/recorder ./functions/reconciler ./functions/worker-demo-task]" {
		t.Errorf("built with longrun's functions: %s", got)
	}
	if len(separate) != 1 || separate[0].name != "worker-gow" || separate[0].goPkg != filepath.Join(dir, "gow") {
		t.Errorf("built on their own: %+v", separate)
	}
	for _, f := range fns {
		switch f.name {
		case "worker-gow":
			if fmt.Sprint(f.env) != "[A=1 B=2]" || f.timeout != 10 {
				t.Errorf("%+v", f)
			}
		case "worker-pyw":
			if fmt.Sprint(f.command) != "[python3 worker.py]" || f.goPkg != dir || fmt.Sprint(f.env) != "[B=2]" || f.timeout != 20 {
				t.Errorf("%+v", f)
			}
		}
	}
	if _, err := functions(&optype.File{Path: "x.yaml", Types: file.Types}, false, nil); err == nil {
		t.Fatal("a worker without a local entry must be an error")
	}
}
