package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/longrun-dev/longrun/api"
	"github.com/longrun-dev/longrun/client"
)

// These tests hold the generated code to the contract, api/openapi.yaml: a property,
// parameter, status, header, enum value or schema added to the contract fails one of them
// until `make generate` has given it to the client (and one taken out of it fails too).

// schemaTypes names, for every object schema of the contract, the generated type that
// carries it. A new object schema fails TestEverySchemaHasAType until it is listed here.
var schemaTypes = map[string]any{
	"Accepted":          client.Accepted{},
	"AdmissionRequest":  client.AdmissionRequest{},
	"FieldError":        client.FieldError{},
	"Operation":         client.OperationRepresentation{},
	"OperationList":     client.OperationList{},
	"OperationProblem":  client.OperationProblem{},
	"OperationType":     client.OperationType{},
	"OperationTypeList": client.OperationTypeList{},
	"Problem":           client.Problem{},
	"Progress":          client.Progress{},
	"ResolveRequest":    client.ResolveRequest{},
	// The per-response problems: Problem, with `code` narrowed (which the client leaves to
	// the server).
	"AdmissionBadRequestProblem":  client.AdmissionBadRequestProblem{},
	"AdmissionConflictProblem":    client.AdmissionConflictProblem{},
	"AlreadyTerminalProblem":      client.AlreadyTerminalProblem{},
	"ForbiddenProblem":            client.ForbiddenProblem{},
	"InternalProblem":             client.InternalProblem{},
	"InvalidInputProblem":         client.InvalidInputProblem{},
	"MethodNotAllowedProblem":     client.MethodNotAllowedProblem{},
	"NotFoundProblem":             client.NotFoundProblem{},
	"PayloadTooLargeProblem":      client.PayloadTooLargeProblem{},
	"QuotaExceededProblem":        client.QuotaExceededProblem{},
	"UnauthenticatedProblem":      client.UnauthenticatedProblem{},
	"UnavailableProblem":          client.UnavailableProblem{},
	"UnsupportedMediaTypeProblem": client.UnsupportedMediaTypeProblem{},
	"VersionMismatchProblem":      client.VersionMismatchProblem{},
}

func contract(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return doc
}

// property is one property of a schema with every definition of it: the schema's own and
// its allOf members' (transitively), in that order.
type property struct {
	defs     []*openapi3.SchemaRef
	required bool
}

func properties(s *openapi3.Schema) map[string]*property {
	out := map[string]*property{}
	var walk func(s *openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		for name, def := range s.Properties {
			if out[name] == nil {
				out[name] = &property{}
			}
			out[name].defs = append(out[name].defs, def)
		}
		for _, m := range s.AllOf {
			walk(m.Value)
		}
	}
	walk(s)
	var req func(s *openapi3.Schema)
	req = func(s *openapi3.Schema) {
		for _, name := range s.Required {
			if p := out[name]; p != nil {
				p.required = true
			}
		}
		for _, m := range s.AllOf {
			req(m.Value)
		}
	}
	req(s)
	return out
}

// jsonFields are a struct's fields by their JSON name, promoted ones included.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		tag, ok := f.Tag.Lookup("json")
		if !f.IsExported() || f.Anonymous || !ok {
			continue
		}
		if name, _, _ := strings.Cut(tag, ","); name != "-" {
			out[name] = f
		}
	}
	return out
}

// TestEverySchemaHasAType: every object schema of the contract has its generated type in
// schemaTypes, and that type a field for every property (by JSON name, not omitted when
// empty if required), accepts every enum or const value the contract gives it, and has no
// field the contract does not have.
func TestEverySchemaHasAType(t *testing.T) {
	doc := contract(t)
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
		s := doc.Components.Schemas[name].Value
		goType, listed := schemaTypes[name]
		if len(properties(s)) == 0 {
			if listed {
				t.Errorf("schema %s has no properties, but schemaTypes lists it", name)
			}
			continue
		}
		if !listed {
			t.Errorf("schema %s has no type in schemaTypes (run make generate, then list its type)", name)
			continue
		}
		checkStruct(t, "schema "+name, reflect.TypeOf(goType), s)
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
}

func checkStruct(t *testing.T, where string, goType reflect.Type, s *openapi3.Schema) {
	t.Helper()
	if goType.Kind() != reflect.Struct {
		t.Errorf("%s: its type %s is not a struct", where, goType)
		return
	}
	fields := jsonFields(goType)
	props := properties(s)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p := props[name]
		f, ok := fields[name]
		if !ok {
			t.Errorf("%s: %s has no field for property %q (run make generate)", where, goType, name)
			continue
		}
		if p.required && strings.Contains(f.Tag.Get("json"), ",omitempty") {
			t.Errorf("%s: property %q is required, but %s.%s is omitted when empty", where, name, goType, f.Name)
		}
		for _, def := range p.defs {
			checkValues(t, where+"."+name, f.Type, def.Value)
			if def.Ref != "" {
				continue // a schema of its own, checked as such
			}
			if elem := deref(f.Type); len(def.Value.Properties) > 0 {
				checkStruct(t, where+"."+name, elem, def.Value)
			} else if items := def.Value.Items; items != nil && items.Ref == "" && len(items.Value.Properties) > 0 {
				checkStruct(t, where+"."+name+"[]", deref(elem.Elem()), items.Value)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if props[name] == nil {
			t.Errorf("%s: %s has a field %s (%q) the contract does not have (run make generate)", where, goType, fields[name].Name, name)
		}
	}
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// checkValues: a field whose type is a generated enum accepts (Valid) every value the
// property's enum or const allows.
func checkValues(t *testing.T, where string, field reflect.Type, s *openapi3.Schema) {
	t.Helper()
	values := slices.Clone(s.Enum)
	if s.Const != nil {
		values = append(values, s.Const)
	}
	if len(values) == 0 {
		return
	}
	typ := deref(field)
	valid, ok := typ.MethodByName("Valid")
	if !ok {
		if typ.Kind() == reflect.String {
			t.Errorf("%s: values %v, but its type %s is not a generated enum", where, values, typ)
		}
		return
	}
	for _, v := range values {
		sv, ok := v.(string)
		if !ok || typ.Kind() != reflect.String {
			t.Errorf("%s: enum value %v (%T) in a field of type %s", where, v, v, typ)
			continue
		}
		x := reflect.New(typ).Elem()
		x.SetString(sv)
		if !valid.Func.Call([]reflect.Value{x})[0].Bool() {
			t.Errorf("%s: the contract allows %q, but %s does not know it (run make generate)", where, sv, typ)
		}
	}
}

// TestEveryOperationHasAMethod: every operation of the contract is a method of
// ClientWithResponses taking its parameters and body, whose response has, for every
// status, the body decoded into the schema's type and a field for every declared header
// (not a pointer if required).
func TestEveryOperationHasAMethod(t *testing.T) {
	doc := contract(t)
	clientType := reflect.TypeFor[*client.ClientWithResponses]()
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
			f, ok := jsonFields(paramsStruct)[p.Value.Name]
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
	v, ok := schemaTypes[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
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
	doc := contract(t)
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
				roundTrip(t, where, goType, value)
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

func roundTrip(t *testing.T, where string, goType reflect.Type, value any) {
	t.Helper()
	in, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	v := reflect.New(goType)
	if err := dec.Decode(v.Interface()); err != nil {
		t.Errorf("%s does not decode into %s: %v", where, goType, err)
		return
	}
	out, err := json.Marshal(v.Interface())
	if err != nil {
		t.Errorf("%s: %s does not encode: %v", where, goType, err)
		return
	}
	var want, got any
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: through %s\n%s\nbecomes\n%s", where, goType, in, out)
	}
}
