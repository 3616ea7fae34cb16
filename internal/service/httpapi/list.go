package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// ListQuery asks for one page of a caller's operations, newest first.
type ListQuery struct {
	Tenant, Principal string
	State             operation.State // "" for any
	Type              string          // "" for any
	Limit             int
	Cursor            string // the previous page's next cursor, "" for the first page
}

const defaultListLimit = 20

// list serves GET /v1/operations: the caller's operations, newest first.
func (h *Handler) list(ctx context.Context, ev events.APIGatewayProxyRequest, scope admission.Scope) (response, error) {
	q := ListQuery{Tenant: scope.Tenant, Principal: scope.Principal, Limit: defaultListLimit}
	var fields []problem.FieldError
	bad := func(name, detail string) {
		fields = append(fields, problem.FieldError{Pointer: "/" + name, Detail: detail})
	}
	for name, values := range ev.MultiValueQueryStringParameters {
		if len(values) != 1 {
			bad(name, name+" may be given once.")
			continue
		}
		v := values[0]
		switch name {
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				bad(name, "limit must be an integer from 1 to 100.")
			}
			q.Limit = n
		case "state":
			if q.State = operation.State(v); !q.State.Valid() {
				bad(name, "state must be one of the operation states.")
			}
		case "type":
			if q.Type = v; v == "" || len(v) > 128 {
				bad(name, "type must be 1 to 128 characters.")
			}
		case "cursor":
			if q.Cursor = v; v == "" {
				bad(name, "cursor must not be empty.")
			}
		default:
			bad(name, name+" is not a parameter of this list.")
		}
	}
	if len(fields) > 0 {
		return response{}, problem.Invalid(fields...)
	}
	items, next, err := h.Operations.List(ctx, q)
	if err != nil {
		return response{}, err
	}
	base := basePath(ev)
	for i := range items {
		items[i].StatusURL = admission.StatusPath(base, items[i].OperationID)
	}
	if items == nil {
		items = []operation.Representation{}
	}
	page := struct {
		Items      []operation.Representation `json:"items"`
		NextCursor *string                    `json:"nextCursor"`
	}{Items: items}
	if next != "" {
		page.NextCursor = &next
	}
	b, err := json.Marshal(page)
	if err != nil {
		return response{}, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	return response{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: b}, nil
}
