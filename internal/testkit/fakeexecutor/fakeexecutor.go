// Package fakeexecutor is an in-memory executor with the semantics that matter to
// dispatch (one execution per name, ErrAlreadyStarted on a second start) and hooks to
// inject faults. Its references look like real Step Functions ARNs on purpose, so tests
// can prove none reaches a client.
package fakeexecutor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// Execution is one started execution.
type Execution struct {
	Workflow, Name, Ref string
	Input               []byte
	Stopped             bool
	Cause               string
	// Status and Output are what Describe reports; a new execution is RUNNING.
	Status reconcile.Status
	Output []byte
}

// Executor records executions. The zero value is ready to use.
type Executor struct {
	mu         sync.Mutex
	executions map[string]*Execution
	starts     int
	// BeforeStart, when set, runs before each start; an error fails the call (as a crash or
	// a throttled API would) without starting anything.
	BeforeStart func(name string) error
	// AfterStart, when set, runs after an execution was created, before Start returns; an
	// error is returned to the caller although the execution exists (a lost response).
	AfterStart func(name string) error
}

// Ref is the reference the fake hands out for an execution name: shaped like an ARN.
func Ref(workflow, name string) string {
	return fmt.Sprintf("arn:aws:states:us-east-1:123456789012:execution:longrun-%s:%s", workflow, name)
}

func (e *Executor) Start(_ context.Context, workflow, name string, input []byte) (string, error) {
	if e.BeforeStart != nil {
		if err := e.BeforeStart(name); err != nil {
			return "", err
		}
	}
	e.mu.Lock()
	e.starts++
	if e.executions == nil {
		e.executions = map[string]*Execution{}
	}
	if ex, ok := e.executions[name]; ok {
		e.mu.Unlock()
		return ex.Ref, dispatch.ErrAlreadyStarted
	}
	ex := &Execution{Workflow: workflow, Name: name, Ref: Ref(workflow, name), Input: input, Status: reconcile.Running}
	e.executions[name] = ex
	e.mu.Unlock()
	if e.AfterStart != nil {
		if err := e.AfterStart(name); err != nil {
			return "", err
		}
	}
	return ex.Ref, nil
}

func (e *Executor) Stop(_ context.Context, ref, cause string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ex := range e.executions {
		if ex.Ref == ref {
			ex.Stopped, ex.Cause = true, cause
			if ex.Status == reconcile.Running {
				ex.Status = reconcile.Aborted
			}
		}
	}
	return nil
}

// Describe reports an execution by name (MISSING when there is none).
func (e *Executor) Describe(_ context.Context, _, name string) (reconcile.Execution, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ex, ok := e.executions[name]
	if !ok {
		return reconcile.Execution{Status: reconcile.Missing}, nil
	}
	return reconcile.Execution{Ref: ex.Ref, Status: ex.Status, Output: ex.Output}, nil
}

// DescribeRef reports an execution by reference (MISSING when there is none).
func (e *Executor) DescribeRef(_ context.Context, ref string) (reconcile.Execution, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ex := range e.executions {
		if ex.Ref == ref {
			return reconcile.Execution{Ref: ex.Ref, Status: ex.Status, Output: ex.Output}, nil
		}
	}
	return reconcile.Execution{Ref: ref, Status: reconcile.Missing}, nil
}

// Continue starts the execution that carries on an operation's work, as the reconciler
// does: on workflow's resume state machine (workflow + "-resume") when resume. One of that
// name already there is described instead (started false).
func (e *Executor) Continue(ctx context.Context, next recorder.NextExecution, input []byte) (reconcile.Execution, bool, error) {
	workflow := next.Workflow
	if next.Resume {
		workflow += "-resume"
	}
	ref, err := e.Start(ctx, workflow, next.Name, input)
	switch {
	case errors.Is(err, dispatch.ErrAlreadyStarted):
		ex, err := e.DescribeRef(ctx, ref)
		return ex, false, err
	case err != nil:
		return reconcile.Execution{}, false, err
	}
	return reconcile.Execution{Ref: ref, Status: reconcile.Running}, true, nil
}

// Finish sets what Describe will report for an execution, as if it had ended.
func (e *Executor) Finish(name string, status reconcile.Status, output []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ex, ok := e.executions[name]; ok {
		ex.Status, ex.Output = status, output
	}
}

// Executions returns the executions by name.
func (e *Executor) Executions() map[string]Execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]Execution{}
	for k, v := range e.executions {
		out[k] = *v
	}
	return out
}

// Starts counts Start calls, including those that found an existing execution.
func (e *Executor) Starts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.starts
}
