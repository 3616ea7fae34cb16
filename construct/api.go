package construct

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsxray"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
)

// userPool is the Cognito side of a deployment that authorizes with Cognito: the pool, and
// the app clients whose ID tokens the API accepts (LONGRUN_COGNITO_CLIENT_IDS).
type userPool struct {
	pool      awscognito.IUserPool
	client    awscognito.UserPoolClient // the client New created; nil for an existing pool
	clientIDs *string
}

// OperatorsGroup is the Cognito group whose members are operators: they may resolve
// operations whose outcome is unknown. With Cognito authorization the construct creates it
// in the pool it creates; a team adds its operators to it (AdminAddUserToGroup), and an
// existing pool (CognitoOptions.UserPool) must have a group of this name.
const OperatorsGroup = "longrun-operators"

// TenantAttribute is the custom attribute that carries a user's tenant (custom:tenant in
// the ID token): a team sets it when it creates a user (AdminCreateUser), and an existing
// pool must define it, writable by administrators only.
const TenantAttribute = "tenant"

// userPool is nil with IAM authorization. With Cognito it is the existing pool and its
// configured clients, or a pool the construct creates: users are created by administrators
// (no self sign-up), custom:tenant is set and changed by administrators only
// (AdminCreateUser, AdminUpdateUserAttributes), and the one app client may read it but not
// write it, so nobody chooses their own tenant. Its write attributes are listed explicitly:
// a client without a list may write every attribute.
func (b *builder) userPool() *userPool {
	scope, props, name := b.c, b.props, b.name
	if props.Cognito == nil {
		return nil
	}
	if props.Cognito.UserPool != nil {
		return &userPool{pool: props.Cognito.UserPool, clientIDs: jsii.String(strings.Join(props.Cognito.ClientIDs, ","))}
	}
	pool := awscognito.NewUserPool(scope, jsii.String("UserPool"), &awscognito.UserPoolProps{
		UserPoolName:      name("users"),
		SelfSignUpEnabled: jsii.Bool(false),
		SignInAliases:     &awscognito.SignInAliases{Email: jsii.Bool(true)},
		CustomAttributes: &map[string]awscognito.ICustomAttribute{
			TenantAttribute: awscognito.NewStringAttribute(&awscognito.StringAttributeProps{
				MinLen: jsii.Number(1), MaxLen: jsii.Number(256), Mutable: jsii.Bool(true),
			}),
		},
		AccountRecovery: awscognito.AccountRecovery_EMAIL_ONLY,
		PasswordPolicy: &awscognito.PasswordPolicy{
			MinLength: jsii.Number(12), RequireLowercase: jsii.Bool(true), RequireUppercase: jsii.Bool(true),
			RequireDigits: jsii.Bool(true), RequireSymbols: jsii.Bool(true),
			TempPasswordValidity: awscdk.Duration_Days(jsii.Number(3)),
		},
		Mfa:                awscognito.Mfa_OPTIONAL,
		MfaSecondFactor:    &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
		DeletionProtection: jsii.Bool(!b.dev),
		RemovalPolicy:      b.removal(),
	})
	client := pool.AddClient(jsii.String("ApiClient"), &awscognito.UserPoolClientOptions{
		UserPoolClientName:         name("api"),
		GenerateSecret:             jsii.Bool(false),
		AuthFlows:                  &awscognito.AuthFlow{UserSrp: jsii.Bool(true)},
		DisableOAuth:               jsii.Bool(true),
		PreventUserExistenceErrors: jsii.Bool(true),
		EnableTokenRevocation:      jsii.Bool(true),
		IdTokenValidity:            awscdk.Duration_Hours(jsii.Number(1)),
		AccessTokenValidity:        awscdk.Duration_Hours(jsii.Number(1)),
		RefreshTokenValidity:       awscdk.Duration_Days(jsii.Number(30)),
		ReadAttributes:             clientReadAttributes(),
		WriteAttributes:            clientWriteAttributes(),
	})
	awscognito.NewCfnUserPoolGroup(scope, jsii.String("OperatorsGroup"), &awscognito.CfnUserPoolGroupProps{
		UserPoolId:  pool.UserPoolId(),
		GroupName:   jsii.String(OperatorsGroup),
		Description: jsii.String("Operators: may resolve operations whose outcome is unknown."),
	})
	return &userPool{pool: pool, client: client, clientIDs: client.UserPoolClientId()}
}

// clientReadAttributes are what the app clients of a pool the construct creates read: the
// ID token carries them, custom:tenant among them.
func clientReadAttributes() awscognito.ClientAttributes {
	return awscognito.NewClientAttributes().
		WithStandardAttributes(&awscognito.StandardAttributesMask{Email: jsii.Bool(true), EmailVerified: jsii.Bool(true), Fullname: jsii.Bool(true)}).
		WithCustomAttributes(jsii.String(TenantAttribute))
}

// clientWriteAttributes are what those clients may write: the name, never custom:tenant.
// The list is explicit: a client without one may write every attribute.
func clientWriteAttributes() awscognito.ClientAttributes {
	return awscognito.NewClientAttributes().
		WithStandardAttributes(&awscognito.StandardAttributesMask{Fullname: jsii.Bool(true)})
}

// accessLogFields are the access log's fields: who called (IP, IAM identity, Cognito sub),
// what (method, resource template: no ids, no query), the answer and its timing. Never a
// header or a body, and never the request's path ($context.path): a callback URL's path
// holds its token, the only credential of POST /v1/callbacks/{token}, which the resource
// template leaves out.
var accessLogFields = [][2]string{
	{"requestId", "$context.requestId"},
	{"ip", "$context.identity.sourceIp"},
	{"caller", "$context.identity.caller"},
	{"user", "$context.identity.user"},
	{"userArn", "$context.identity.userArn"},
	{"accountId", "$context.identity.accountId"},
	{"sub", "$context.authorizer.claims.sub"},
	{"httpMethod", "$context.httpMethod"},
	{"resourcePath", "$context.resourcePath"},
	{"status", "$context.status"},
	{"errorType", "$context.error.responseType"},
	{"responseLength", "$context.responseLength"},
	{"requestTime", "$context.requestTime"},
	{"integrationLatency", "$context.integrationLatency"},
}

// accessLogFormat is one JSON object per request, every value a string (a missing value is
// "-", which unquoted would not be JSON).
func accessLogFormat() string {
	parts := make([]string, len(accessLogFields))
	for i, f := range accessLogFields {
		k, _ := json.Marshal(f[0])
		parts[i] = fmt.Sprintf(`%s:"%s"`, k, f[1])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// restAPI is the REST API: every method authorized (IAM by default, the Cognito user pool
// when configured) but the callback URLs' (POST /v1/callbacks/{token}, whose token is the
// credential the function checks) and the console's files' (GET and HEAD of /console and
// /console/{proxy+}, public), proxied to the api function, which sees every path and
// method (its routing answers 404 and 405), with API Gateway's own errors rewritten as the
// contract's problem+json and the stage throttled (and traced, when tracing is on).
func (b *builder) restAPI() awsapigateway.RestApi {
	scope, props, name, fn, users := b.c, b.props, b.name, b.lr.Functions["api"], b.users
	rate, burst := props.ThrottleRate, props.ThrottleBurst
	if rate == 0 {
		rate, burst = sizing.APIThrottleRate, sizing.APIThrottleBurst
	}
	// One line per request, the caller's identity included (accessLogFormat).
	accessLogs := awslogs.NewLogGroup(scope, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/apigateway/longrun-" + props.Stage + "-api/access"),
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: b.removal(),
	})
	var roleRemoval awscdk.RemovalPolicy
	if props.APIGatewayCloudWatchRole {
		roleRemoval = awscdk.RemovalPolicy_RETAIN // other stages of the account rely on it
	}
	api := awsapigateway.NewRestApi(scope, jsii.String("RestApi"), &awsapigateway.RestApiProps{
		RestApiName: name("api"),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(props.Stage),
			ThrottlingRateLimit:  jsii.Number(rate),
			ThrottlingBurstLimit: jsii.Number(burst),
			MetricsEnabled:       jsii.Bool(true),
			TracingEnabled:       jsii.Bool(b.trace.active), // X-Ray: the request's segment, joined by the function's
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(accessLogs),
			AccessLogFormat:      awsapigateway.AccessLogFormat_Custom(jsii.String(accessLogFormat())),
			// Execution logs of every method, errors only and never a body (DataTraceEnabled
			// stays off): why API Gateway refused or failed a request (an authorizer's
			// error, an integration's failure), which the access log only counts.
			LoggingLevel:     awsapigateway.MethodLoggingLevel_ERROR,
			DataTraceEnabled: jsii.Bool(false),
		},
		// Access logging needs the account's API Gateway CloudWatch Logs role, one per account
		// and region: set by the construct only when asked (it is the account's, not the stage's).
		CloudWatchRole:              jsii.Bool(props.APIGatewayCloudWatchRole),
		CloudWatchRoleRemovalPolicy: roleRemoval,
	})
	if b.trace.active {
		callbackSampling(scope, api, props.Stage)
	}
	// API Gateway writes execution logs to a group of its own naming, which it would create
	// without a retention: created here first, kept as long as the access log.
	executionLogs := awslogs.NewLogGroup(scope, jsii.String("ApiExecutionLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("API-Gateway-Execution-Logs_" + *api.RestApiId() + "/" + props.Stage),
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: b.removal(),
	})
	api.DeploymentStage().Node().AddDependency(executionLogs)

	method := &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_IAM}
	if users != nil {
		auth := awsapigateway.NewCognitoUserPoolsAuthorizer(scope, jsii.String("Authorizer"), &awsapigateway.CognitoUserPoolsAuthorizerProps{
			CognitoUserPools: &[]awscognito.IUserPool{users.pool},
		})
		method = &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_COGNITO, Authorizer: auth}
	}
	// No test invocations from the console: they bypass the authorizer, and each method's
	// test-invoke-stage permission would double the function's resource policy.
	integration := awsapigateway.NewLambdaIntegration(fn, &awsapigateway.LambdaIntegrationOptions{
		Proxy: jsii.Bool(true), AllowTestInvoke: jsii.Bool(false),
	})

	// The one request check API Gateway makes itself: an admission and a signal carry an
	// Idempotency-Key (everything else is the function's to judge, with the contract's codes).
	validator := api.AddRequestValidator(jsii.String("Headers"), &awsapigateway.RequestValidatorOptions{
		RequestValidatorName:      name("headers"),
		ValidateRequestParameters: jsii.Bool(true),
	})
	withKey := *method
	withKey.RequestValidator = validator
	withKey.RequestParameters = &map[string]*bool{"method.request.header.Idempotency-Key": jsii.Bool(true)}

	// The contract's methods.
	root := api.Root()
	v1 := root.AddResource(jsii.String("v1"), nil)
	ops := v1.AddResource(jsii.String("operations"), nil)
	ops.AddMethod(jsii.String("POST"), integration, &withKey)
	ops.AddMethod(jsii.String("GET"), integration, method)
	one := ops.AddResource(jsii.String("{operationId}"), nil)
	one.AddMethod(jsii.String("GET"), integration, method)
	cancel := one.AddResource(jsii.String("cancel"), nil)
	cancel.AddMethod(jsii.String("POST"), integration, method)
	resolve := one.AddResource(jsii.String("resolve"), nil)
	resolve.AddMethod(jsii.String("POST"), integration, method)
	types := v1.AddResource(jsii.String("operation-types"), nil)
	types.AddMethod(jsii.String("GET"), integration, method)
	oneType := types.AddResource(jsii.String("{name}"), nil)
	oneType.AddMethod(jsii.String("GET"), integration, method)
	signals := one.AddResource(jsii.String("signals"), nil)
	signal := signals.AddResource(jsii.String("{signal}"), nil)
	signal.AddMethod(jsii.String("POST"), integration, &withKey)

	// Callback URLs: a third party with no credentials for longrun sends one signal to one
	// operation. The token is the credential: an unguessable MAC over the operation and the
	// signal (internal/core/callback), which the function checks before it reads anything,
	// so API Gateway authorizes nothing here. ANY beside POST is open too, so that another
	// method is the function's 405 with Allow, as on every other path of the contract.
	callbacks := v1.AddResource(jsii.String("callbacks"), nil)
	token := callbacks.AddResource(jsii.String("{token}"), nil)
	open := &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_NONE}
	b.callbackMethods = []awsapigateway.Method{
		token.AddMethod(jsii.String("POST"), integration, open),
		token.AddMethod(jsii.String("ANY"), integration, open),
	}

	// The operations console (ConsoleOptions): static files the function serves itself, no
	// data among them, so GET and HEAD of /console and of any file below are open (a
	// browser cannot sign a request with SigV4, nor send a token before it has the page that
	// signs in). Another method there is authorized, as on every other path (its ANY, below):
	// nothing is open but what a browser loading the page asks for. /console/ is /console's
	// (API Gateway routes a trailing slash to the resource without it).
	if !props.Console.Disabled {
		console := root.AddResource(jsii.String("console"), nil)
		files := console.AddResource(jsii.String("{proxy+}"), nil)
		for _, r := range []awsapigateway.IResource{console, files} {
			for _, verb := range []string{"GET", "HEAD"} {
				b.consoleMethods = append(b.consoleMethods, r.AddMethod(jsii.String(verb), integration, open))
			}
			r.AddMethod(jsii.String("ANY"), integration, method)
		}
	}

	// Everything else reaches the function too, so the answers are the contract's: 405 with
	// Allow for a method a path lacks, 404 for a path the API lacks (docs/idempotency.md).
	// Every resource has ANY, authorized like the methods beside it and without the
	// validator: an explicit method wins over ANY, so only POST /v1/operations and a signal's
	// POST need the key (a DELETE there is the function's 405, not a 400); the callback
	// URLs' ANY is open, as their POST is (above). Every resource without a path-variable
	// child gets a greedy {proxy+} child with ANY, so a path resolves to a method segment by
	// segment, whether or not API Gateway would fall back to a greedy resource higher up
	// (/v1/operations, …/signals and /v1/callbacks need none: their variable child takes any
	// next segment, and a resource has at most one variable child). Authorization comes
	// before the integration: an anonymous caller still gets API Gateway's 401, on any path
	// but a callback URL's (below a token, {proxy+} is authorized: it is no callback URL).
	for _, r := range []awsapigateway.IResource{root, v1, ops, one, cancel, resolve, types, oneType, signals, signal, callbacks} {
		r.AddMethod(jsii.String("ANY"), integration, method)
	}
	for _, r := range []awsapigateway.IResource{root, v1, one, cancel, resolve, oneType, signal, token} {
		r.AddResource(jsii.String("{proxy+}"), nil).AddMethod(jsii.String("ANY"), integration, method)
	}

	for _, r := range []struct {
		typ          awsapigateway.ResponseType
		id           string
		status, code string
		title        string
		retryAfter   bool
	}{
		{awsapigateway.ResponseType_UNAUTHORIZED(), "Unauthorized", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_MISSING_AUTHENTICATION_TOKEN(), "MissingToken", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_EXPIRED_TOKEN(), "ExpiredToken", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_INVALID_SIGNATURE(), "InvalidSignature", "401", "unauthenticated", "Unauthenticated", false},
		{awsapigateway.ResponseType_ACCESS_DENIED(), "AccessDenied", "403", "forbidden", "Forbidden", false},
		{awsapigateway.ResponseType_BAD_REQUEST_PARAMETERS(), "MissingKey", "400", "invalid_idempotency_key", "Invalid Idempotency-Key", false},
		{awsapigateway.ResponseType_REQUEST_TOO_LARGE(), "TooLarge", "413", "payload_too_large", "Payload too large", false},
		{awsapigateway.ResponseType_THROTTLED(), "Throttled", "503", "unavailable", "Service unavailable", true},
		{awsapigateway.ResponseType_DEFAULT_5XX(), "Default5xx", "500", "internal", "Internal error", false},
	} {
		headers := map[string]*string{
			"Content-Type":  jsii.String("'application/problem+json'"),
			"Cache-Control": jsii.String("'no-store'"),
			"X-Request-Id":  jsii.String("'gateway'"),
		}
		if r.retryAfter {
			headers["Retry-After"] = jsii.String("'1'")
		}
		// requestId is "gateway": API Gateway's own request id is a provider identifier and
		// stays out of public bodies; the access log correlates. The detail is
		// $context.error.messageString, the message as a quoted, escaped JSON string
		// ($context.error.message is raw: a quote in it would break the document).
		body := fmt.Sprintf(`{"type":"https://longrun.dev/problems/%s","title":%q,"status":%s,"code":%q,"detail":$context.error.messageString,"requestId":"gateway"}`,
			r.code, r.title, r.status, r.code)
		api.AddGatewayResponse(jsii.String(r.id), &awsapigateway.GatewayResponseOptions{
			Type:            r.typ,
			StatusCode:      jsii.String(r.status),
			ResponseHeaders: &headers,
			Templates:       &map[string]*string{"application/json": jsii.String(body)},
		})
	}
	return api
}

// callbackSampling keeps callback requests out of X-Ray: API Gateway's segment of a request
// records its URL, and a callback URL's token is a credential (docs/security.md, "Callback
// URLs"). The rule, the stage's alone (its ARN), samples none of them, ahead of the
// account's default rule; the account's other rules are not touched.
func callbackSampling(scope constructs.Construct, api awsapigateway.RestApi, stage string) {
	awsxray.NewCfnSamplingRule(scope, jsii.String("CallbackSampling"), &awsxray.CfnSamplingRuleProps{
		SamplingRule: &awsxray.CfnSamplingRule_SamplingRuleProperty{
			RuleName: awscdk.Names_UniqueResourceName(scope, &awscdk.UniqueResourceNameOptions{MaxLength: jsii.Number(32)}),
			Priority: jsii.Number(100), FixedRate: jsii.Number(0), ReservoirSize: jsii.Number(0), Version: jsii.Number(1),
			ServiceName: jsii.String("*"), ServiceType: jsii.String("AWS::ApiGateway::Stage"), Host: jsii.String("*"),
			HttpMethod: jsii.String("*"), UrlPath: jsii.String("*/v1/callbacks/*"),
			ResourceArn: awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("arn:"), awscdk.Aws_PARTITION(),
				jsii.String(":apigateway:"), awscdk.Aws_REGION(), jsii.String("::/restapis/"), api.RestApiId(),
				jsii.String("/stages/" + stage)}),
		},
	})
}
