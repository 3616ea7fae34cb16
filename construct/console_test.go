package construct_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
)

// consoleRoutes are the console's open methods: its files, public.
var consoleRoutes = []string{"GET /console", "HEAD /console", "GET /console/{proxy+}", "HEAD /console/{proxy+}"}

// consoleVars are the api function's variables of the console's sign-in.
var consoleVars = []string{"LONGRUN_CONSOLE_COGNITO_DOMAIN", "LONGRUN_CONSOLE_CLIENT_ID"}

// methods are the REST API's methods by route ("GET /console").
func (tpl *template) methods(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, m := range tpl.of("AWS::ApiGateway::Method") {
		out[fmt.Sprint(m.Properties["HttpMethod"])+" "+tpl.resourcePath(t, m.Properties["ResourceId"])] = m.Properties
	}
	return out
}

// resolve is a value of lr's (a token) as the template has it.
func resolve(lr *construct.Longrun, v *string) any {
	return awscdk.Stack_Of(lr).Resolve(v)
}

// consoleApp synthesizes a dev stage with cognito and console, and the export-orders worker.
func consoleApp(t *testing.T, cognito func(a *app) *construct.CognitoOptions, console construct.ConsoleOptions) (*template, *construct.Longrun) {
	t.Helper()
	a := newApp(t)
	props := &construct.Props{Stage: "dev", CodeDir: codeDir(), Console: console,
		Workers: map[string]awslambda.IFunction{"export-orders": a.pythonWorker("ExportOrders", time.Minute)}}
	if cognito != nil {
		props.Cognito = cognito(a)
	}
	lr := construct.New(a.stack, "Longrun", props)
	return a.template(t), lr
}

// The console is served by default: GET and HEAD of /console and of every file below it
// reach the api function (a Lambda proxy integration) with no authorization, no authorizer
// and no Idempotency-Key, while any other method there is authorized as the API is. With
// IAM authorization the console cannot sign in: no domain, no client, no variables.
func TestConsoleFilesAreOpenAndServedByTheAPIFunction(t *testing.T) {
	tpl := team(t)
	api, _ := tpl.function(t, "longrun-prod-api")
	restAPI, _ := tpl.only(t, "AWS::ApiGateway::RestApi")
	methods := tpl.methods(t)
	for _, route := range consoleRoutes {
		m, ok := methods[route]
		if !ok {
			t.Errorf("no %s", route)
			continue
		}
		integration, _ := m["Integration"].(map[string]any)
		if m["AuthorizationType"] != "NONE" || m["AuthorizerId"] != nil || m["RequestParameters"] != nil || m["RequestValidatorId"] != nil {
			t.Errorf("%s: %v by %v, parameters %v, validator %v; want open", route, m["AuthorizationType"], m["AuthorizerId"], m["RequestParameters"], m["RequestValidatorId"])
		}
		if integration["Type"] != "AWS_PROXY" || !strings.Contains(cfntest.Render(integration["Uri"]), "${"+api+".Arn}") {
			t.Errorf("%s: integration %v, want a Lambda proxy to the api function", route, integration)
		}
	}
	for _, route := range []string{"ANY /console", "ANY /console/{proxy+}"} {
		if m := methods[route]; m == nil || m["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("%s: %v, want authorized (AWS_IAM)", route, m)
		}
	}
	// The function may be invoked for them (one permission per method, as for every other).
	sources := map[string]bool{}
	for _, p := range tpl.of("AWS::Lambda::Permission") {
		sources[cfntest.Render(p.Properties["SourceArn"])] = true
	}
	for _, route := range consoleRoutes {
		verb, path, _ := strings.Cut(route, " ")
		arn := "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + restAPI + "}/${"
		found := false
		for s := range sources {
			found = found || strings.HasPrefix(s, arn) && strings.HasSuffix(s, "/"+verb+strings.ReplaceAll(path, "{proxy+}", "*"))
		}
		if !found {
			t.Errorf("no permission to invoke the api function for %s", route)
		}
	}
	if got, want := cfntest.Render(resolve(tpl.lr, tpl.lr.ConsoleURL)), "https://${"+restAPI+"}.execute-api.${AWS::Region}.${AWS::URLSuffix}/prod/console/"; got != want {
		t.Errorf("ConsoleURL %s, want %s", got, want)
	}
	_, fn := tpl.function(t, "longrun-prod-api")
	for _, v := range append(consoleVars, "LONGRUN_COGNITO_CLIENT_IDS") {
		if got, ok := envOf(fn)[v]; ok {
			t.Errorf("with IAM the api function has %s=%v", v, got)
		}
	}
	if tpl.lr.UserPoolDomain != nil || tpl.lr.ConsoleClient != nil || len(tpl.of("AWS::Cognito::UserPoolDomain")) != 0 {
		t.Errorf("with IAM a hosted UI domain or a console client")
	}
}

// With a pool the construct creates, the console signs in through a hosted UI domain of
// the pool as an app client of its own: the authorization code grant only, no secret (a
// public client: PKCE), scopes openid, email and profile, the stage's console URL as its
// only callback and logout URL (built from the REST API's id and the stage's name, not from
// the stage resource, which would be a cycle through the api function). The api function
// gets the domain and the client, and accepts the client's ID tokens.
func TestConsoleSignsInThroughTheCreatedPool(t *testing.T) {
	tpl, lr := consoleApp(t, func(*app) *construct.CognitoOptions { return &construct.CognitoOptions{} }, construct.ConsoleOptions{})
	poolID, _ := tpl.only(t, "AWS::Cognito::UserPool")
	restAPI, _ := tpl.only(t, "AWS::ApiGateway::RestApi")
	authorizer, _ := tpl.only(t, "AWS::ApiGateway::Authorizer")
	consoleURL := "https://${" + restAPI + "}.execute-api.${AWS::Region}.${AWS::URLSuffix}/dev/console/"
	if got := cfntest.Render(resolve(lr, lr.ConsoleURL)); got != consoleURL {
		t.Errorf("ConsoleURL %s, want %s", got, consoleURL)
	}

	clients := map[string]string{}
	var console map[string]any
	for id, c := range tpl.of("AWS::Cognito::UserPoolClient") {
		clients[fmt.Sprint(c.Properties["ClientName"])] = id
		if c.Properties["ClientName"] == "longrun-dev-console" {
			console = c.Properties
		}
	}
	if len(clients) != 2 || clients["longrun-dev-api"] == "" || console == nil {
		t.Fatalf("app clients %v, want longrun-dev-api and longrun-dev-console", clients)
	}
	for key, want := range map[string]any{
		"UserPoolId":                      map[string]any{"Ref": poolID},
		"GenerateSecret":                  false,
		"AllowedOAuthFlowsUserPoolClient": true,
		"AllowedOAuthFlows":               []any{"code"},
		"AllowedOAuthScopes":              []any{"openid", "email", "profile"},
		"SupportedIdentityProviders":      []any{"COGNITO"},
		"PreventUserExistenceErrors":      "ENABLED",
		"EnableTokenRevocation":           true,
	} {
		got := console[key]
		if list, ok := got.([]any); ok {
			got = slices.Clone(list)
			slices.SortFunc(got.([]any), func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			w := slices.Clone(want.([]any))
			slices.SortFunc(w, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			want = w
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the console client's %s = %v, want %v", key, console[key], want)
		}
	}
	for _, key := range []string{"CallbackURLs", "LogoutURLs"} {
		urls, _ := console[key].([]any)
		if len(urls) != 1 || cfntest.Render(urls[0]) != consoleURL {
			t.Errorf("the console client's %s = %v, want [%s]", key, console[key], consoleURL)
		}
	}
	write, _ := console["WriteAttributes"].([]any)
	read, _ := console["ReadAttributes"].([]any)
	if len(write) == 0 || slices.Contains(write, any("custom:tenant")) || !slices.Contains(read, any("custom:tenant")) {
		t.Errorf("the console client reads %v and writes %v: want custom:tenant read, never written (an explicit list)", read, write)
	}

	domainID, domain := tpl.only(t, "AWS::Cognito::UserPoolDomain")
	if !reflect.DeepEqual(domain.Properties["UserPoolId"], map[string]any{"Ref": poolID}) {
		t.Errorf("domain of %v", domain.Properties["UserPoolId"])
	}
	// longrun-dev- and the last 12 hex digits of the stack id's UUID.
	uuid := map[string]any{"Fn::Select": []any{float64(2), map[string]any{"Fn::Split": []any{"/", map[string]any{"Ref": "AWS::StackId"}}}}}
	wantPrefix := map[string]any{"Fn::Join": []any{"", []any{"longrun-dev-",
		map[string]any{"Fn::Select": []any{float64(4), map[string]any{"Fn::Split": []any{"-", uuid}}}}}}}
	if !reflect.DeepEqual(domain.Properties["Domain"], wantPrefix) {
		t.Errorf("domain prefix %s, want %s", cfntest.Render(domain.Properties["Domain"]), cfntest.Render(wantPrefix))
	}

	_, api := tpl.function(t, "longrun-dev-api")
	env := envOf(api)
	if got, want := cfntest.Render(env["LONGRUN_CONSOLE_COGNITO_DOMAIN"]), "https://${"+domainID+"}.auth.${AWS::Region}.amazoncognito.com"; got != want {
		t.Errorf("LONGRUN_CONSOLE_COGNITO_DOMAIN = %s, want %s", got, want)
	}
	if got := env["LONGRUN_CONSOLE_CLIENT_ID"]; !reflect.DeepEqual(got, map[string]any{"Ref": clients["longrun-dev-console"]}) {
		t.Errorf("LONGRUN_CONSOLE_CLIENT_ID = %v, want the console client", got)
	}
	if got, want := cfntest.Render(env["LONGRUN_COGNITO_CLIENT_IDS"]), "${"+clients["longrun-dev-api"]+"},${"+clients["longrun-dev-console"]+"}"; got != want {
		t.Errorf("LONGRUN_COGNITO_CLIENT_IDS = %s, want %s", got, want)
	}
	for _, f := range []string{"dispatcher", "notifier", "recorder", "reconciler"} {
		_, props := tpl.function(t, "longrun-dev-"+f)
		for _, v := range consoleVars {
			if _, ok := envOf(props)[v]; ok {
				t.Errorf("%s has %s", f, v)
			}
		}
	}
	if lr.UserPoolDomain == nil || lr.ConsoleClient == nil || lr.UserPoolClient == nil {
		t.Errorf("Longrun: domain %v, console client %v, client %v", lr.UserPoolDomain, lr.ConsoleClient, lr.UserPoolClient)
	}
	// The files are open; every other method is the pool's.
	for route, m := range tpl.methods(t) {
		want, by := "COGNITO_USER_POOLS", any(map[string]any{"Ref": authorizer})
		if slices.Contains(consoleRoutes, route) || strings.HasSuffix(route, " /v1/callbacks/{token}") {
			want, by = "NONE", nil
		}
		if m["AuthorizationType"] != want || !reflect.DeepEqual(m["AuthorizerId"], by) {
			t.Errorf("%s: %v by %v, want %s by %v", route, m["AuthorizationType"], m["AuthorizerId"], want, by)
		}
	}

	// A prefix of the app's own.
	tpl, _ = consoleApp(t, func(*app) *construct.CognitoOptions { return &construct.CognitoOptions{} }, construct.ConsoleOptions{DomainPrefix: "team-ops-console"})
	if _, domain := tpl.only(t, "AWS::Cognito::UserPoolDomain"); domain.Properties["Domain"] != "team-ops-console" {
		t.Errorf("domain prefix %v, want team-ops-console", domain.Properties["Domain"])
	}
}

// With an existing pool the console signs in when the app names its hosted UI and client:
// the api function gets both (the domain as the origin the function keeps) and accepts the
// client's ID tokens beside the pool's other clients; without them it gets neither.
func TestConsoleWithAnExistingPool(t *testing.T) {
	pool := func(a *app) *construct.CognitoOptions {
		return &construct.CognitoOptions{ClientIDs: []string{"apiclient"},
			UserPool: awscognito.UserPool_FromUserPoolId(a.stack, jsii.String("Pool"), jsii.String("us-east-1_example"))}
	}
	for _, tc := range []struct {
		name    string
		console construct.ConsoleOptions
		want    map[string]any
	}{
		{"with the console's client", construct.ConsoleOptions{CognitoDomain: "https://Auth.Example.com/", ClientID: "consoleclient"},
			map[string]any{"LONGRUN_CONSOLE_COGNITO_DOMAIN": "https://auth.example.com", "LONGRUN_CONSOLE_CLIENT_ID": "consoleclient",
				"LONGRUN_COGNITO_CLIENT_IDS": "apiclient,consoleclient"}},
		{"with a client already accepted", construct.ConsoleOptions{CognitoDomain: "https://ops.auth.us-east-1.amazoncognito.com", ClientID: "apiclient"},
			map[string]any{"LONGRUN_CONSOLE_COGNITO_DOMAIN": "https://ops.auth.us-east-1.amazoncognito.com", "LONGRUN_CONSOLE_CLIENT_ID": "apiclient",
				"LONGRUN_COGNITO_CLIENT_IDS": "apiclient"}},
		{"without", construct.ConsoleOptions{}, map[string]any{"LONGRUN_COGNITO_CLIENT_IDS": "apiclient"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl, lr := consoleApp(t, pool, tc.console)
			_, api := tpl.function(t, "longrun-dev-api")
			got := map[string]any{}
			for _, v := range append(consoleVars, "LONGRUN_COGNITO_CLIENT_IDS") {
				if x, ok := envOf(api)[v]; ok {
					got[v] = x
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("the api function's %v, want %v", got, tc.want)
			}
			if n := len(tpl.of("AWS::Cognito::UserPoolDomain")) + len(tpl.of("AWS::Cognito::UserPoolClient")); n != 0 || lr.ConsoleClient != nil {
				t.Errorf("%d Cognito resources created beside an existing pool", n)
			}
			if _, ok := tpl.methods(t)["GET /console/{proxy+}"]; !ok || lr.ConsoleURL == nil {
				t.Errorf("no console")
			}
		})
	}
}

// Console.Disabled leaves out the routes (a request there meets the root's authorized
// {proxy+}), the hosted UI domain, the console's client and the variables.
func TestConsoleCanBeTurnedOff(t *testing.T) {
	tpl, lr := consoleApp(t, func(*app) *construct.CognitoOptions { return &construct.CognitoOptions{} }, construct.ConsoleOptions{Disabled: true})
	for route := range tpl.methods(t) {
		if strings.Contains(route, "/console") {
			t.Errorf("a console route: %s", route)
		}
	}
	for _, r := range tpl.of("AWS::ApiGateway::Resource") {
		if r.Properties["PathPart"] == "console" {
			t.Errorf("a /console resource")
		}
	}
	if n := len(tpl.of("AWS::Cognito::UserPoolDomain")); n != 0 {
		t.Errorf("%d hosted UI domains", n)
	}
	clientID, _ := tpl.only(t, "AWS::Cognito::UserPoolClient")
	_, api := tpl.function(t, "longrun-dev-api")
	for _, v := range consoleVars {
		if x, ok := envOf(api)[v]; ok {
			t.Errorf("%s=%v", v, x)
		}
	}
	if got := envOf(api)["LONGRUN_COGNITO_CLIENT_IDS"]; !reflect.DeepEqual(got, map[string]any{"Ref": clientID}) {
		t.Errorf("LONGRUN_COGNITO_CLIENT_IDS = %v, want the API's client alone", got)
	}
	if lr.ConsoleURL != nil || lr.ConsoleClient != nil || lr.UserPoolDomain != nil {
		t.Errorf("Longrun exposes a console: %v %v %v", lr.ConsoleURL, lr.ConsoleClient, lr.UserPoolDomain)
	}
}

// Console settings that Cognito, the api function or the authorization would refuse stop
// synthesis with a message that names them.
func TestConsoleMistakesStopSynthesis(t *testing.T) {
	existing := func(a *app) *construct.CognitoOptions {
		return &construct.CognitoOptions{ClientIDs: []string{"c"},
			UserPool: awscognito.UserPool_FromUserPoolId(a.stack, jsii.String("Pool"), jsii.String("us-east-1_x"))}
	}
	created := func(*app) *construct.CognitoOptions { return &construct.CognitoOptions{} }
	for _, tc := range []struct {
		name    string
		stage   string
		cognito func(a *app) *construct.CognitoOptions
		console construct.ConsoleOptions
		message string
	}{
		{"off with settings", "dev", created, construct.ConsoleOptions{Disabled: true, DomainPrefix: "ops"}, "Console: Disabled with a DomainPrefix"},
		{"a prefix with IAM", "dev", nil, construct.ConsoleOptions{DomainPrefix: "ops"}, "Console.DomainPrefix names the hosted UI domain of a pool the construct creates"},
		{"a prefix with an existing pool", "dev", existing, construct.ConsoleOptions{DomainPrefix: "ops"}, "Console.DomainPrefix names"},
		{"a prefix with capitals", "dev", created, construct.ConsoleOptions{DomainPrefix: "Ops"}, `Console.DomainPrefix "Ops": want lowercase letters`},
		{"a prefix ending in a hyphen", "dev", created, construct.ConsoleOptions{DomainPrefix: "ops-"}, `Console.DomainPrefix "ops-"`},
		{"a prefix too long", "dev", created, construct.ConsoleOptions{DomainPrefix: strings.Repeat("a", 64)}, "at most 63"},
		{"a reserved word", "dev", created, construct.ConsoleOptions{DomainPrefix: "team-cognito"}, `Console.DomainPrefix "team-cognito" contains "cognito"`},
		{"a stage with a reserved word", "AWS-test", created, construct.ConsoleOptions{}, `the default domain prefix "longrun-aws-test-"… (from Stage) contains "aws", which Cognito does not allow in a domain prefix: set Console.DomainPrefix`},
		{"a client with IAM", "dev", nil, construct.ConsoleOptions{CognitoDomain: "https://a.example.com", ClientID: "x"}, "Console.CognitoDomain and Console.ClientID are an existing pool's"},
		{"a client with a created pool", "dev", created, construct.ConsoleOptions{CognitoDomain: "https://a.example.com", ClientID: "x"}, "an existing pool's"},
		{"a client without a domain", "dev", existing, construct.ConsoleOptions{ClientID: "x"}, "Console.CognitoDomain and Console.ClientID go together"},
		{"a domain that is no origin", "dev", existing, construct.ConsoleOptions{CognitoDomain: "https://a.example.com/login", ClientID: "x"}, `Console.CognitoDomain "https://a.example.com/login" is not an https origin`},
		{"a plain HTTP domain", "dev", existing, construct.ConsoleOptions{CognitoDomain: "http://a.example.com", ClientID: "x"}, "is not an https origin"},
		{"a client id that is none", "dev", existing, construct.ConsoleOptions{CognitoDomain: "https://a.example.com", ClientID: "a,b"}, `Console.ClientID "a,b" is not a Cognito app client id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t)
			props := &construct.Props{Stage: tc.stage, CodeDir: codeDir(), Console: tc.console}
			if tc.cognito != nil {
				props.Cognito = tc.cognito(a)
			}
			if msg := mustPanic(t, func() { construct.New(a.stack, "Longrun", props) }); !strings.Contains(msg, tc.message) {
				t.Errorf("panic %q, want %q", msg, tc.message)
			}
		})
	}
}
