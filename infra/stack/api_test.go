package stack_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/infra/stack"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
)

// The contract's methods (api/openapi.yaml); every other method and path is the function's
// to answer, with 405 or 404.
var contractMethods = []string{
	"POST /v1/operations",
	"GET /v1/operations",
	"GET /v1/operations/{operationId}",
	"POST /v1/operations/{operationId}/cancel",
	"POST /v1/operations/{operationId}/resolve",
	"POST /v1/operations/{operationId}/signals/{signal}",
	"GET /v1/operation-types",
	"GET /v1/operation-types/{name}",
	"POST /v1/callbacks/{token}",
}

// consoleMethods are the operations console's: GET and HEAD of its static files.
var consoleMethods = []string{"GET /console", "HEAD /console", "GET /console/{proxy+}", "HEAD /console/{proxy+}"}

// openMethods are the methods API Gateway does not authorize: a callback URL's, whose token
// is its credential (the function checks it), and the ANY beside it (the function's 405);
// and the console's, public files (the ANY beside them is authorized).
var openMethods = map[string]bool{"POST /v1/callbacks/{token}": true, "ANY /v1/callbacks/{token}": true,
	"GET /console": true, "HEAD /console": true, "GET /console/{proxy+}": true, "HEAD /console/{proxy+}": true}

// keyed are the methods that must carry an Idempotency-Key, which API Gateway checks.
var keyed = map[string]bool{"POST /v1/operations": true, "POST /v1/operations/{operationId}/signals/{signal}": true}

// authorizations are the ways a stage authorizes its callers: IAM, Cognito with the pool
// the stack creates, Cognito with an existing pool.
var authorizations = []struct {
	props stack.Props
	auth  string
}{
	{stack.Props{Stage: "dev"}, "AWS_IAM"},
	{stack.Props{Stage: "dev", Cognito: true}, "COGNITO_USER_POOLS"},
	{stack.Props{Stage: "dev", CognitoUserPoolArn: examplePool, CognitoClientIDs: []string{"exampleclient"}}, "COGNITO_USER_POOLS"},
}

const examplePool = "arn:aws:cognito-idp:us-east-1:123456789012:userpool/us-east-1_example"

// apiMethod is one AWS::ApiGateway::Method, with its resource's path.
type apiMethod struct {
	id, verb, path string
	props          map[string]any
}

func (m apiMethod) route() string { return m.verb + " " + m.path }

// restAPI is the REST API's resource tree as the template has it.
type restAPI struct {
	methods  []apiMethod
	children map[string][]string // a resource's path → its children's path parts
}

// api reads the REST API's resources ("/" is the root) and methods from the template.
func (tpl *template) api(t *testing.T) restAPI {
	t.Helper()
	resources := tpl.of("AWS::ApiGateway::Resource")
	paths := map[string]string{}
	var pathOf func(ref any) string
	pathOf = func(ref any) string {
		m, _ := ref.(map[string]any)
		if att, ok := m["Fn::GetAtt"].([]any); ok && len(att) == 2 && att[1] == "RootResourceId" {
			return "/"
		}
		id, _ := m["Ref"].(string)
		r, ok := resources[id]
		if !ok {
			t.Fatalf("no resource %v", ref)
		}
		if p, ok := paths[id]; ok {
			return p
		}
		p := strings.TrimSuffix(pathOf(r.Properties["ParentId"]), "/") + "/" + r.Properties["PathPart"].(string)
		paths[id] = p
		return p
	}
	api := restAPI{children: map[string][]string{"/": nil}}
	for id, r := range resources {
		p := pathOf(map[string]any{"Ref": id})
		parent := p[:strings.LastIndex(p, "/")]
		if parent == "" {
			parent = "/"
		}
		api.children[parent] = append(api.children[parent], r.Properties["PathPart"].(string))
		if _, ok := api.children[p]; !ok {
			api.children[p] = nil
		}
	}
	for id, m := range tpl.of("AWS::ApiGateway::Method") {
		api.methods = append(api.methods, apiMethod{id, m.Properties["HttpMethod"].(string), pathOf(m.Properties["ResourceId"]), m.Properties})
	}
	sort.Slice(api.methods, func(i, j int) bool { return api.methods[i].route() < api.methods[j].route() })
	return api
}

// resolve descends the resource tree for a request path as API Gateway routes it: a
// segment takes the static child of that name, else the path-variable child; a greedy
// {name+} takes the rest. It returns the resource's path, or "" when none matches.
func (a restAPI) resolve(path string) string {
	at := "/"
	segments := strings.Split(strings.Trim(path, "/"), "/")
	if path == "/" {
		segments = nil
	}
	for i := 0; i < len(segments); i++ {
		next := ""
		for _, c := range a.children[at] {
			if c == segments[i] {
				next = c
				break
			}
			if strings.HasPrefix(c, "{") {
				next = c
			}
		}
		if next == "" {
			return ""
		}
		at = strings.TrimSuffix(at, "/") + "/" + next
		if strings.HasSuffix(next, "+}") {
			break
		}
	}
	return at
}

func (a restAPI) has(route string) bool {
	for _, m := range a.methods {
		if m.route() == route {
			return true
		}
	}
	return false
}

// No method is open but a callback URL's and the console's files': the contract's methods,
// the ANY beside them and the greedy catch-alls all authorize the caller the stage's one
// way, and the API has no other methods. POST /v1/callbacks/{token} and the ANY beside it
// have no authorization and no authorizer (the token is the credential); the greedy
// resource below them is authorized. GET and HEAD of /console and /console/{proxy+} are
// open (static files, no data), the ANY beside them is not.
func TestEveryMethodIsAuthorized(t *testing.T) {
	for _, tc := range authorizations {
		tpl := synthesize(t, tc.props)
		api := tpl.api(t)
		var authorizer any
		for id := range tpl.of("AWS::ApiGateway::Authorizer") {
			if authorizer != nil {
				t.Fatalf("%s: more than one authorizer", tc.auth)
			}
			authorizer = map[string]any{"Ref": id}
		}
		if (authorizer != nil) != (tc.auth == "COGNITO_USER_POOLS") {
			t.Fatalf("%s: authorizer %v", tc.auth, authorizer)
		}
		open := 0
		for _, m := range api.methods {
			want, by := tc.auth, authorizer
			if openMethods[m.route()] {
				want, by = "NONE", nil
				open++
			}
			if m.props["AuthorizationType"] != want || !reflect.DeepEqual(m.props["AuthorizerId"], by) {
				t.Errorf("%s: authorization %v by %v, want %s by %v", m.route(), m.props["AuthorizationType"], m.props["AuthorizerId"], want, by)
			}
		}
		if open != len(openMethods) {
			t.Errorf("%s: %d of the open methods %v", tc.auth, open, openMethods)
		}
		// What was checked is every method there is: the contract's, the console's and ANY on
		// every resource.
		want := append(append([]string(nil), contractMethods...), consoleMethods...)
		for p := range api.children {
			want = append(want, "ANY "+p)
		}
		var got []string
		for _, m := range api.methods {
			got = append(got, m.route())
		}
		sort.Strings(want)
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: methods\n%s\nwant\n%s", tc.auth, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// Every resource forwards the methods it does not define to the function (its 405 with
// Allow), with the same authorization (a callback URL's ANY is as open as its POST; the
// console's ANY is authorized, its GET and HEAD are not) and the same Lambda proxy
// integration as the contract's methods, and without the admission's validator.
func TestEveryResourceForwardsAnyMethod(t *testing.T) {
	for _, tc := range authorizations {
		api := synthesize(t, tc.props).api(t)
		var reference *apiMethod
		for i, m := range api.methods {
			if m.route() == contractMethods[0] {
				reference = &api.methods[i]
			}
		}
		if reference == nil {
			t.Fatalf("%s: no %s", tc.auth, contractMethods[0])
		}
		if integration, _ := reference.props["Integration"].(map[string]any); integration["Type"] != "AWS_PROXY" {
			t.Fatalf("%s: %s is not a Lambda proxy integration: %v", tc.auth, reference.route(), integration)
		}
		for p := range api.children {
			var anyMethod *apiMethod
			for i, m := range api.methods {
				if m.route() == "ANY "+p {
					anyMethod = &api.methods[i]
				}
			}
			if anyMethod == nil {
				t.Errorf("%s: %s has no ANY method", tc.auth, p)
				continue
			}
			for _, m := range api.methods {
				if m.path != p && m.id != reference.id {
					continue
				}
				keys := []string{"AuthorizationType", "AuthorizerId", "Integration"}
				if openMethods[m.route()] != openMethods["ANY "+p] {
					keys = keys[2:] // an open ANY is authorized as the POST beside it is, an open GET not as its ANY
				}
				for _, key := range keys {
					if !reflect.DeepEqual(anyMethod.props[key], m.props[key]) {
						t.Errorf("%s: ANY %s %s %v, %s has %v", tc.auth, p, key, anyMethod.props[key], m.route(), m.props[key])
					}
				}
			}
			if anyMethod.props["RequestValidatorId"] != nil || anyMethod.props["RequestParameters"] != nil {
				t.Errorf("%s: ANY %s validates the request: %v %v", tc.auth, p, anyMethod.props["RequestValidatorId"], anyMethod.props["RequestParameters"])
			}
		}
	}
}

// A path the API does not have reaches the function (its 404), whatever its depth: every
// resource has a path-variable child, a greedy {proxy+} wherever no other variable takes the
// next segment, so a request path resolves to a resource segment by segment, and that
// resource has ANY. (API Gateway authorizes before it integrates: an anonymous caller still
// gets its 401.)
func TestUnknownPathsReachTheFunction(t *testing.T) {
	api := dev(t).api(t)
	var proxies []string
	for p, children := range api.children {
		if strings.HasSuffix(p, "+}") {
			if len(children) != 0 {
				t.Errorf("%s has children %v", p, children)
			}
			proxies = append(proxies, p)
			continue
		}
		variables := 0
		for _, c := range children {
			if strings.HasPrefix(c, "{") {
				variables++
			}
		}
		if variables != 1 {
			t.Errorf("%s: %d path-variable children in %v, want 1 (a {proxy+} unless another variable takes the next segment)", p, variables, children)
		}
	}
	sort.Strings(proxies)
	if want := []string{"/console/{proxy+}", "/v1/callbacks/{token}/{proxy+}", "/v1/operation-types/{name}/{proxy+}", "/v1/operations/{operationId}/cancel/{proxy+}",
		"/v1/operations/{operationId}/resolve/{proxy+}", "/v1/operations/{operationId}/signals/{signal}/{proxy+}",
		"/v1/operations/{operationId}/{proxy+}", "/v1/{proxy+}", "/{proxy+}"}; !reflect.DeepEqual(proxies, want) {
		t.Errorf("greedy resources %v, want %v", proxies, want)
	}
	for path, want := range map[string]string{
		"/":                               "/",
		"/nothing":                        "/{proxy+}",
		"/v2/operations":                  "/{proxy+}",
		"/v1":                             "/v1",
		"/v1/nothing/deeper":              "/v1/{proxy+}",
		"/v1/operations":                  "/v1/operations",
		"/v1/operations/op_1":             "/v1/operations/{operationId}",
		"/v1/operations/op_1/nothing":     "/v1/operations/{operationId}/{proxy+}",
		"/v1/operations/op_1/cancel":      "/v1/operations/{operationId}/cancel",
		"/v1/operations/op_1/cancel/x":    "/v1/operations/{operationId}/cancel/{proxy+}",
		"/v1/operations/op_1/resolve/":    "/v1/operations/{operationId}/resolve",
		"/v1/operations/op_1/resolve/a/b": "/v1/operations/{operationId}/resolve/{proxy+}",
		"/v1/operation-types":             "/v1/operation-types",
		"/v1/operation-types/demo.task":   "/v1/operation-types/{name}",
		"/v1/operation-types/a/b":         "/v1/operation-types/{name}/{proxy+}",
		"/v1/operations/op_1/signals":     "/v1/operations/{operationId}/signals",
		"/v1/operations/op_1/signals/go":  "/v1/operations/{operationId}/signals/{signal}",
		"/v1/operations/op_1/signals/a/b": "/v1/operations/{operationId}/signals/{signal}/{proxy+}",
		"/v1/callbacks":                   "/v1/callbacks",
		"/v1/callbacks/tok.en":            "/v1/callbacks/{token}",
		"/v1/callbacks/tok.en/more":       "/v1/callbacks/{token}/{proxy+}",
		"/console":                        "/console",
		"/console/":                       "/console",
		"/console/app.js":                 "/console/{proxy+}",
		"/console/a/b":                    "/console/{proxy+}",
		"/consoles":                       "/{proxy+}",
	} {
		got := api.resolve(path)
		if got != want || !api.has("ANY "+got) {
			t.Errorf("%s resolves to %q (ANY: %v), want %q with ANY", path, got, api.has("ANY "+got), want)
		}
	}
}

// Admission and a signal are the methods API Gateway checks itself: POST /v1/operations and
// POST …/signals/{signal} require Idempotency-Key. The explicit POST wins over ANY on its
// resource; nothing else requires the header, so a DELETE there is the function's 405, not a
// 400 (and a callback URL takes no key: a third party's retry is recognized by its body).
func TestAdmissionRequiresIdempotencyKey(t *testing.T) {
	for _, tc := range authorizations {
		tpl := synthesize(t, tc.props)
		validators := tpl.of("AWS::ApiGateway::RequestValidator")
		checked := 0
		for _, m := range tpl.api(t).methods {
			params, _ := m.props["RequestParameters"].(map[string]any)
			ref, _ := m.props["RequestValidatorId"].(map[string]any)
			if !keyed[m.route()] {
				if params != nil || ref != nil {
					t.Errorf("%s: %s validates %v with %v", tc.auth, m.route(), params, ref)
				}
				continue
			}
			validator, ok := validators[fmt.Sprint(ref["Ref"])]
			checked++
			if !reflect.DeepEqual(params, map[string]any{"method.request.header.Idempotency-Key": true}) ||
				!ok || validator.Properties["ValidateRequestParameters"] != true {
				t.Errorf("%s: %s must require Idempotency-Key: %v, validator %v", tc.auth, m.route(), params, validator.Properties)
			}
		}
		if checked != len(keyed) {
			t.Errorf("%s: %d of the keyed methods %v", tc.auth, checked, keyed)
		}
	}
}

// The api function may be invoked by this REST API only, one permission per method for
// the stage, each for that method and path alone (none for the console's test
// invocations: allowTestInvoke is off), and its resource policy stays under Lambda's 20 KB
// limit.
func TestAPIInvokePermissionsAreScoped(t *testing.T) {
	tpl := dev(t)
	fn := tpl.functionID(t, "api")
	var restAPI, stage string
	for id := range tpl.of("AWS::ApiGateway::RestApi") {
		restAPI = id
	}
	for id := range tpl.of("AWS::ApiGateway::Stage") {
		stage = id
	}
	want := map[string]bool{}
	for _, m := range tpl.api(t).methods {
		verb := m.verb
		if verb == "ANY" {
			verb = "*"
		}
		path := m.path
		for strings.Contains(path, "{") {
			path = path[:strings.Index(path, "{")] + "*" + path[strings.Index(path, "}")+1:]
		}
		want["arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${"+restAPI+"}/${"+stage+"}/"+verb+path] = true
	}
	got := map[string]bool{}
	size := len(`{"Version":"2012-10-17","Id":"default","Statement":[]}`)
	for id, p := range tpl.of("AWS::Lambda::Permission") {
		target, _ := p.Properties["FunctionName"].(map[string]any)
		if !reflect.DeepEqual(target["Fn::GetAtt"], []any{fn, "Arn"}) {
			continue
		}
		source := cfntest.Render(p.Properties["SourceArn"])
		if p.Properties["Principal"] != "apigateway.amazonaws.com" || p.Properties["Action"] != "lambda:InvokeFunction" || !want[source] || got[source] {
			t.Errorf("%s: %s may %s from %s", id, p.Properties["Principal"], p.Properties["Action"], source)
		}
		got[source] = true
		// The statement Lambda keeps, with the longest values the tokens can take (a Sid is
		// at most 100 characters).
		long := strings.NewReplacer("${AWS::Partition}", "aws-us-gov", "${AWS::Region}", "ap-southeast-99",
			"${AWS::AccountId}", "123456789012", "${"+restAPI+"}", "abcdefghij", "${"+stage+"}", "dev").Replace(source)
		statement, _ := json.Marshal(map[string]any{"Sid": strings.Repeat("x", 100), "Effect": "Allow",
			"Principal": map[string]string{"Service": "apigateway.amazonaws.com"}, "Action": "lambda:InvokeFunction",
			"Resource":  "arn:aws-us-gov:lambda:ap-southeast-99:123456789012:function:longrun-dev-api",
			"Condition": map[string]any{"ArnLike": map[string]string{"AWS:SourceArn": long}}})
		size += len(statement) + 1
	}
	if len(got) != len(want) {
		for s := range want {
			if !got[s] {
				t.Errorf("no permission for %s", s)
			}
		}
	}
	if size > 20*1024 {
		t.Errorf("the api function's resource policy would be %d bytes, over Lambda's 20 KB", size)
	}
	t.Logf("%d permissions, a policy of at most %d bytes", len(got), size)
}

// Execution logs (issue #20, cdk-nag's APIG6): every method logs its errors, never a body
// (DataTraceEnabled off), into a group the stack creates with a retention before the stage
// exists (API Gateway would create it without one).
func TestExecutionLogsAreErrorsOnlyWithoutBodies(t *testing.T) {
	tpl := dev(t)
	stageID, stage := only(t, "stages", tpl.of("AWS::ApiGateway::Stage"))
	settings, _ := stage.Properties["MethodSettings"].([]any)
	if len(settings) != 1 {
		t.Fatalf("method settings %v", settings)
	}
	s := settings[0].(map[string]any)
	if s["HttpMethod"] != "*" || s["ResourcePath"] != "/*" || s["LoggingLevel"] != "ERROR" || s["DataTraceEnabled"] != false {
		t.Errorf("%s: method settings %v", stageID, s)
	}
	found := false
	for id, g := range tpl.of("AWS::Logs::LogGroup") {
		name := cfntest.Render(g.Properties["LogGroupName"])
		if !strings.HasPrefix(name, "API-Gateway-Execution-Logs_") {
			continue
		}
		found = true
		apiID, _ := only(t, "REST APIs", tpl.of("AWS::ApiGateway::RestApi"))
		if name != "API-Gateway-Execution-Logs_${"+apiID+"}/dev" || g.Properties["RetentionInDays"] != float64(30) {
			t.Errorf("%s: %s kept %v days", id, name, g.Properties["RetentionInDays"])
		}
		if deps, _ := stage.DependsOn.([]any); !slices.Contains(deps, any(id)) {
			t.Errorf("the stage does not wait for %s: %v", id, stage.DependsOn)
		}
	}
	if !found {
		t.Error("no execution log group")
	}
}

// A callback URL is the stage's: the recorder writes it into step requests under
// LONGRUN_CALLBACK_BASE, the stage's URL without its trailing slash (ApiUrl is …/<stage>/),
// and only the recorder has it; the api function checks its token with the seal key
// (LONGRUN_SEAL_SECRET, which it may read).
func TestCallbackURLsAreTheStages(t *testing.T) {
	for _, tc := range authorizations {
		tpl := synthesize(t, tc.props)
		restAPI, _ := only(t, "REST APIs", tpl.of("AWS::ApiGateway::RestApi"))
		stage, _ := only(t, "stages", tpl.of("AWS::ApiGateway::Stage"))
		secret, _ := only(t, "secrets", tpl.of("AWS::SecretsManager::Secret"))
		want := "https://${" + restAPI + "}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${" + stage + "}"
		for id, fn := range tpl.of("AWS::Lambda::Function") {
			name := fmt.Sprint(fn.Properties["FunctionName"])
			env, _ := fn.Properties["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			base, ok := vars["LONGRUN_CALLBACK_BASE"]
			if recorder := name == "longrun-dev-recorder"; ok != recorder || recorder && cfntest.Render(base) != want {
				t.Errorf("%s: %s (%s) LONGRUN_CALLBACK_BASE = %v, want it on the recorder only, %s", tc.auth, name, id, base, want)
			}
			if name == "longrun-dev-api" && !reflect.DeepEqual(vars["LONGRUN_SEAL_SECRET"], map[string]any{"Ref": secret}) {
				t.Errorf("%s: the api's LONGRUN_SEAL_SECRET = %v, want the seal secret %s", tc.auth, vars["LONGRUN_SEAL_SECRET"], secret)
			}
		}
		if got := cfntest.Render(tpl.Outputs["ApiUrl"].Value); got != want+"/" {
			t.Errorf("%s: ApiUrl %s, want the callback base and a slash", tc.auth, got)
		}
	}
}
