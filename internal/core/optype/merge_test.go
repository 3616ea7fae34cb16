package optype

import (
	"strings"
	"testing"
)

func TestMergeRefusesATypeDefinedTwice(t *testing.T) {
	extra, err := Parse("extra.types.yaml", []byte(`
types:
  - name: extra.one
    version: 1
    description: One more.
    worker: extra
    deadline: 1m
    stepTimeout: 10s
    maxSteps: 1
    target: minted
    input: {type: object}
local:
  extra: {command: [./extra]}
`))
	if err != nil {
		t.Fatal(err)
	}
	merged, err := Merge(BuiltinFile(), extra)
	if err != nil {
		t.Fatal(err)
	}
	if r := merged.Registry(WithDemo); len(r.Names()) != 3 || merged.Local["extra"].Command[0] != "./extra" || merged.Local["demo-task"].Go == "" {
		t.Fatalf("merged %v %+v", r.Names(), merged.Local)
	}
	_, err = Merge(BuiltinFile(), extra, BuiltinFile())
	if err == nil || !strings.Contains(err.Error(), builtinPath+`: type "demo.task": name: already defined in `+builtinPath) ||
		!strings.Contains(err.Error(), `local "demo-task": already defined`) {
		t.Fatalf("%v", err)
	}
	if _, err := LoadAll(); err == nil {
		t.Fatal("no files")
	}
	if _, err := LoadAll("testdata/missing.types.yaml"); err == nil || !strings.Contains(err.Error(), "missing.types.yaml") {
		t.Fatalf("a missing file: %v", err)
	}
}
