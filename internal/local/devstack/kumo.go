package devstack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
)

// kumoSelf is where kumo's services call one another, a constant of kumo's (v0.33.1 reads
// no setting for Step Functions').
const kumoSelf = "localhost:4566"

// kumoTransport is net/http's DefaultTransport with one change: connections to kumoSelf go
// to the edge of this process's stack. kumo's services make their calls to one another
// (Step Functions → Lambda and SQS, EventBridge → SQS, Lambda's asynchronous invocations)
// with clients on DefaultTransport, and those services belong to the process (they register
// as kumo's packages initialize), so this transport does too: the first stack on another
// port than 4566 installs it, and each stack points it at its edge while it runs. Without
// it, a stack on a free port would have its workflows invoke the functions of whichever
// stack owns 4566, another checkout's `make run` for one.
type kumoTransport struct {
	*http.Transport
	edge atomic.Pointer[string]
}

// sendKumoCallsTo sends kumo's calls to one another to edge (host:port).
func sendKumoCallsTo(edge string) error {
	if kt, ok := http.DefaultTransport.(*kumoTransport); ok {
		kt.edge.Store(&edge)
		return nil
	}
	if edge == EdgeAddr {
		return nil // where kumo calls anyway
	}
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return fmt.Errorf("devstack: net/http's DefaultTransport is a %T, so kumo's calls to %s cannot be sent to the edge on %s; use the edge address %s",
			http.DefaultTransport, kumoSelf, edge, EdgeAddr)
	}
	kt := &kumoTransport{Transport: base.Clone()}
	kt.edge.Store(&edge)
	dial := kt.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	kt.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == kumoSelf {
			addr = *kt.edge.Load()
		}
		return dial(ctx, network, addr)
	}
	// Written once per process, before the stack starts anything that makes HTTP calls.
	http.DefaultTransport = kt
	return nil
}
