package devstack

import (
	_ "embed"
	"path/filepath"

	"github.com/longrun-dev/longrun/internal/core/optype"
)

// The local stack's managed runtimes: a Node.js or Python worker of a types file is a
// handler, "<dir>/<file>.<function>", which these call as AWS's managed runtimes would,
// over the Lambda Runtime API the stack gives every function. Written here because the
// one AWS publishes for Node.js (aws-lambda-ric) builds a native addon, and none for Python
// installs without a package index; these need nothing but node and python3.
var (
	//go:embed runtimes/node.mjs
	nodeRuntime string
	//go:embed runtimes/python.py
	pythonRuntime string
)

// managedRuntime is the command that runs w's handler, and the directory it runs in (the
// types file's).
func managedRuntime(w optype.LocalWorker) (argv []string, dir string) {
	if w.Node != "" {
		return []string{"node", "--input-type=module", "-e", nodeRuntime}, w.Dir
	}
	return []string{"python3", "-u", "-c", pythonRuntime}, w.Dir
}

// managedRuntimeEnv is what Lambda tells a managed runtime about the handler: the
// directory the code is in (LAMBDA_TASK_ROOT) and the handler under it (_HANDLER).
func managedRuntimeEnv(w optype.LocalWorker) []string {
	entry := w.Node
	if entry == "" {
		entry = w.Python
	}
	dir, handler := optype.SplitHandler(entry)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(w.Dir, dir)
	}
	return []string{"LAMBDA_TASK_ROOT=" + dir, "_HANDLER=" + handler}
}
