package recorder

// NextExecution names the execution that goes on with an operation's work after a Run
// hands it back (Executions, and the reconciler's Continue), so that which of the type's
// state machines it runs on reads as a field, not as a bare bool beside two strings.
type NextExecution struct {
	// Workflow is the type's worker, whose state machines the execution runs on.
	Workflow string
	// Resume puts the execution on the workflow's resume state machine, which waits first
	// (the worker asked to wait); otherwise it runs on the workflow's own.
	Resume bool
	// Name is the execution's name: the operation's id and the count of its executions.
	Name string
}
