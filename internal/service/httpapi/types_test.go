package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/longrun-dev/longrun/api"
	"github.com/longrun-dev/longrun/events"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
)

const typesPath = "/v1/operation-types"

// decode is a JSON document as generic values (numbers as float64), for comparisons.
func decode(t *testing.T, what string, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b)
	}
	return v
}

// deadlineSeconds is a type's deadline as the contract states it: whole seconds, rounded up.
func deadlineSeconds(t optype.Type) float64 { return math.Ceil(t.Deadline.Seconds()) }

// Discovery serves exactly the registry admission validates against: every type, sorted by
// name, each with the name, version, description, deadline, input schema and signals of its
// definition; GET of one name serves the same as the list's item. The harness checks every
// response against the contract (OperationTypeList, OperationType, their headers).
func TestOperationTypesAreTheRegistrysDefinitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := e.service.Registry
	defs := reg.Types()
	if len(defs) < 2 {
		t.Fatalf("the registry has %d types", len(defs))
	}
	for _, path := range []string{typesPath, typesPath + "/"} {
		r := e.do(req{method: http.MethodGet, path: path, caller: "alice"})
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("GET %s: %d %v %s", path, r.status, r.header, r.body)
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(r.body, &list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, item := range list.Items {
			names = append(names, item["name"].(string))
		}
		if !slices.IsSorted(names) || !slices.Equal(names, reg.Names()) {
			t.Fatalf("GET %s lists %v, the registry has %v (sorted by name)", path, names, reg.Names())
		}
		for i, def := range defs {
			item := list.Items[i]
			want := map[string]any{"name": def.Name, "version": float64(def.Version), "description": def.Description,
				"deadlineSeconds": deadlineSeconds(def), "inputSchema": decode(t, def.Name+"'s InputSchema", def.InputSchema())}
			if signals := servedSignals(t, def); signals != nil {
				want["signals"] = signals
			}
			if !reflect.DeepEqual(item, want) {
				t.Errorf("GET %s serves %s as\n%v\nits definition is\n%v", path, def.Name, item, want)
			}
			one := e.do(req{method: http.MethodGet, path: typesPath + "/" + def.Name, caller: "bob"})
			if one.status != http.StatusOK || !reflect.DeepEqual(decode(t, "GET "+def.Name, one.body), any(item)) {
				t.Errorf("GET %s/%s: %d %s, the list has %v", typesPath, def.Name, one.status, one.body, item)
			}
		}
	}
	// Discovery reads no table.
	if n := e.calls.Load(); n != 0 {
		t.Errorf("discovery made %d DynamoDB calls", n)
	}
}

// A name the API does not admit is 404 not_found, the problem every other 404 is; a path
// under the types that is no type's (a name with a slash, none at all) is the 404 of a
// route the API does not have.
func TestUnknownOperationTypeIs404(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, name := range []string{"no.such.type", "EXPORT.ORDERS", "export.orders.v2", "export", "demo.task%20"} {
		r := e.do(req{method: http.MethodGet, path: typesPath + "/" + name, caller: "alice"})
		wantProblem(t, r, http.StatusNotFound, "not_found")
		if r.json["title"] != "Not found" || r.json["detail"] != "No such operation type." {
			t.Errorf("GET %s: %s", name, r.body)
		}
	}
	for _, path := range []string{typesPath + "/export.orders/more", typesPath + "//", "/v1/operation-type"} {
		wantProblem(t, e.do(req{method: http.MethodGet, path: path, caller: "alice", offSpec: true}), http.StatusNotFound, "not_found")
	}
}

// Every other method of the types' paths is 405 with Allow: GET (the harness holds Allow to
// the contract's methods for the path), after the caller is resolved, as on every route.
func TestOperationTypesUnknownMethodIs405(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{typesPath, typesPath + "/", typesPath + "/export.orders", typesPath + "/no.such.type"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
			r := e.do(req{method: method, path: path, caller: "alice", body: "{}"})
			wantProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
			if r.header.Get("Allow") != "GET" || r.json["title"] != "Method not allowed" {
				t.Errorf("%s %s: Allow %q: %s", method, path, r.header.Get("Allow"), r.body)
			}
		}
	}
	for _, r := range []req{
		{method: http.MethodGet, path: typesPath},
		{method: http.MethodGet, path: typesPath + "/export.orders"},
		{method: http.MethodDelete, path: typesPath},
	} {
		wantProblem(t, e.do(r), http.StatusUnauthorized, "unauthenticated")
	}
}

// Without a registry, discovery refuses to serve (500 internal, the cause in the log) rather
// than claim no type exists; the other routes are unaffected.
func TestDiscoveryWithoutTypesIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var logs bytes.Buffer
	e.handler.Types = nil
	e.handler.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	for _, path := range []string{typesPath, typesPath + "/export.orders", typesPath + "/no.such.type"} {
		r := e.do(req{method: http.MethodGet, path: path, caller: "alice"})
		wantProblem(t, r, http.StatusInternalServerError, "internal")
		if strings.Contains(string(r.body), "Types") {
			t.Errorf("GET %s: the cause reached the client: %s", path, r.body)
		}
	}
	if n := strings.Count(logs.String(), "Handler.Types is nil"); n != 3 {
		t.Errorf("%d log lines say why, want 3:\n%s", n, logs.String())
	}
	if r := e.do(req{method: http.MethodGet, path: "/v1/operations", caller: "alice"}); r.status != http.StatusOK {
		t.Errorf("GET /v1/operations without Types: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(req{method: http.MethodPost, path: typesPath, caller: "alice"}), http.StatusMethodNotAllowed, "method_not_allowed")
}

// admissionExamples are the contract's examples of an admission request body (schema
// AdmissionRequest), wherever they are declared, by name.
func admissionExamples(t *testing.T, doc *openapi3.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	collect := func(where string, body *openapi3.RequestBodyRef) {
		if body == nil || body.Value == nil {
			return
		}
		for mt, media := range body.Value.Content {
			if media.Schema == nil || media.Schema.Ref != "#/components/schemas/AdmissionRequest" {
				continue
			}
			if media.Example != nil {
				out[where+" "+mt+" example"] = jsonObject(t, where, media.Example)
			}
			for name, ex := range media.Examples {
				out[where+" "+mt+" "+name] = jsonObject(t, where+" "+name, ex.Value.Value)
			}
		}
	}
	for name, body := range doc.Components.RequestBodies {
		collect("requestBodies/"+name, body)
	}
	for _, path := range doc.Paths.Keys() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.RequestBody != nil && op.RequestBody.Ref == "" {
				collect(method+" "+path, op.RequestBody)
			}
		}
	}
	return out
}

// jsonObject is v (a YAML-decoded example) as JSON decodes it.
func jsonObject(t *testing.T, where string, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := decode(t, where, b).(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object: %s", where, b)
	}
	return m
}

// compileSchema compiles a served inputSchema (JSON Schema 2020-12), asserting formats.
func compileSchema(t *testing.T, name string, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("%s's inputSchema: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := "https://longrun.test/operation-types/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s's inputSchema does not compile: %v", name, err)
	}
	return s
}

func validates(t *testing.T, s *jsonschema.Schema, input any) error {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// The contract's admission examples are admissions of served types whose input satisfies the
// served inputSchema, and the API admits each (202); an input the served schema rejects (an
// unknown member, a missing one) is one admission rejects too (400 invalid_input). So the
// contract, the served schemas and admission's validation agree.
func TestAdmissionExamplesSatisfyTheServedInputSchemas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	examples := admissionExamples(t, e.spec.Doc())
	if len(examples) < 2 {
		t.Fatalf("only %d admission examples in the contract", len(examples))
	}
	types := map[string]bool{}
	rejected := 0
	for _, where := range slices.Sorted(maps.Keys(examples)) {
		ex := examples[where]
		name, _ := ex["type"].(string)
		input, _ := ex["input"].(map[string]any)
		types[name] = true
		served := e.do(req{method: http.MethodGet, path: typesPath + "/" + name, caller: "alice"})
		if served.status != http.StatusOK {
			t.Errorf("%s: type %q is not served: %d %s", where, name, served.status, served.body)
			continue
		}
		schemaJSON, _ := json.Marshal(served.json["inputSchema"])
		schema := compileSchema(t, name, schemaJSON)
		if err := validates(t, schema, input); err != nil {
			t.Errorf("%s: its input does not satisfy %s's served inputSchema: %v", where, name, err)
		}
		body, _ := json.Marshal(ex)
		if r := e.admit("k-example-"+where, string(body)); r.status != http.StatusAccepted {
			t.Errorf("%s: admission answers %d %s", where, r.status, r.body)
		}
		// Inputs the served schema rejects, admission rejects.
		extra := maps.Clone(input)
		extra["zzNotAMember"] = true
		bad := []map[string]any{extra}
		for k := range input {
			fewer := maps.Clone(input)
			delete(fewer, k)
			if validates(t, schema, fewer) != nil {
				bad = append(bad, fewer)
			}
		}
		for i, in := range bad {
			if validates(t, schema, in) == nil {
				continue // the schema allows it: nothing to hold admission to
			}
			b, _ := json.Marshal(map[string]any{"type": name, "input": in})
			r := e.admit("k-bad-"+where+"-"+string(rune('a'+i)), string(b))
			wantProblem(t, r, http.StatusBadRequest, "invalid_input")
			rejected++
		}
	}
	if len(types) < 2 || rejected < len(examples) {
		t.Errorf("the admission examples cover only %v; %d inputs the served schemas reject were tried", types, rejected)
	}
}

// The contract's examples of an OperationType are the built-in types as served, in every
// member a client acts on (name, version, deadlineSeconds, inputSchema, signals).
func TestOperationTypeExamplesAreTheServedTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := e.spec.Doc()
	var examples []map[string]any
	for _, name := range []string{"OperationType", "OperationTypeList"} {
		for exName, ex := range doc.Components.Responses[name].Value.Content["application/json"].Examples {
			v := jsonObject(t, name+" "+exName, ex.Value.Value)
			if items, ok := v["items"].([]any); ok {
				for _, item := range items {
					examples = append(examples, item.(map[string]any))
				}
				continue
			}
			examples = append(examples, v)
		}
	}
	if len(examples) < 3 {
		t.Fatalf("only %d OperationType examples", len(examples))
	}
	for _, ex := range examples {
		name, _ := ex["name"].(string)
		r := e.do(req{method: http.MethodGet, path: typesPath + "/" + name, caller: "alice"})
		if r.status != http.StatusOK {
			t.Errorf("the contract's example type %q is not served: %d", name, r.status)
			continue
		}
		for _, member := range []string{"name", "version", "deadlineSeconds", "inputSchema", "signals"} {
			if !reflect.DeepEqual(ex[member], r.json[member]) {
				t.Errorf("%s: the contract's example has %s %v, the API serves %v", name, member, ex[member], r.json[member])
			}
		}
	}
}

// progressSchemas are the contract's Progress schema as written, and the event schema's.
func progressSchemas(t *testing.T) (contract, event map[string]any) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	contract = jsonObject(t, "Progress", doc["components"].(map[string]any)["schemas"].(map[string]any)["Progress"])
	var ev map[string]any
	if err := json.Unmarshal(events.Schema(events.StateChangedSchema), &ev); err != nil {
		t.Fatal(err)
	}
	return contract, ev["$defs"].(map[string]any)["progress"].(map[string]any)
}

// withoutProse drops what documents a schema without constraining it.
func withoutProse(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if k != "description" && k != "format" && k != "examples" {
				out[k] = withoutProse(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutProse(x)
		}
		return out
	}
	return v
}

// The representation's progress (operation.Progress) is the contract's Progress: the same
// members, the required one always present, the optional ones left out when unset; the
// event's detail has the same shape; and a progress an operation's facts carry is served
// as it was reported, validated against the contract by the harness.
func TestProgressIsTheContractsAndTheEventsProgress(t *testing.T) {
	t.Parallel()
	contract, event := progressSchemas(t)
	if !reflect.DeepEqual(withoutProse(contract), withoutProse(event)) {
		t.Errorf("the contract's Progress\n%v\nis not the event's progress\n%v", withoutProse(contract), withoutProse(event))
	}
	props := contract["properties"].(map[string]any)
	required := map[string]bool{}
	for _, r := range contract["required"].([]any) {
		required[r.(string)] = true
	}
	kinds := map[string][]reflect.Kind{"integer": {reflect.Int, reflect.Int64}, "number": {reflect.Float64}, "string": {reflect.String}}
	rep, ok := reflect.TypeFor[operation.Representation]().FieldByName("Progress")
	if !ok || rep.Tag.Get("json") != "progress,omitempty" || rep.Type != reflect.TypeFor[*operation.Progress]() {
		t.Fatalf("operation.Representation's progress: %+v", rep)
	}
	fields := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[operation.Progress]()) {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = true
		p, ok := props[name].(map[string]any)
		if !ok {
			t.Errorf("operation.Progress.%s (%q) is not in the contract", f.Name, name)
			continue
		}
		typ := f.Type
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if !slices.Contains(kinds[p["type"].(string)], typ.Kind()) {
			t.Errorf("operation.Progress.%s is %s, the contract's %s is %s", f.Name, f.Type, name, p["type"])
		}
		if omits := opts == "omitempty" || opts == "omitzero"; omits == required[name] {
			t.Errorf("operation.Progress.%s: required %t in the contract, json %q", f.Name, required[name], f.Tag.Get("json"))
		}
	}
	for name := range props {
		if !fields[name] {
			t.Errorf("the contract's Progress has %q, operation.Progress does not", name)
		}
	}

	// Served as reported.
	e := newEnv(t)
	id := e.admit("k-progress", demo("progress")).json["operationId"].(string)
	e.append(id, operation.KindDispatched, operation.KindStarted)
	for _, tc := range []struct {
		progress operation.Progress
		want     string
	}{
		{operation.Progress{CompletedSteps: 1}, `{"completedSteps":1}`},
		{operation.Progress{CompletedSteps: 2, TotalSteps: 3, Percent: new(66.7), Message: "Rendered page 2 of 3."},
			`{"completedSteps":2,"totalSteps":3,"percent":66.7,"message":"Rendered page 2 of 3."}`},
	} {
		op, err := e.store.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		f := operation.Fact{Kind: operation.KindProgress, At: e.clock.Now(), Source: operation.SourceExecutor, Progress: &tc.progress}
		if _, err := e.store.Append(context.Background(), op, f); err != nil {
			t.Fatal(err)
		}
		r := e.get(id, "alice")
		got, _ := json.Marshal(r.json["progress"])
		if r.status != http.StatusOK || r.json["state"] != "running" || !reflect.DeepEqual(decode(t, "progress", got), decode(t, "want", []byte(tc.want))) {
			t.Errorf("GET after progress %s: %d %s", tc.want, r.status, r.body)
		}
	}
	// Before any step completed there is none.
	fresh := e.admit("k-no-progress", demo("no-progress"))
	if r := e.get(fresh.json["operationId"].(string), "alice"); r.json["progress"] != nil || r.status != http.StatusOK {
		t.Errorf("a fresh operation: %d %s", r.status, r.body)
	}
}

// signalTypes defines a type with two signals (the first declared exactly as the contract's
// example of a SignalDeclaration) beside a type with none.
const signalTypes = `
types:
  - name: provision.environment
    version: 1
    description: Provision an environment, once approved.
    worker: provisioner
    deadline: 48h
    stepTimeout: 5m
    maxSteps: 10
    target: "env:{/project}/{/environment}"
    input:
      type: object
      additionalProperties: false
      required: [project, environment]
      properties:
        project: {type: string, pattern: "^[a-z0-9-]{1,40}$"}
        environment: {type: string, pattern: "^[a-z0-9-]{1,40}$"}
    signals:
      approval:
        schema:
          type: object
          additionalProperties: false
          required: [approved]
          properties:
            approved: {type: boolean, description: Whether the work may go on.}
            by: {type: string, maxLength: 200, description: Who approved or rejected it.}
        senders: [tenant]
        notCreator: true
      provisioned:
        schema: {type: object}
        senders: [operator, caller]
        callback: true
  - name: plain.task
    version: 2
    description: A task that hears no signal.
    worker: plain
    deadline: 1h
    stepTimeout: 1m
    maxSteps: 3
    target: "plain:{/name}"
    input:
      type: object
      required: [name]
      properties:
        name: {type: string}
`

// Discovery lists a type's signals as its definition declares them, in the file's order:
// name, schema, senders, notCreator and callback, exactly the contract's SignalDeclaration
// (the harness holds every response to it); a type without signals has no member for them.
// The contract's example of a declaration is what discovery serves for that declaration.
func TestSignalsAreServedAsDeclared(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withTypes(t, signalTypes))
	def, ok := e.service.Registry.Lookup("provision.environment")
	if !ok || len(def.Signals) != 2 {
		t.Fatalf("the definition: %+v", def.Signals)
	}
	want := servedSignals(t, def)
	one := e.do(req{method: http.MethodGet, path: typesPath + "/provision.environment", caller: "alice"})
	if one.status != http.StatusOK || !reflect.DeepEqual(one.json["signals"], any(want)) {
		t.Fatalf("GET provision.environment: %d, signals %v, want %v", one.status, one.json["signals"], want)
	}
	if got := one.json["signals"].([]any)[1].(map[string]any)["senders"]; !reflect.DeepEqual(got, []any{"operator", "caller"}) {
		t.Errorf("senders %v, want the declaration's order", got)
	}
	plain := e.do(req{method: http.MethodGet, path: typesPath + "/plain.task", caller: "alice"})
	if _, has := plain.json["signals"]; plain.status != http.StatusOK || has {
		t.Errorf("GET plain.task: %d %s", plain.status, plain.body)
	}
	list := e.do(req{method: http.MethodGet, path: typesPath, caller: "bob"})
	var items struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(list.body, &items); err != nil {
		t.Fatal(err)
	}
	for _, item := range items.Items {
		if item["name"] == "provision.environment" && !reflect.DeepEqual(item, one.json) {
			t.Errorf("the list serves %v, GET of the type %v", item, one.json)
		}
	}

	var doc map[string]any
	if err := yaml.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	examples, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)["SignalDeclaration"].(map[string]any)["examples"].([]any)
	if len(examples) == 0 {
		t.Fatal("the contract has no example of a SignalDeclaration")
	}
	if ex := jsonObject(t, "SignalDeclaration example", examples[0]); !reflect.DeepEqual(ex, want[0]) {
		t.Errorf("the contract's example\n%v\nis not what discovery serves for that declaration\n%v", ex, want[0])
	}
}

// servedSignals is what discovery serves as a type's signals, from its definition: nil when
// it declares none.
func servedSignals(t *testing.T, def optype.Type) []any {
	t.Helper()
	var out []any
	for _, s := range def.Signals {
		senders := []any{}
		for _, r := range s.Senders {
			senders = append(senders, string(r))
		}
		out = append(out, map[string]any{"name": s.Name, "schema": decode(t, def.Name+" "+s.Name+"'s schema", s.Schema()), "senders": senders,
			"notCreator": s.NotCreator, "callback": s.Callback})
	}
	return out
}

// resolved is a schema of the contract (YAML-decoded) with its $refs to component schemas
// replaced by the schemas.
func resolved(schemas map[string]any, v any) any {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			return resolved(schemas, schemas[strings.TrimPrefix(ref, "#/components/schemas/")])
		}
		out := map[string]any{}
		for k, x := range v {
			out[k] = resolved(schemas, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = resolved(schemas, x)
		}
		return out
	}
	return v
}

// The representation's awaiting (operation.AwaitingView) is the contract's Awaiting: the
// same members, all required; the event's detail has the same shape; and a wait for a
// signal an executor's fact records is served while the work waits, and not once it goes on
// or a cancel is asked for, each answer held to the contract by the harness.
func TestAwaitingIsTheContractsAndTheEvents(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := yaml.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	contract := jsonObject(t, "Awaiting", resolved(schemas, schemas["Awaiting"]))
	var ev map[string]any
	if err := json.Unmarshal(events.Schema(events.StateChangedSchema), &ev); err != nil {
		t.Fatal(err)
	}
	event := ev["$defs"].(map[string]any)["awaiting"].(map[string]any)
	if !reflect.DeepEqual(withoutProse(contract), withoutProse(event)) {
		t.Errorf("the contract's Awaiting\n%v\nis not the event's awaiting\n%v", withoutProse(contract), withoutProse(event))
	}
	rep, ok := reflect.TypeFor[operation.Representation]().FieldByName("Awaiting")
	if !ok || rep.Tag.Get("json") != "awaiting,omitempty" || rep.Type != reflect.TypeFor[*operation.AwaitingView]() {
		t.Fatalf("operation.Representation's awaiting: %+v", rep)
	}
	var fields, required []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[operation.AwaitingView]()) {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if opts != "" || f.Type.Kind() != reflect.String {
			t.Errorf("operation.AwaitingView.%s: json %q, type %s: every member is a required string", f.Name, f.Tag.Get("json"), f.Type)
		}
		fields = append(fields, name)
	}
	for _, r := range contract["required"].([]any) {
		required = append(required, r.(string))
	}
	slices.Sort(fields)
	slices.Sort(required)
	if props := slices.Sorted(maps.Keys(contract["properties"].(map[string]any))); !slices.Equal(fields, props) || !slices.Equal(props, required) {
		t.Errorf("operation.AwaitingView has %v; the contract's Awaiting %v, required %v", fields, props, required)
	}

	// Served while the work waits.
	e := newEnv(t)
	id := e.admit("k-awaiting", demo("awaiting")).json["operationId"].(string)
	e.append(id, operation.KindDispatched, operation.KindStarted)
	executor := func(awaiting *operation.Awaiting) {
		t.Helper()
		op, err := e.store.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		done := 1
		if op.Progress != nil {
			done += op.Progress.CompletedSteps
		}
		f := operation.Fact{Kind: operation.KindProgress, At: e.clock.Now(), Source: operation.SourceExecutor,
			Progress: &operation.Progress{CompletedSteps: done}, Awaiting: awaiting}
		if _, err := e.store.Append(context.Background(), op, f); err != nil {
			t.Fatal(err)
		}
	}
	since := e.clock.Now()
	executor(&operation.Awaiting{Signal: "approval", Since: since, Until: since.Add(90 * time.Minute), Step: 1})
	r := e.get(id, "alice")
	got, _ := json.Marshal(r.json["awaiting"])
	if r.status != http.StatusOK || string(got) != `{"signal":"approval","since":"2026-11-30T10:00:00.000Z","until":"2026-11-30T11:30:00.000Z"}` {
		t.Errorf("GET while the work waits: %d %s", r.status, r.body)
	}
	// The next step ends the wait.
	executor(nil)
	if r := e.get(id, "alice"); r.status != http.StatusOK || r.json["awaiting"] != nil || r.json["state"] != "running" {
		t.Errorf("GET after the next step: %d %s", r.status, r.body)
	}
	// A cancel ends what the representation says of a wait (and, with nothing in flight,
	// the work).
	executor(&operation.Awaiting{Signal: "approval", Since: since, Until: since.Add(time.Hour), Step: 2})
	if r := e.get(id, "alice"); r.json["awaiting"] == nil {
		t.Fatalf("GET while the work waits again: %d %s", r.status, r.body)
	}
	if r := e.cancel(id, "alice"); r.status != http.StatusAccepted || (r.json["state"] != "cancelling" && r.json["state"] != "canceled") || r.json["awaiting"] != nil {
		t.Errorf("cancel while the work waits: %d %s", r.status, r.body)
	}
}
