package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// The operators' views across tenants (api/openapi.yaml, tag operator): the attention queue
// and the stats. Both answer 403 forbidden to anyone else, before reading anything.
const (
	attentionPath = "/v1/attention"
	statsPath     = "/v1/stats"
)

// AttentionQuery asks for one page of the operations waiting for an operator, every
// tenant's, oldest first.
type AttentionQuery struct {
	Limit  int
	Cursor string // the previous page's next cursor, "" for the first page
}

// TenantOperation is an operation with the tenant it belongs to, which its representation
// does not carry: what operators see across tenants.
type TenantOperation struct {
	Tenant    string
	Operation operation.Representation
}

// Stats is what GET /v1/stats answers: the operations in flight by state, those waiting
// for an operator, and the oldest in flight, read from the indexes as of AsOf. Partial says
// that a bound on the work was hit: the counts are then lower bounds and OldestInFlight is
// the oldest among those read.
type Stats struct {
	AsOf           time.Time
	InFlight       map[operation.State]int // accepted, dispatched, running, cancelling
	OutcomeUnknown int
	OldestInFlight *TenantOperation // nil: none in flight
	Partial        bool
}

// inFlightStates are the states an operation is in flight in: not ended, and not waiting
// for an operator.
var inFlightStates = []operation.State{operation.Accepted, operation.Dispatched, operation.Running, operation.Cancelling}

// tenantOperation is TenantOperation on the wire (api/openapi.yaml, TenantOperation).
type tenantOperation struct {
	Tenant    string                   `json:"tenant"`
	Operation operation.Representation `json:"operation"`
}

func (h *Handler) forOperators(ev events.APIGatewayProxyRequest, what string) error {
	if !h.Callers.IsOperator(ev.RequestContext) {
		return problem.New(problem.Forbidden, "Only operators may read %s.", what)
	}
	return nil
}

// attention serves GET /v1/attention: every tenant's operations in outcome_unknown, oldest
// first, for operators.
func (h *Handler) attention(ctx context.Context, ev events.APIGatewayProxyRequest) (response, error) {
	if err := h.forOperators(ev, "the attention queue"); err != nil {
		return response{}, err
	}
	q := AttentionQuery{Limit: defaultListLimit}
	err := queryParams(ev, func(name, v string, bad func(name, detail string)) {
		switch name {
		case "limit":
			q.Limit = limitParam(name, v, bad)
		case "cursor":
			if q.Cursor = v; v == "" {
				bad(name, "cursor must not be empty.")
			}
		default:
			bad(name, name+" is not a parameter of this list.")
		}
	})
	if err != nil {
		return response{}, err
	}
	items, next, err := h.Operations.Attention(ctx, q)
	if err != nil {
		return response{}, err
	}
	base := basePath(ev)
	out := make([]tenantOperation, 0, len(items))
	for _, it := range items {
		it.Operation.StatusURL = admission.StatusPath(base, it.Operation.OperationID)
		out = append(out, tenantOperation(it))
	}
	return pageResponse(out, next)
}

// stats serves GET /v1/stats, for operators.
func (h *Handler) stats(ctx context.Context, ev events.APIGatewayProxyRequest) (response, error) {
	if err := h.forOperators(ev, "the stats"); err != nil {
		return response{}, err
	}
	for name := range ev.MultiValueQueryStringParameters {
		return response{}, problem.Invalid(problem.FieldError{Pointer: "/" + name, Detail: name + " is not a parameter of the stats."})
	}
	st, err := h.Operations.Stats(ctx)
	if err != nil {
		return response{}, err
	}
	inFlight := make(map[operation.State]int, len(inFlightStates))
	for _, s := range inFlightStates {
		inFlight[s] = st.InFlight[s]
	}
	body := struct {
		AsOf           string                  `json:"asOf"`
		InFlight       map[operation.State]int `json:"inFlight"`
		OutcomeUnknown int                     `json:"outcomeUnknown"`
		OldestInFlight *tenantOperation        `json:"oldestInFlight"`
		Partial        bool                    `json:"partial"`
	}{AsOf: operation.FormatTime(st.AsOf), InFlight: inFlight, OutcomeUnknown: st.OutcomeUnknown, Partial: st.Partial}
	if o := st.OldestInFlight; o != nil {
		o.Operation.StatusURL = admission.StatusPath(basePath(ev), o.Operation.OperationID)
		body.OldestInFlight = &tenantOperation{Tenant: o.Tenant, Operation: o.Operation}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return response{}, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	return response{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: b}, nil
}
