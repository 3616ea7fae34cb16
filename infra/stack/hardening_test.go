package stack_test

// Issue #12, the security findings that live in the deployment: each test fails without
// its fix.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/longrun-dev/longrun/construct"
	"github.com/longrun-dev/longrun/infra/stack"
	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/logpattern"
	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/service/notify"
	"github.com/longrun-dev/longrun/internal/testkit/cfntest"
)

// env is the environment of the function named longrun-<stage>-<name>.
func (tpl *template) env(t *testing.T, stage, name string) map[string]any {
	t.Helper()
	for _, r := range tpl.of("AWS::Lambda::Function") {
		if r.Properties["FunctionName"] == "longrun-"+stage+"-"+name {
			env, _ := r.Properties["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			return vars
		}
	}
	t.Fatalf("no function longrun-%s-%s", stage, name)
	return nil
}

// functionNames lists the stage's functions without the longrun-<stage>- prefix.
func (tpl *template) functionNames(stage string) []string {
	var names []string
	for _, r := range tpl.of("AWS::Lambda::Function") {
		names = append(names, strings.TrimPrefix(r.Properties["FunctionName"].(string), "longrun-"+stage+"-"))
	}
	sort.Strings(names)
	return names
}

// statements are the statements of the policies attached to a function's role (fn as in
// construct ids: "WorkerDemoTask").
func (tpl *template) statements(fn string) []map[string]any {
	var out []map[string]any
	for id, p := range tpl.of("AWS::IAM::Policy") {
		if !strings.HasPrefix(id, fn+"ServiceRole") {
			continue
		}
		for _, st := range p.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			out = append(out, st.(map[string]any))
		}
	}
	return out
}

func only[V any](t *testing.T, what string, m map[string]V) (string, V) {
	t.Helper()
	if len(m) != 1 {
		t.Fatalf("%d %s, want 1", len(m), what)
	}
	for k, v := range m {
		return k, v
	}
	panic("unreachable")
}

func getAtt(id, attr string) map[string]any { return map[string]any{"Fn::GetAtt": []any{id, attr}} }

// 1 (high). With Cognito the stack creates the pool: administrators create users (no
// self sign-up), and its app clients (the API's and the console's) read custom:tenant but
// cannot write it; the API accepts ID tokens of those two only (LONGRUN_COGNITO_CLIENT_IDS).
func TestCognitoPoolKeepsTheTenantAdminOnly(t *testing.T) {
	tpl := synthesize(t, fromContext(t, map[string]any{"authorizer": "cognito"}))
	poolID, pool := only(t, "user pools", tpl.of("AWS::Cognito::UserPool"))
	if admin, _ := pool.Properties["AdminCreateUserConfig"].(map[string]any); admin["AllowAdminCreateUserOnly"] != true {
		t.Errorf("self sign-up is on: %v", pool.Properties["AdminCreateUserConfig"])
	}
	var tenant map[string]any
	for _, a := range pool.Properties["Schema"].([]any) {
		if a := a.(map[string]any); a["Name"] == construct.TenantAttribute {
			tenant = a
		}
	}
	if tenant == nil || tenant["AttributeDataType"] != "String" {
		t.Errorf("no custom:%s string attribute: %v", construct.TenantAttribute, pool.Properties["Schema"])
	}
	clients := map[string]string{}
	for id, client := range tpl.of("AWS::Cognito::UserPoolClient") {
		name := fmt.Sprint(client.Properties["ClientName"])
		clients[name] = id
		if !reflect.DeepEqual(client.Properties["UserPoolId"], map[string]any{"Ref": poolID}) {
			t.Errorf("%s: client of %v", name, client.Properties["UserPoolId"])
		}
		// Without a list a client may write every attribute: the list must be there, and
		// lack the tenant.
		write, _ := client.Properties["WriteAttributes"].([]any)
		read, _ := client.Properties["ReadAttributes"].([]any)
		if len(write) == 0 || slices.Contains(write, any("custom:tenant")) {
			t.Errorf("%s: write attributes %v: want a list without custom:tenant", name, client.Properties["WriteAttributes"])
		}
		if !slices.Contains(read, any("custom:tenant")) {
			t.Errorf("%s cannot read custom:tenant (the ID token would lack it): %v", name, read)
		}
		// The API's client signs in with SRP, the console's through the hosted UI (the
		// authorization code grant with PKCE); neither has a secret.
		oauth := name == "longrun-dev-console"
		if client.Properties["GenerateSecret"] != false || client.Properties["AllowedOAuthFlowsUserPoolClient"] != oauth ||
			oauth && !reflect.DeepEqual(client.Properties["AllowedOAuthFlows"], []any{"code"}) {
			t.Errorf("%s: secret %v, OAuth %v %v", name, client.Properties["GenerateSecret"], client.Properties["AllowedOAuthFlowsUserPoolClient"], client.Properties["AllowedOAuthFlows"])
		}
	}
	if len(clients) != 2 || clients["longrun-dev-api"] == "" || clients["longrun-dev-console"] == "" {
		t.Fatalf("app clients %v, want longrun-dev-api and longrun-dev-console", clients)
	}
	if got, want := cfntest.Render(tpl.env(t, "dev", "api")["LONGRUN_COGNITO_CLIENT_IDS"]), "${"+clients["longrun-dev-api"]+"},${"+clients["longrun-dev-console"]+"}"; got != want {
		t.Errorf("LONGRUN_COGNITO_CLIENT_IDS = %s, want the clients' ids %s", got, want)
	}
	_, auth := only(t, "authorizers", tpl.of("AWS::ApiGateway::Authorizer"))
	if !reflect.DeepEqual(auth.Properties["ProviderARNs"], []any{getAtt(poolID, "Arn")}) {
		t.Errorf("authorizer of %v", auth.Properties["ProviderARNs"])
	}
	_, group := only(t, "groups", tpl.of("AWS::Cognito::UserPoolGroup"))
	if group.Properties["GroupName"] != construct.OperatorsGroup || construct.OperatorsGroup != "longrun-operators" {
		t.Errorf("operators group %v", group.Properties["GroupName"])
	}
	// IAM stages have none of it.
	if env := tpl.env(t, "dev", "dispatcher"); env["LONGRUN_COGNITO_CLIENT_IDS"] != nil {
		t.Errorf("the dispatcher has client ids")
	}
	if iam := dev(t); len(iam.of("AWS::Cognito::UserPool")) != 0 || iam.env(t, "dev", "api")["LONGRUN_COGNITO_CLIENT_IDS"] != nil {
		t.Errorf("an IAM stage has a user pool or client ids")
	}
}

// An existing pool comes with the ids of the clients the API accepts (clients that cannot
// write custom:tenant: docs/security.md); without them every token would be refused.
func TestExistingCognitoPoolTakesItsClientIDs(t *testing.T) {
	tpl := synthesize(t, fromContext(t, map[string]any{"cognitoUserPoolArn": examplePool, "cognitoClientIds": "client1, client2"}))
	if got := tpl.env(t, "dev", "api")["LONGRUN_COGNITO_CLIENT_IDS"]; got != "client1,client2" {
		t.Errorf("LONGRUN_COGNITO_CLIENT_IDS = %v", got)
	}
	if n := len(tpl.of("AWS::Cognito::UserPool")) + len(tpl.of("AWS::Cognito::UserPoolClient")); n != 0 {
		t.Errorf("%d Cognito resources created beside an existing pool", n)
	}
	_, auth := only(t, "authorizers", tpl.of("AWS::ApiGateway::Authorizer"))
	if !reflect.DeepEqual(auth.Properties["ProviderARNs"], []any{examplePool}) {
		t.Errorf("authorizer of %v", auth.Properties["ProviderARNs"])
	}
}

// Settings that would deploy something other than was meant stop synthesis.
func TestContextMistakesAreErrors(t *testing.T) {
	for want, values := range map[string]map[string]any{
		"needs cognitoClientIds":              {"cognitoUserPoolArn": examplePool},
		"set cognitoUserPoolArn too":          {"authorizer": "cognito", "cognitoClientIds": "a"},
		"want iam (the default) or cognito":   {"authorizer": "oidc"},
		"choose one":                          {"authorizer": "iam", "cognitoUserPoolArn": examplePool, "cognitoClientIds": "a"},
		"demoTypes=\"maybe\"":                 {"demoTypes": "maybe"},
		"tenantQuota=-1":                      {"tenantQuota": "-1"},
		"principalQuota=\"many\"":             {"principalQuota": "many"},
		"\"bob\" is not an IAM role":          {"operatorPrincipals": "bob"},
		"eventPublishers":                     {"eventPublishers": "arn:aws:s3:::bucket"},
		"want aws-owned (the default)":        {"tableEncryption": "kms"},
		"tableKmsKeyArn needs":                {"tableEncryption": "aws-owned", "tableKmsKeyArn": "arn:aws:kms:us-east-1:1:key/k"},
		"is not a KMS key ARN":                {"tableKmsKeyArn": "k"},
		"reservedConcurrency=\"some\"":        {"reservedConcurrency": "some"},
		"apiGatewayCloudWatchRole=\"please\"": {"apiGatewayCloudWatchRole": "please"},
		"idempotencyWindow=\"a day\"":         {"idempotencyWindow": "a day"},
		"idempotencyWindow=\"-1h\"":           {"idempotencyWindow": "-1h"},
		"tracing=\"yes please\"":              {"tracing": "yes please"},
		"is not a Lambda layer version ARN":   {"collectorLayerArn": "otel"},
		"tracing=false and collectorLayerArn": {"tracing": "false", "collectorLayerArn": "arn:aws:lambda:us-east-1:1:layer:c:1"},
		"console=\"off\"":                     {"console": "off"},
		"console=false with":                  {"console": "false", "authorizer": "cognito", "consoleDomainPrefix": "ops"},
		"consoleDomainPrefix names":           {"consoleDomainPrefix": "ops"},
		"consoleCognitoDomain and consoleClientId go together": {"cognitoUserPoolArn": examplePool, "cognitoClientIds": "a",
			"consoleClientId": "c"},
	} {
		_, err := stack.FromContext(awscdk.NewApp(&awscdk.AppProps{Context: &values}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", values, err, want)
		}
	}
}

// 2a (high). demo.task (which ends outcome_unknown on request, keeping its lock and quota
// slot) is served on dev only, unless the context says otherwise: its workflow and worker
// exist only there, and every function reads LONGRUN_DEMO_TYPES to agree on the registry.
func TestDemoTypesOnlyOnDev(t *testing.T) {
	for _, tc := range []struct {
		context map[string]any
		demo    bool
	}{
		{map[string]any{}, true},
		{map[string]any{"stage": "prod"}, false},
		{map[string]any{"stage": "prod", "demoTypes": "true"}, true},
		{map[string]any{"stage": "dev", "demoTypes": false}, false},
	} {
		props := fromContext(t, tc.context)
		tpl := synthesize(t, props)
		names := tpl.functionNames(props.Stage)
		if slices.Contains(names, "worker-demo-task") != tc.demo {
			t.Errorf("%v: functions %v", tc.context, names)
		}
		want := []string{"longrun-" + props.Stage + "-export-orders", "longrun-" + props.Stage + "-export-orders-resume"}
		if tc.demo {
			want = append([]string{"longrun-" + props.Stage + "-demo-task", "longrun-" + props.Stage + "-demo-task-resume"}, want...)
		}
		var got []string
		for _, m := range tpl.of("AWS::StepFunctions::StateMachine") {
			got = append(got, m.Properties["StateMachineName"].(string))
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: state machines %v, want %v", tc.context, got, want)
		}
		for _, f := range longrunFunctions {
			if v := tpl.env(t, props.Stage, f)["LONGRUN_DEMO_TYPES"]; v != map[bool]string{true: "true", false: "false"}[tc.demo] {
				t.Errorf("%v: %s LONGRUN_DEMO_TYPES=%v", tc.context, f, v)
			}
		}
		machines := cfntest.Render(tpl.env(t, props.Stage, "dispatcher")["LONGRUN_STATE_MACHINES"])
		if strings.Contains(machines, "demo-task") != tc.demo {
			t.Errorf("%v: the dispatcher's state machines %s", tc.context, machines)
		}
	}
}

// 2b, 2c (high). Operators by IAM identity and the quotas reach the API function from the
// context; unset, the function's defaults apply (nothing is set).
func TestAPISettingsFromContext(t *testing.T) {
	tpl := synthesize(t, fromContext(t, map[string]any{
		"operatorPrincipals": "arn:aws:iam::123456789012:role/ops, arn:aws:iam::123456789012:user/alice",
		"tenantQuota":        "2000", "principalQuota": 0, "idempotencyWindow": "48h",
	}))
	env := tpl.env(t, "dev", "api")
	for k, want := range map[string]string{
		"LONGRUN_OPERATOR_PRINCIPALS": "arn:aws:iam::123456789012:role/ops,arn:aws:iam::123456789012:user/alice",
		"LONGRUN_QUOTA":               "2000",
		"LONGRUN_PRINCIPAL_QUOTA":     "0",
		"LONGRUN_IDEMPOTENCY_WINDOW":  "48h0m0s",
	} {
		if env[k] != want {
			t.Errorf("%s = %v, want %q", k, env[k], want)
		}
	}
	for _, k := range []string{"LONGRUN_OPERATOR_PRINCIPALS", "LONGRUN_QUOTA", "LONGRUN_PRINCIPAL_QUOTA", "LONGRUN_IDEMPOTENCY_WINDOW"} {
		if v, ok := dev(t).env(t, "dev", "api")[k]; ok {
			t.Errorf("default stage sets %s=%v", k, v)
		}
		if v, ok := tpl.env(t, "dev", "dispatcher")[k]; ok {
			t.Errorf("the dispatcher has %s=%v", k, v)
		}
	}
}

// 2d (high). Alarms on admissions refused for a full quota (the API's request line), on
// operations recorded outcome_unknown (the recorder's and the reconciler's lines) and on the
// number waiting in outcome_unknown (the reconciler's run line), by metric filters on those
// functions' log groups.
func TestQuotaAndOutcomeUnknownAlarms(t *testing.T) {
	tpl := dev(t)
	logGroupOf := func(fn string) any {
		for id, lg := range tpl.of("AWS::Logs::LogGroup") {
			if lg.Properties["LogGroupName"] == "/aws/lambda/longrun-dev-"+fn {
				return map[string]any{"Ref": id}
			}
		}
		t.Fatalf("no log group for %s", fn)
		return nil
	}
	filters := map[string][]string{} // metric → "function pattern"
	for _, f := range tpl.of("AWS::Logs::MetricFilter") {
		tr := f.Properties["MetricTransformations"].([]any)[0].(map[string]any)
		if value := map[bool]string{true: "$.outcome_unknown", false: "1"}[tr["MetricName"] == "OutcomeUnknownWaiting"]; tr["MetricNamespace"] != "longrun/dev" || tr["MetricValue"] != value {
			t.Errorf("metric filter %v", tr)
		}
		for _, fn := range []string{"api", "recorder", "reconciler"} {
			if reflect.DeepEqual(f.Properties["LogGroupName"], logGroupOf(fn)) {
				filters[tr["MetricName"].(string)] = append(filters[tr["MetricName"].(string)], fn+" "+f.Properties["FilterPattern"].(string))
			}
		}
	}
	for _, v := range filters {
		sort.Strings(v)
	}
	want := map[string][]string{
		"QuotaExceeded":           {"api " + logpattern.QuotaExceeded},
		"OutcomeUnknownRecorded":  {"reconciler " + logpattern.ReconcilerOutcomeUnknown, "recorder " + logpattern.RecorderOutcomeUnknown},
		"StuckOperationsRepaired": {"reconciler " + logpattern.Stuck},
		"OutcomeUnknownWaiting":   {"reconciler " + logpattern.Waiting},
	}
	if !reflect.DeepEqual(filters, want) {
		t.Errorf("metric filters\n%v\nwant\n%v", filters, want)
	}
	// The shapes the services log (docs: the request line has status; the recorder's has
	// outcome and state).
	if logpattern.QuotaExceeded != `{ $.message = "request" && $.status = 429 }` || logpattern.Waiting != `{ $.message = "run" && $.outcome_unknown >= 0 }` ||
		logpattern.RecorderOutcomeUnknown != `{ $.message = "recorded" && $.outcome = "outcome_unknown" && $.state = "outcome_unknown" }` {
		t.Errorf("patterns %q %q", logpattern.QuotaExceeded, logpattern.RecorderOutcomeUnknown)
	}
	alarms := map[string]map[string]any{}
	for _, a := range tpl.of("AWS::CloudWatch::Alarm") {
		if m, ok := a.Properties["MetricName"].(string); ok {
			alarms[m] = a.Properties
		}
	}
	for m, statistic := range map[string]string{"QuotaExceeded": "Sum", "OutcomeUnknownRecorded": "Sum", "OutcomeUnknownWaiting": "Maximum"} {
		a := alarms[m]
		if a == nil || a["Namespace"] != "longrun/dev" || a["Statistic"] != statistic || a["Threshold"] != float64(0) ||
			a["ComparisonOperator"] != "GreaterThanThreshold" || a["TreatMissingData"] != "notBreaching" {
			t.Errorf("alarm on %s: %v", m, a)
		}
	}
}

// 3a (medium). Workers never touch longrun's table (docs/worker-protocol.md): their roles
// have no DynamoDB or KMS action and name neither the table nor its key, and they get no
// setting of longrun's (not even the table's name). Their policies may only be what their
// own work needs, and the built-in workers need nothing but to write their own logs.
func TestWorkersHaveNoTableAccess(t *testing.T) {
	for _, props := range []stack.Props{{Stage: "dev"}, {Stage: "dev", TableEncryption: "customer"}} {
		tpl := synthesize(t, props)
		tableID, _ := only(t, "tables", tpl.of("AWS::DynamoDB::Table"))
		for _, w := range []string{"WorkerDemoTask", "WorkerExportOrders"} {
			for _, st := range tpl.statements(w) {
				if ownLogs(tpl, w, st) {
					continue
				}
				t.Errorf("%v: %s may %v on %v", props, w, cfntest.Actions(st), st["Resource"])
			}
			for _, r := range tpl.of("AWS::Lambda::Function") {
				if strings.HasPrefix(r.Properties["FunctionName"].(string), "longrun-dev-worker-") && r.Properties["Environment"] != nil {
					t.Errorf("%v: %s has settings %v", props, r.Properties["FunctionName"], r.Properties["Environment"])
				}
			}
		}
		// Who may use the table: longrun's functions, every one of them (the notifier through
		// its stream mapping), and nobody else.
		users := map[string]bool{}
		for id, p := range tpl.of("AWS::IAM::Policy") {
			for _, st := range p.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				data := strings.Contains(cfntest.Render(st["Resource"]), tableID)
				// A use of the key for Step Functions' own encryption of executions (the
				// workflows' histories share the table's key) is no use of the table's data:
				// DynamoDB names the table in its encryption context, Step Functions the
				// state machine.
				histories := strings.Contains(cfntest.Render(st["Condition"]), "kms:EncryptionContext:aws:states:stateMachineArn")
				for _, a := range cfntest.Actions(st) {
					data = data || strings.HasPrefix(a, "dynamodb:") || strings.HasPrefix(a, "kms:") && !histories
				}
				if !data {
					continue
				}
				owner := id // a function's role policy is <Function>ServiceRoleDefaultPolicy…
				if i := strings.Index(id, "ServiceRole"); i > 0 {
					owner = id[:i]
				}
				users[owner] = true
			}
		}
		want := map[string]bool{"Api": true, "Dispatcher": true, "Notifier": true, "Reconciler": true, "Recorder": true}
		if !reflect.DeepEqual(users, want) {
			t.Errorf("%v: the table's users %v, want longrun's five functions", props, users)
		}
	}
}

// 3b (medium). The functions that move work forward keep concurrency of their own, so a
// flood of API calls cannot starve them (as internal/aws/sizing reserves it); so does the
// API, so that the workers' steps cannot throttle it; the workers have none reserved.
func TestReservedConcurrency(t *testing.T) {
	want := map[string]any{}
	for name, f := range sizing.Functions() {
		if f.Reserved > 0 {
			want[name] = float64(f.Reserved)
		}
	}
	if len(want) != 5 || want["api"] != float64(sizing.APIThrottleRate) {
		t.Fatalf("sizing reserves %v", want)
	}
	for _, tc := range []struct {
		context map[string]any
		reserve bool
	}{{map[string]any{}, true}, {map[string]any{"reservedConcurrency": "false"}, false}} {
		tpl := synthesize(t, fromContext(t, tc.context))
		for _, f := range tpl.of("AWS::Lambda::Function") {
			name := strings.TrimPrefix(f.Properties["FunctionName"].(string), "longrun-dev-")
			got := f.Properties["ReservedConcurrentExecutions"]
			if exp := want[name]; tc.reserve && got != exp || !tc.reserve && got != nil {
				t.Errorf("%v: %s reserves %v", tc.context, name, got)
			}
		}
	}
}

// 4a (low). A gateway error's detail is $context.error.messageString, a JSON string, so a
// message with quotes or backslashes still makes a valid document.
func TestGatewayErrorDetailIsEscaped(t *testing.T) {
	tpl := dev(t)
	message, _ := json.Marshal(`a "quoted" \ message`)
	for id, g := range tpl.of("AWS::ApiGateway::GatewayResponse") {
		body := g.Properties["ResponseTemplates"].(map[string]any)["application/json"].(string)
		if !strings.Contains(body, `"detail":$context.error.messageString,`) {
			t.Errorf("%s: %s", id, body)
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(body, "$context.error.messageString", string(message))), &doc); err != nil ||
			doc["detail"] != `a "quoted" \ message` {
			t.Errorf("%s: %v %v", id, err, doc)
		}
	}
}

// 4c (low). Nobody but the notifier (and configured publishers) may put events with
// longrun's source on the bus.
func TestBusRefusesForgedEvents(t *testing.T) {
	for _, tc := range []struct {
		context    map[string]any
		publishers []any
	}{
		{map[string]any{}, nil},
		{map[string]any{"eventPublishers": "arn:aws:iam::123456789012:role/ops"}, []any{"arn:aws:iam::123456789012:role/ops"}},
	} {
		tpl := synthesize(t, fromContext(t, tc.context))
		busID, _ := only(t, "buses", tpl.of("AWS::Events::EventBus"))
		notifierRole := ""
		for id := range tpl.of("AWS::IAM::Role") {
			if strings.HasPrefix(id, "NotifierServiceRole") {
				notifierRole = id
			}
		}
		_, policy := only(t, "bus policies", tpl.of("AWS::Events::EventBusPolicy"))
		st := policy.Properties["Statement"].(map[string]any)
		want := map[string]any{
			"Effect": "Deny", "Principal": map[string]any{"AWS": "*"}, "Action": "events:PutEvents",
			"Resource": getAtt(busID, "Arn"),
			"Condition": map[string]any{
				"StringEquals": map[string]any{"events:source": notify.Source},
				"ArnNotEquals": map[string]any{"aws:PrincipalArn": append([]any{getAtt(notifierRole, "Arn")}, tc.publishers...)},
			},
		}
		delete(st, "Sid")
		if !reflect.DeepEqual(st, want) || !reflect.DeepEqual(policy.Properties["EventBusName"], map[string]any{"Ref": busID}) {
			t.Errorf("%v: bus policy\n%v\nwant\n%v", tc.context, st, want)
		}
	}
}

// 4d (low). Every request leaves an access log line with who called and what came back,
// never a header or a body.
func TestAPIAccessLog(t *testing.T) {
	tpl := dev(t)
	_, st := only(t, "stages", tpl.of("AWS::ApiGateway::Stage"))
	setting, _ := st.Properties["AccessLogSetting"].(map[string]any)
	var logs string
	for id, lg := range tpl.of("AWS::Logs::LogGroup") {
		if lg.Properties["LogGroupName"] == "/aws/apigateway/longrun-dev-api/access" && lg.Properties["RetentionInDays"] != nil {
			logs = id
		}
	}
	if logs == "" || !reflect.DeepEqual(setting["DestinationArn"], getAtt(logs, "Arn")) {
		t.Fatalf("access log to %v (log group %q)", setting["DestinationArn"], logs)
	}
	var line map[string]string
	if err := json.Unmarshal([]byte(setting["Format"].(string)), &line); err != nil {
		t.Fatalf("format is not a JSON object of strings: %v", err)
	}
	want := map[string]string{
		"requestId": "$context.requestId", "ip": "$context.identity.sourceIp", "caller": "$context.identity.caller",
		"user": "$context.identity.user", "userArn": "$context.identity.userArn", "accountId": "$context.identity.accountId",
		"sub": "$context.authorizer.claims.sub", "httpMethod": "$context.httpMethod", "resourcePath": "$context.resourcePath",
		"status": "$context.status", "errorType": "$context.error.responseType", "responseLength": "$context.responseLength",
		"requestTime": "$context.requestTime", "integrationLatency": "$context.integrationLatency",
	}
	if !reflect.DeepEqual(line, want) {
		t.Errorf("access log fields\n%v\nwant\n%v", line, want)
	}
	for _, never := range []string{"$input", "header", "Header", "body", "userAgent", "Override", "apiKey", "$context.path"} {
		if strings.Contains(setting["Format"].(string), never) {
			t.Errorf("the access log has %s", never)
		}
	}
	// The account's API Gateway logging role is set by the stack only when asked.
	if n := len(tpl.of("AWS::ApiGateway::Account")); n != 0 {
		t.Errorf("the default stack sets the account's API Gateway role")
	}
	if n := len(synthesize(t, fromContext(t, map[string]any{"apiGatewayCloudWatchRole": "true"})).of("AWS::ApiGateway::Account")); n != 1 {
		t.Errorf("apiGatewayCloudWatchRole=true: %d account settings", n)
	}
}

// 4e (low). The table is encrypted with an AWS owned key unless a customer managed key is
// asked for: an existing one, or one the stack creates (rotated); the functions may use
// that key only.
func TestTableEncryption(t *testing.T) {
	const existing = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, tc := range []struct {
		context map[string]any
		key     string // "" AWS owned, "created" or the ARN
	}{
		{map[string]any{}, ""},
		{map[string]any{"tableEncryption": "aws-owned"}, ""},
		{map[string]any{"tableEncryption": "customer"}, "created"},
		{map[string]any{"tableKmsKeyArn": existing}, existing},
		{map[string]any{"tableEncryption": "customer", "tableKmsKeyArn": existing}, existing},
	} {
		tpl := synthesize(t, fromContext(t, tc.context))
		_, table := only(t, "tables", tpl.of("AWS::DynamoDB::Table"))
		sse, _ := table.Properties["SSESpecification"].(map[string]any)
		keys := tpl.of("AWS::KMS::Key")
		var keyRef any
		switch tc.key {
		case "":
			if sse != nil && sse["SSEEnabled"] != false || len(keys) != 0 {
				t.Errorf("%v: SSE %v, %d keys", tc.context, sse, len(keys))
			}
			continue
		case "created":
			id, key := only(t, "keys", keys)
			if key.Properties["EnableKeyRotation"] != true {
				t.Errorf("%v: key without rotation", tc.context)
			}
			keyRef = getAtt(id, "Arn")
		default:
			if len(keys) != 0 {
				t.Errorf("%v: a key created beside an existing one", tc.context)
			}
			keyRef = tc.key
		}
		if sse["SSEEnabled"] != true || sse["SSEType"] != "KMS" || !reflect.DeepEqual(sse["KMSMasterKeyId"], keyRef) {
			t.Errorf("%v: SSE %v, want KMS with %v", tc.context, sse, keyRef)
		}
		for _, fn := range []string{"Api", "Dispatcher", "Recorder", "Reconciler", "Notifier", "WorkerExportOrders"} {
			worker := strings.HasPrefix(fn, "Worker")
			kms := 0
			for _, st := range tpl.statements(fn) {
				if strings.HasPrefix(cfntest.Actions(st)[0], "kms:") {
					kms++
					if !reflect.DeepEqual(st["Resource"], keyRef) {
						t.Errorf("%v: %s uses %v on %v", tc.context, fn, cfntest.Actions(st), st["Resource"])
					}
				}
			}
			if kms == 0 && !worker {
				t.Errorf("%v: %s may not use the table's key", tc.context, fn)
			}
			if kms != 0 && worker {
				t.Errorf("%v: the worker %s may use the table's key", tc.context, fn)
			}
		}
	}
}

// Each index is read by the functions whose queries use it, and by nobody else: the API's
// list (the scope index), the reconciler's due work and its count of operations waiting for
// an operator (the attention index). Nobody reads the table's stream but the mappings.
func TestIndexesAreReadByTheirReaders(t *testing.T) {
	tpl := dev(t)
	tableID, _ := only(t, "tables", tpl.of("AWS::DynamoDB::Table"))
	index := func(ix string) string { return "${" + tableID + ".Arn}/index/" + ix }
	want := map[string][]string{
		"Api":        {"${" + tableID + ".Arn}", index(dynamo.IndexAttention), index(dynamo.IndexDue), index(dynamo.IndexByScope)},
		"Reconciler": {"${" + tableID + ".Arn}", index(dynamo.IndexAttention), index(dynamo.IndexDue)},
	}
	for _, fn := range []string{"Api", "Dispatcher", "Notifier", "Reconciler", "Recorder", "WorkerDemoTask", "WorkerExportOrders"} {
		var got []string
		for _, st := range tpl.statements(fn) {
			if !slices.Contains(cfntest.Actions(st), "dynamodb:Query") {
				continue
			}
			resources, ok := st["Resource"].([]any)
			if !ok {
				resources = []any{st["Resource"]}
			}
			for _, r := range resources {
				got = append(got, cfntest.Render(r))
			}
		}
		sort.Strings(got)
		exp := want[fn]
		if exp == nil && fn != "Notifier" && !strings.HasPrefix(fn, "Worker") { // workers read nothing of longrun's
			exp = []string{"${" + tableID + ".Arn}"}
		}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("%s may Query %v, want %v", fn, got, exp)
		}
	}
}

// ownLogs reports whether st is the statement that lets function fn (as in construct ids)
// write its own log group: CreateLogStream and PutLogEvents on that group's ARN only.
func ownLogs(tpl *template, fn string, st map[string]any) bool {
	actions := cfntest.Actions(st)
	sort.Strings(actions)
	resources := cfntest.Resources(st)
	return st["Effect"] == "Allow" && reflect.DeepEqual(actions, []string{"logs:CreateLogStream", "logs:PutLogEvents"}) &&
		len(resources) == 1 && resources[0] == "${"+tpl.logGroupID(fn)+".Arn}"
}

// logGroupID is the logical id of the log group of function fn (as in construct ids): the
// group its LoggingConfig names.
func (tpl *template) logGroupID(fn string) string {
	for id, f := range tpl.of("AWS::Lambda::Function") {
		if !strings.HasPrefix(id, fn) || len(id) != len(fn)+8 {
			continue
		}
		if cfg, ok := f.Properties["LoggingConfig"].(map[string]any); ok {
			if ref, ok := cfg["LogGroup"].(map[string]any)["Ref"].(string); ok {
				return ref
			}
		}
	}
	return "no log group of " + fn
}

// 6 (low, issue #20). No function's role has a managed policy (AWSLambdaBasicExecutionRole
// lets a function write to every log group, so a worker could write metric lines into
// longrun's, which feed its alarms): each may write to its own log group and to no other.
// The reconciler keeps StartExecution on the resume state machines: it starts the next
// execution after a wait when Step Functions would not (reconcile.carryOn), so that
// grant is used (docs/security.md).
func TestEachFunctionWritesItsOwnLogGroupOnly(t *testing.T) {
	for _, props := range []stack.Props{{Stage: "dev"}, {Stage: "dev", Cognito: true, NoTracing: true}} {
		tpl := synthesize(t, props)
		functions := map[string]string{} // construct id → role's logical id
		for id, f := range tpl.of("AWS::Lambda::Function") {
			functions[id[:len(id)-8]] = roleOf(f.Properties)
		}
		if len(functions) != len(longrunFunctions)+2 {
			t.Fatalf("%v: functions %v", props, functions)
		}
		for fn, role := range functions {
			if !strings.HasPrefix(role, fn+"ServiceRole") {
				t.Errorf("%v: %s runs as %s, not a role of its own", props, fn, role)
			}
			if managed := tpl.Resources[role].Properties["ManagedPolicyArns"]; managed != nil {
				t.Errorf("%v: %s's role has managed policies %v", props, fn, managed)
			}
			own := 0
			for _, st := range tpl.statements(fn) {
				if ownLogs(tpl, fn, st) {
					own++
					continue
				}
				for _, a := range cfntest.Actions(st) {
					if strings.HasPrefix(a, "logs:") {
						t.Errorf("%v: %s may %s on %v", props, fn, a, cfntest.Resources(st))
					}
				}
			}
			if own != 1 {
				t.Errorf("%v: %s has %d statements writing its own log group, want 1", props, fn, own)
			}
		}
	}
}

func roleOf(props map[string]any) string {
	if att, ok := props["Role"].(map[string]any)["Fn::GetAtt"].([]any); ok {
		return att[0].(string)
	}
	return fmt.Sprint(props["Role"])
}
