package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/core/problem"
)

// operationTypesPath is the discovery of the operation types the API admits (api/openapi.yaml,
// listOperationTypes and getOperationType).
const operationTypesPath = "/v1/operation-types"

// operationType is an operation type as discovery serves it: the contract's schema
// OperationType, exactly its members.
type operationType struct {
	Name        string `json:"name"`
	Version     int    `json:"version"`
	Description string `json:"description"`
	// InputSchema is the type's JSON Schema (2020-12) for an admission's input, a JSON object.
	InputSchema json.RawMessage `json:"inputSchema"`
	// DeadlineSeconds is the type's deadline in whole seconds, rounded up.
	DeadlineSeconds int64 `json:"deadlineSeconds"`
	// Signals are the type's signals in the definitions file's order; absent when it
	// declares none.
	Signals []signalDeclaration `json:"signals,omitempty"`
}

// signalDeclaration is a type's signal as discovery serves it: the contract's schema
// SignalDeclaration, exactly its members.
type signalDeclaration struct {
	Name string `json:"name"`
	// Schema is the signal's JSON Schema (2020-12) for its data, a JSON object.
	Schema     json.RawMessage `json:"schema"`
	Senders    []optype.Sender `json:"senders"`
	NotCreator bool            `json:"notCreator"`
	Callback   bool            `json:"callback"`
}

// anyObject is the schema of a signal whose declaration has none: its data is any JSON
// object (optype.Signal.Schema).
var anyObject = json.RawMessage(`{"type":"object"}`)

// describeType is what discovery serves for t.
func describeType(t optype.Type) operationType {
	d := operationType{Name: t.Name, Version: t.Version, Description: t.Description, InputSchema: t.InputSchema(),
		DeadlineSeconds: int64((t.Deadline + time.Second - 1) / time.Second)}
	for _, s := range t.Signals {
		schema := s.Schema()
		if len(schema) == 0 {
			schema = anyObject
		}
		d.Signals = append(d.Signals, signalDeclaration{Name: s.Name, Schema: schema, Senders: s.Senders,
			NotCreator: s.NotCreator, Callback: s.Callback})
	}
	return d
}

// errNoTypes is why discovery refuses to serve without a registry: a handler built without
// Types would otherwise answer that no type exists while admission admits some.
var errNoTypes = errors.New("httpapi: Handler.Types is nil: discovery serves the registry admission validates against, and has none")

// typesRoute serves /v1/operation-types and /v1/operation-types/{name} (name, from routeOf).
func (h *Handler) typesRoute(method, path, name string) (response, error) {
	if method != http.MethodGet {
		return response{}, methodNotAllowed(method, path, http.MethodGet)
	}
	if name == "" {
		return h.listTypes()
	}
	return h.getType(name)
}

// listTypes serves GET /v1/operation-types: every type of the registry, sorted by name.
func (h *Handler) listTypes() (response, error) {
	if h.Types == nil {
		return response{}, problem.Wrap(problem.Internal, errNoTypes, "An internal error occurred.")
	}
	types := h.Types.Types()
	items := make([]operationType, 0, len(types))
	for _, t := range types {
		d, err := describedType(t)
		if err != nil {
			return response{}, err
		}
		items = append(items, d)
	}
	slices.SortFunc(items, func(a, b operationType) int { return strings.Compare(a.Name, b.Name) })
	return typeResponse(struct {
		Items []operationType `json:"items"`
	}{items})
}

// getType serves GET /v1/operation-types/{name}: one type of the registry, or 404.
func (h *Handler) getType(name string) (response, error) {
	if h.Types == nil {
		return response{}, problem.Wrap(problem.Internal, errNoTypes, "An internal error occurred.")
	}
	t, ok := h.Types.Lookup(name)
	if !ok {
		return response{}, problem.New(problem.NotFound, "No such operation type.")
	}
	d, err := describedType(t)
	if err != nil {
		return response{}, err
	}
	return typeResponse(d)
}

// describedType is describeType, refusing a type whose input schema, or a signal's schema,
// is not a JSON object (the contract promises one).
func describedType(t optype.Type) (operationType, error) {
	d := describeType(t)
	if !jsonObject(d.InputSchema) {
		return operationType{}, problem.Wrap(problem.Internal, errors.New("httpapi: operation type "+t.Name+": its input schema is not a JSON object"),
			"An internal error occurred.")
	}
	for _, s := range d.Signals {
		if !jsonObject(s.Schema) {
			return operationType{}, problem.Wrap(problem.Internal, errors.New("httpapi: operation type "+t.Name+": the schema of its signal "+s.Name+" is not a JSON object"),
				"An internal error occurred.")
		}
	}
	return d, nil
}

// jsonObject says whether b is a JSON object.
func jsonObject(b json.RawMessage) bool {
	s := bytes.TrimSpace(b)
	return len(s) > 0 && s[0] == '{' && json.Valid(s)
}

func typeResponse(v any) (response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return response{}, problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
	return response{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: b}, nil
}
