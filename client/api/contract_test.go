package api_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/longrun-dev/longrun/client/api"
	ct "github.com/longrun-dev/longrun/client/internal/contracttest"
)

// These tests hold the generated code to the contract, api/openapi.yaml: a property,
// parameter, status, header, enum value or schema added to the contract fails one of them
// until `make generate` has given it to the client (and one taken out of it fails too).

// schemaTypes names, for every object schema of the contract, the generated type that
// carries it. A new object schema fails TestEverySchemaHasAType until it is listed here.
var schemaTypes = map[string]any{
	"Accepted":          api.Accepted{},
	"AdmissionRequest":  api.AdmissionRequest{},
	"AttentionPage":     api.AttentionPage{},
	"Awaiting":          api.Awaiting{},
	"CallbackAccepted":  api.CallbackAccepted{},
	"FieldError":        api.FieldError{},
	"History":           api.History{},
	"HistoryEntry":      api.HistoryEntry{},
	"HistorySignal":     api.HistorySignal{},
	"InFlightCounts":    api.InFlightCounts{},
	"Operation":         api.Operation{},
	"OperationList":     api.OperationList{},
	"OperationProblem":  api.OperationProblem{},
	"OperationType":     api.OperationType{},
	"OperationTypeList": api.OperationTypeList{},
	"Problem":           api.Problem{},
	"Progress":          api.Progress{},
	"ResolveRequest":    api.ResolveRequest{},
	"Retry":             api.Retry{},
	"Retried":           api.Retried{},
	"SignalDeclaration": api.SignalDeclaration{},
	"Stats":             api.Stats{},
	"TenantOperation":   api.TenantOperation{},
	// The per-response problems: Problem, with `code` narrowed (which the client leaves to
	// the server).
	"AdmissionBadRequestProblem":  api.AdmissionBadRequestProblem{},
	"AdmissionConflictProblem":    api.AdmissionConflictProblem{},
	"AlreadyTerminalProblem":      api.AlreadyTerminalProblem{},
	"CallbackExpiredProblem":      api.CallbackExpiredProblem{},
	"ForbiddenProblem":            api.ForbiddenProblem{},
	"InternalProblem":             api.InternalProblem{},
	"InvalidInputProblem":         api.InvalidInputProblem{},
	"MethodNotAllowedProblem":     api.MethodNotAllowedProblem{},
	"NotFoundProblem":             api.NotFoundProblem{},
	"PayloadTooLargeProblem":      api.PayloadTooLargeProblem{},
	"QuotaExceededProblem":        api.QuotaExceededProblem{},
	"ResolveConflictProblem":      api.ResolveConflictProblem{},
	"SignalBadRequestProblem":     api.SignalBadRequestProblem{},
	"SignalConflictProblem":       api.SignalConflictProblem{},
	"UnauthenticatedProblem":      api.UnauthenticatedProblem{},
	"UnavailableProblem":          api.UnavailableProblem{},
	"UnsupportedMediaTypeProblem": api.UnsupportedMediaTypeProblem{},
	"VersionMismatchProblem":      api.VersionMismatchProblem{},
}

// objectTypes names, for every object schema of the contract without properties of its own
// (any JSON object, which a schema the contract does not know judges: a signal's data), the
// generated type that carries it, a map from member names to values.
var objectTypes = map[string]any{
	"SignalData": api.SignalData{},
}

// TestEverySchemaHasAType: every object schema of the contract has its generated type in
// schemaTypes, and that type a field for every property (by JSON name, not omitted when
// empty if required), accepts every enum or const value the contract gives it, and has no
// field the contract does not have; an object schema without properties has a map type in
// objectTypes.
func TestEverySchemaHasAType(t *testing.T) {
	doc := ct.Contract(t)
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
		s := doc.Components.Schemas[name].Value
		goType, listed := schemaTypes[name]
		if len(ct.Properties(s)) == 0 {
			if listed {
				t.Errorf("schema %s has no properties, but schemaTypes lists it", name)
			}
			object, ok := objectTypes[name]
			switch free := s.Type.Is("object") && len(s.AllOf) == 0; {
			case free && !ok:
				t.Errorf("schema %s is any JSON object, but objectTypes does not list its type (run make generate, then list it)", name)
			case !free && ok:
				t.Errorf("objectTypes lists %s, which is not an object schema without properties", name)
			case ok:
				if typ := reflect.TypeOf(object); typ.Kind() != reflect.Map || typ.Key().Kind() != reflect.String {
					t.Errorf("schema %s is a JSON object, but its type %s is not a map with string keys", name, typ)
				}
			}
			continue
		}
		if !listed {
			t.Errorf("schema %s has no type in schemaTypes (run make generate, then list its type)", name)
			continue
		}
		ct.CheckStruct(t, "schema "+name, reflect.TypeOf(goType), s)
		for _, m := range s.OneOf {
			variant := strings.TrimPrefix(m.Ref, "#/components/schemas/")
			if _, ok := reflect.PointerTo(reflect.TypeOf(goType)).MethodByName("As" + variant); !ok {
				t.Errorf("schema %s: one of its variants is %s, but %T has no As%s", name, variant, goType, variant)
			}
		}
	}
	for name := range schemaTypes {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("schemaTypes lists %s, which the contract does not have", name)
		}
	}
	for name := range objectTypes {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("objectTypes lists %s, which the contract does not have", name)
		}
	}
}

// TestEveryOperationHasAMethod: every operation of the contract is a method of
// ClientWithResponses taking its parameters and body, whose response has, for every
// status, the body decoded into the schema's type and a field for every declared header
// (not a pointer if required).
func TestEveryOperationHasAMethod(t *testing.T) {
	doc := ct.Contract(t)
	clientType := reflect.TypeFor[*api.ClientWithResponses]()
	operations := 0
	for _, path := range doc.Paths.Keys() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			operations++
			name := strings.ToUpper(op.OperationID[:1]) + op.OperationID[1:]
			where := fmt.Sprintf("%s %s (%s)", method, path, name)
			m, ok := clientType.MethodByName(name + "WithResponse")
			if !ok {
				t.Errorf("%s: ClientWithResponses has no %sWithResponse (run make generate)", where, name)
				continue
			}
			checkArguments(t, where, m.Type, append(slices.Clone(item.Parameters), op.Parameters...), op.RequestBody)
			checkResponses(t, where, m.Type.Out(0).Elem(), op.Responses)
		}
	}
	if operations < 5 {
		t.Errorf("the contract has only %d operations", operations)
	}
}

func checkArguments(t *testing.T, where string, method reflect.Type, params openapi3.Parameters, body *openapi3.RequestBodyRef) {
	t.Helper()
	var paramsStruct reflect.Type
	paths, bodies := 0, 0
	for i := range method.NumIn() {
		in := method.In(i)
		switch {
		case in.Kind() == reflect.Pointer && strings.HasSuffix(in.Elem().Name(), "Params"):
			paramsStruct = in.Elem()
		case in.Kind() == reflect.String:
			paths++
		case body != nil && in == schemaType(body.Value.Content.Get("application/json").Schema):
			bodies++
		}
	}
	wantPaths := 0
	for _, p := range params {
		switch p.Value.In {
		case openapi3.ParameterInPath:
			wantPaths++
		case openapi3.ParameterInQuery, openapi3.ParameterInHeader:
			if paramsStruct == nil {
				t.Errorf("%s: parameter %q, but the method takes no parameters struct", where, p.Value.Name)
				continue
			}
			f, ok := ct.JSONFields(paramsStruct)[p.Value.Name]
			if !ok {
				t.Errorf("%s: %s has no field for parameter %q", where, paramsStruct, p.Value.Name)
			} else if p.Value.Required == (f.Type.Kind() == reflect.Pointer) {
				t.Errorf("%s: parameter %q is required=%t, %s.%s is %s", where, p.Value.Name, p.Value.Required, paramsStruct, f.Name, f.Type)
			}
		default:
			t.Errorf("%s: parameter %q in %s, which the test does not check", where, p.Value.Name, p.Value.In)
		}
	}
	if paths != wantPaths {
		t.Errorf("%s: %d path parameters, the method takes %d", where, wantPaths, paths)
	}
	if body != nil && bodies != 1 {
		t.Errorf("%s: the method takes no %v body", where, schemaType(body.Value.Content.Get("application/json").Schema))
	}
}

// schemaType is the generated type of a $ref'ed component schema, or nil.
func schemaType(s *openapi3.SchemaRef) reflect.Type {
	if s == nil || s.Ref == "" {
		return nil
	}
	name := strings.TrimPrefix(s.Ref, "#/components/schemas/")
	v, ok := schemaTypes[name]
	if !ok {
		v, ok = objectTypes[name]
	}
	if !ok {
		return nil
	}
	return reflect.TypeOf(v)
}

func checkResponses(t *testing.T, where string, resp reflect.Type, responses *openapi3.Responses) {
	t.Helper()
	for _, status := range responses.Keys() {
		r := responses.Value(status).Value
		for mt, media := range r.Content {
			want := schemaType(media.Schema)
			if want == nil {
				t.Errorf("%s: %s %s: the schema is not a listed component (%s)", where, status, mt, media.Schema.Ref)
				continue
			}
			found := false
			for i := range resp.NumField() {
				f := resp.Field(i)
				if strings.HasSuffix(f.Name, "JSON"+status) && f.Type == reflect.PointerTo(want) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: %s has no *%s field for %s %s (run make generate)", where, resp, want, status, mt)
			}
		}
		hf, ok := resp.FieldByName("Headers" + status)
		if !ok {
			if len(r.Headers) > 0 {
				t.Errorf("%s: %s has no Headers%s (run make generate)", where, resp, status)
			}
			continue
		}
		headers := hf.Type.Elem()
		seen := 0
		for name, h := range r.Headers {
			f, ok := headerField(headers, name)
			if !ok {
				t.Errorf("%s: %s has no field for header %s (run make generate)", where, headers, name)
				continue
			}
			seen++
			if h.Value.Required == (f.Type.Kind() == reflect.Pointer) {
				t.Errorf("%s: header %s is required=%t, %s.%s is %s", where, name, h.Value.Required, headers, f.Name, f.Type)
			}
		}
		if seen != headers.NumField() {
			t.Errorf("%s: %s has %d fields, the contract declares %d headers for %s", where, headers, headers.NumField(), len(r.Headers), status)
		}
	}
}

// headerField is the field for a header: its name less the dashes, in any case
// (X-Request-Id is XRequestID).
func headerField(t reflect.Type, header string) (reflect.StructField, bool) {
	want := strings.ReplaceAll(header, "-", "")
	for i := range t.NumField() {
		if f := t.Field(i); strings.EqualFold(f.Name, want) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// TestTheContractsExamplesDecode: every example of a request or response body in the
// contract decodes into the generated type with no member left over, and the type encodes
// it back to the same JSON. (That each conforms to its schema, kin-openapi's Validate
// checks in contract(), with JSON Schema 2020-12 as the handler tests' validator.)
func TestTheContractsExamplesDecode(t *testing.T) {
	doc := ct.Contract(t)
	examples := 0
	check := func(where string, content openapi3.Content) {
		for mt, media := range content {
			all := map[string]any{}
			if media.Example != nil {
				all["example"] = media.Example
			}
			for name, ex := range media.Examples {
				all[name] = ex.Value.Value
			}
			for name, value := range all {
				examples++
				where := fmt.Sprintf("%s %s example %s", where, mt, name)
				goType := schemaType(media.Schema)
				if goType == nil {
					t.Errorf("%s: the schema is not a listed component (%s)", where, media.Schema.Ref)
					continue
				}
				ct.RoundTrip(t, where, goType, value)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Responses)) {
		check("response "+name, doc.Components.Responses[name].Value.Content)
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Components.RequestBodies)) {
		check("request body "+name, doc.Components.RequestBodies[name].Value.Content)
	}
	for _, path := range doc.Paths.Keys() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if b := op.RequestBody; b != nil && b.Ref == "" {
				check(method+" "+path+" body", b.Value.Content)
			}
			for status, r := range op.Responses.Map() {
				if r.Ref == "" {
					check(method+" "+path+" "+status, r.Value.Content)
				}
			}
		}
	}
	if examples < 10 {
		t.Errorf("only %d examples checked", examples)
	}
}
