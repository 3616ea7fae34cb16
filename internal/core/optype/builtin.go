package optype

import (
	_ "embed"
	"maps"
	"slices"
	"sync"
)

// builtinPath is where the built-in definitions live in the repository. It names the file
// in messages, and its directory is the local workers' Dir: relative to the module root,
// where the local stack runs.
const builtinPath = "internal/core/optype/builtin.types.yaml"

//go:embed builtin.types.yaml
var builtinYAML []byte

var builtinFile = sync.OnceValue(func() *File {
	f, err := Parse(builtinPath, builtinYAML)
	if err != nil {
		panic("optype: the embedded built-in definitions are invalid: " + err.Error())
	}
	return f
})

// BuiltinFile returns the embedded built-in definitions (a copy: callers may change it).
func BuiltinFile() *File {
	f := builtinFile()
	local := maps.Clone(f.Local)
	for name, w := range local {
		w.Command, w.Env = slices.Clone(w.Command), maps.Clone(w.Env)
		local[name] = w
	}
	return &File{Path: f.Path, Types: slices.Clone(f.Types), Local: local}
}

// Builtin returns the registry of every built-in type, demo types included: what tests and
// the local stack run. A deployed function takes Deployed's registry instead.
func Builtin() *Registry { return Deployed(WithDemo) }

// Deployed returns the registry a deployment serves: the built-in types, the demo types
// (Type.Demo) only WithDemo. The functions read demo from LONGRUN_DEMO_TYPES
// (internal/aws/config), which the CDK stack sets to true on dev stages only.
func Deployed(demo Demo) *Registry { return builtinFile().Registry(demo) }
