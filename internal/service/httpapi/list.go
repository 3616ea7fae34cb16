package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	// TargetPrefix lists only operations whose canonical target begins with it ("" for any).
	TargetPrefix string
	// CreatedAfter and CreatedBefore bound the operations' createdAt, to the millisecond:
	// at or after CreatedAfter, strictly before CreatedBefore (zero: no bound). The store
	// reads only the ids minted in (about) that window: ids are ULIDs, their time prefix
	// is the creation time.
	CreatedAfter, CreatedBefore time.Time
	Limit                       int
	Cursor                      string // the previous page's next cursor, "" for the first page
}

const defaultListLimit = 20

// maxTargetPrefix is the longest target prefix a list takes: a whole target's length
// (api/openapi.yaml, Target).
const maxTargetPrefix = 321

// maxTimestampParam bounds a timestamp query parameter before it is parsed.
const maxTimestampParam = 64

// list serves GET /v1/operations: the caller's operations, newest first.
func (h *Handler) list(ctx context.Context, ev events.APIGatewayProxyRequest, scope admission.Scope) (response, error) {
	q := ListQuery{Tenant: scope.Tenant, Principal: scope.Principal, Limit: defaultListLimit}
	err := queryParams(ev, func(name, v string, bad func(name, detail string)) {
		switch name {
		case "limit":
			q.Limit = limitParam(name, v, bad)
		case "state":
			if q.State = operation.State(v); !q.State.Valid() {
				bad(name, "state must be one of the operation states.")
			}
		case "type":
			if q.Type = v; v == "" || len(v) > 128 {
				bad(name, "type must be 1 to 128 characters.")
			}
		case "target":
			if q.TargetPrefix = v; v == "" || !utf8.ValidString(v) || utf8.RuneCountInString(v) > maxTargetPrefix || strings.ContainsFunc(v, unicode.IsControl) {
				bad(name, "target must be 1 to 321 characters of UTF-8, no control characters: the beginning of the targets to list.")
			}
		case "createdAfter":
			q.CreatedAfter = timestampParam(name, v, bad)
		case "createdBefore":
			q.CreatedBefore = timestampParam(name, v, bad)
		case "cursor":
			if q.Cursor = v; v == "" {
				bad(name, "cursor must not be empty.")
			}
		default:
			bad(name, name+" is not a parameter of this list.")
		}
	}, func(bad func(name, detail string)) {
		if !q.CreatedAfter.IsZero() && !q.CreatedBefore.IsZero() && !q.CreatedAfter.Before(q.CreatedBefore) {
			bad("createdBefore", "createdBefore must be later than createdAfter.")
		}
	})
	if err != nil {
		return response{}, err
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
	return pageResponse(items, next)
}

// queryParams reads ev's query parameters: take reads each one given once (a repeated one
// is refused here), then each of after checks them together; every refusal any of them
// reports is answered at once, as one invalid_input naming each parameter.
func queryParams(ev events.APIGatewayProxyRequest, take func(name, value string, bad func(name, detail string)), after ...func(bad func(name, detail string))) error {
	var fields []problem.FieldError
	bad := func(name, detail string) {
		fields = append(fields, problem.FieldError{Pointer: "/" + name, Detail: detail})
	}
	for name, values := range ev.MultiValueQueryStringParameters {
		if len(values) != 1 {
			bad(name, name+" may be given once.")
			continue
		}
		take(name, values[0], bad)
	}
	for _, check := range after {
		check(bad)
	}
	if len(fields) > 0 {
		return problem.Invalid(fields...)
	}
	return nil
}

// limitParam reads a page size, 1 to 100.
func limitParam(name, v string, bad func(name, detail string)) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100 {
		bad(name, name+" must be an integer from 1 to 100.")
	}
	return n
}

// timestampParam reads an RFC 3339 timestamp, to the millisecond (finer digits are
// dropped, as createdAt has none), from 1970 on.
func timestampParam(name, v string, bad func(name, detail string)) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if len(v) > maxTimestampParam || err != nil || t.UnixMilli() < 0 {
		bad(name, name+" must be an RFC 3339 timestamp from 1970 on, e.g. 2026-11-30T10:00:00Z.")
		return time.Time{}
	}
	return t.UTC().Truncate(time.Millisecond)
}

// pageResponse is a 200 with one page: items and the cursor of the next page (null on the
// last).
func pageResponse[T any](items []T, next string) (response, error) {
	page := struct {
		Items      []T     `json:"items"`
		NextCursor *string `json:"nextCursor"`
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
