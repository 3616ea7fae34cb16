package httpapi

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/intent"
	"github.com/longrun-dev/longrun/internal/core/operation"
)

// Who sees which operation (docs/security.md, "Visibility"): an operator sees every
// tenant's, to read (GET, history) and to cancel; anyone else only those of its own scope
// (owns). Resolving is for operators only, and a signal's declaration says who may send it.

// sees is the visibility rule for the caller of ev.
func (h *Handler) sees(ev events.APIGatewayProxyRequest, scope admission.Scope) intent.Visible {
	if h.Callers.IsOperator(ev.RequestContext) {
		return everyone
	}
	return owns(scope)
}

// everyone sees every operation: an operator's visibility.
func everyone(operation.Operation) bool { return true }
