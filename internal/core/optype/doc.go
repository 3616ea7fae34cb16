// Package optype is the registry of operation types. A type is data, loaded from a
// definitions file: its version (template revision), the JSON Schema of its input, generic
// cross-field checks, how its canonical target is derived, which worker runs it and its
// limits. No type has code of its own here, so adding one is a file change, and the built-in
// types (builtin.types.yaml, embedded) are defined the same way. Target normalization lives
// here and nowhere else (NormalizeTarget).
//
// # Definitions file
//
// YAML (so JSON too), one document, decoded strictly: an unknown or repeated key is an
// error naming it.
//
//	types:
//	  - name: demo.task        # ^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)*$, at most 64 bytes, unique
//	    version: 1             # integer >= 1, part of the admission fingerprint
//	    description: ...       # required, not blank
//	    demo: true             # optional: served only where demo types are enabled
//	    worker: demo-task      # ^[a-z][a-z0-9-]{0,39}$
//	    deadline: 1h           # Go duration, whole seconds, > 0, <= 8760h
//	    stepTimeout: 60s       # whole seconds, > 0, <= 15m, <= deadline
//	    maxSteps: 20           # 1..10000
//	    stepDelay: 1s          # optional (0): whole seconds, >= 0, < deadline
//	    retention: 24h         # optional (0: the deployment default); else 1h..8760h
//	    quotaWeight: 1         # optional (1): 1..100 quota slots per operation
//	    target: "demo:{/target}"  # <namespace>:<template>, or minted
//	    input: {type: object, ...} # JSON Schema 2020-12; the root declares type: object
//	    checks:                # optional cross-field rules
//	      - dateRange: {from: /from, to: /to, maxDays: 366}
//	local:                     # optional: how the local stack runs each worker
//	  demo-task: {go: ./functions/worker-demo-task}   # a main package, relative to the file
//	  other: {command: [python3, worker.py], env: {K: V}}  # or a Lambda Runtime API program
//
// The input schema asserts formats (format: date is enforced), loads nothing from outside
// the file (a $ref points into the schema itself), and may use only 2020-12 keywords or
// extension keys starting "x-", since JSON Schema silently ignores a misspelled keyword.
// Every property default must satisfy its property's schema.
//
// A target template's namespace matches ^[a-z][a-z0-9.-]*$; each {<RFC 6901 pointer>} is
// replaced by the input's value there (a string, or an integer in decimal), and the whole
// value goes through NormalizeTarget. So that the value is always there, each pointer must
// name a property declared under properties and listed in required at every level, and
// declared type string or integer (a $ref is not followed). A template without placeholders
// is a constant target: one operation of the type at a time. "minted" makes the target
// "<type>:<operation id>".
//
// dateRange's from and to name required string properties the same way; at admission, on
// input the schema accepted, both must be calendar dates (YYYY-MM-DD), to not before from,
// and at most maxDays (1..100000) apart.
package optype
