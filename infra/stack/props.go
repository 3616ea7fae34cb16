package stack

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/longrun-dev/longrun/internal/aws/config"
)

// Props configure one stage: what the stage gives the construct (construct.Props), in the
// CDK context's terms (FromContext).
type Props struct {
	awscdk.StackProps
	Stage string // "dev", "prod", …: names resources; only dev may be deleted with its data
	// CodeDir holds <function>.zip from `make build`: longrun's functions and the built-in
	// workers.
	CodeDir string
	// Cognito authorizes the API with Cognito ID tokens instead of IAM (SigV4). The stack
	// creates the user pool and its app client (custom:tenant readable, writable by
	// administrators only, no self sign-up), unless CognitoUserPoolArn names an existing
	// pool (which implies Cognito), whose accepted app clients are then CognitoClientIDs
	// (construct.CognitoOptions).
	Cognito            bool
	CognitoUserPoolArn string
	CognitoClientIDs   []string
	// NoConsole leaves out the operations console the API serves at …/<stage>/console/
	// (construct.ConsoleOptions.Disabled). ConsoleDomainPrefix is the hosted UI domain prefix
	// of the pool the stack creates (ConsoleOptions.DomainPrefix; empty: one derived from the
	// stack's id); ConsoleCognitoDomain and ConsoleClientID, with CognitoUserPoolArn, are that
	// pool's hosted UI and the app client the console signs in as.
	NoConsole            bool
	ConsoleDomainPrefix  string
	ConsoleCognitoDomain string
	ConsoleClientID      string
	// ThrottleRate and ThrottleBurst limit the API stage (requests/s); 0 means 100 and 200.
	ThrottleRate, ThrottleBurst float64
	// Architecture is every function's instruction set, named as the CDK context names it:
	// "arm64" (the default when empty) or "x86_64" (e.g. LocalStack on an x86 host). The
	// zips must match: CheckCode.
	Architecture string
	// DemoTypes serves the demo types (demo.task: its workflow, its worker and
	// LONGRUN_DEMO_TYPES=true); nil means on the dev stage only.
	DemoTypes *bool
	// OperatorPrincipals are the IAM roles and users (ARNs) that are operators when the API
	// authorizes with IAM (LONGRUN_OPERATOR_PRINCIPALS).
	OperatorPrincipals []string
	// TenantQuota and PrincipalQuota, when set, are the API's LONGRUN_QUOTA and
	// LONGRUN_PRINCIPAL_QUOTA (active operations per tenant, per caller; 0 disables); unset,
	// the function's defaults apply (internal/aws/config).
	TenantQuota, PrincipalQuota *int
	// IdempotencyWindow is the API's LONGRUN_IDEMPOTENCY_WINDOW (how long a key answers
	// replays for types without a retention of their own); 0: the function's 24h.
	IdempotencyWindow time.Duration
	// EventPublishers are IAM roles and users (ARNs) that may put events with source longrun
	// on the stage's bus besides the notifier, e.g. who runs `longrun republish`.
	EventPublishers []string
	// TableEncryption is "aws-owned" (the default when empty) or "customer": a customer
	// managed KMS key, TableKMSKeyArn's or one the stack creates.
	TableEncryption string
	TableKMSKeyArn  string
	// NoReservedConcurrency leaves out the functions' reserved concurrency (reserved), for
	// accounts whose concurrency limit cannot spare it.
	NoReservedConcurrency bool
	// APIGatewayCloudWatchRole makes the stack set the account's (and region's) API Gateway
	// CloudWatch Logs role, which access logging needs; off, the account must have one.
	APIGatewayCloudWatchRole bool
	// NoTracing turns tracing off (construct.TracingOptions.Disabled); CollectorLayerArn
	// replaces the ADOT collector layer (construct.TracingOptions.CollectorLayerArn).
	NoTracing         bool
	CollectorLayerArn string
}

// demoTypes reports whether the stage serves the demo types.
func (p *Props) demoTypes() bool {
	if p.DemoTypes != nil {
		return *p.DemoTypes
	}
	return p.Stage == "dev"
}

// cognito reports whether the API authorizes with Cognito.
func (p *Props) cognito() bool { return p.Cognito || p.CognitoUserPoolArn != "" }

// check refuses settings that would deploy something other than was meant.
func (p *Props) check() error {
	if _, err := lambdaArchitecture(p.Architecture); err != nil {
		return err
	}
	if p.CognitoUserPoolArn != "" && len(p.CognitoClientIDs) == 0 {
		return fmt.Errorf("cognitoUserPoolArn needs cognitoClientIds: the app clients whose ID tokens the API accepts (clients that may not write custom:tenant)")
	}
	if len(p.CognitoClientIDs) > 0 && p.CognitoUserPoolArn == "" {
		return fmt.Errorf("cognitoClientIds name clients of an existing pool: set cognitoUserPoolArn too (a pool the stack creates brings its own client)")
	}
	if p.NoConsole && (p.ConsoleDomainPrefix != "" || p.ConsoleCognitoDomain != "" || p.ConsoleClientID != "") {
		return fmt.Errorf("console=false with consoleDomainPrefix, consoleCognitoDomain or consoleClientId: choose one")
	}
	if p.ConsoleDomainPrefix != "" && (!p.Cognito || p.CognitoUserPoolArn != "") {
		return fmt.Errorf("consoleDomainPrefix names the hosted UI domain of the pool the stack creates (authorizer=cognito); an existing pool's is consoleCognitoDomain")
	}
	if (p.ConsoleCognitoDomain != "" || p.ConsoleClientID != "") && (p.CognitoUserPoolArn == "" || p.ConsoleCognitoDomain == "" || p.ConsoleClientID == "") {
		return fmt.Errorf("consoleCognitoDomain and consoleClientId go together, with cognitoUserPoolArn: the existing pool's hosted UI and the console's app client")
	}
	for _, list := range []struct {
		key  string
		arns []string
	}{{"operatorPrincipals", p.OperatorPrincipals}, {"eventPublishers", p.EventPublishers}} {
		for _, a := range list.arns {
			if !strings.HasPrefix(a, "arn:") || !(strings.Contains(a, ":iam::") || strings.Contains(a, ":sts::")) {
				return fmt.Errorf("%s: %q is not an IAM role or user ARN", list.key, a)
			}
		}
	}
	for key, q := range map[string]*int{"tenantQuota": p.TenantQuota, "principalQuota": p.PrincipalQuota} {
		if q != nil && *q < 0 {
			return fmt.Errorf("%s=%d: want a non-negative integer (0 disables)", key, *q)
		}
	}
	switch p.TableEncryption {
	case "", "aws-owned":
		if p.TableEncryption != "" && p.TableKMSKeyArn != "" {
			return fmt.Errorf("tableKmsKeyArn needs tableEncryption=customer (or none), not %q", p.TableEncryption)
		}
	case "customer":
	default:
		return fmt.Errorf("tableEncryption=%q: want aws-owned (the default) or customer", p.TableEncryption)
	}
	if p.TableKMSKeyArn != "" && !strings.HasPrefix(p.TableKMSKeyArn, "arn:") {
		return fmt.Errorf("tableKmsKeyArn=%q is not a KMS key ARN", p.TableKMSKeyArn)
	}
	if p.CollectorLayerArn != "" && (!strings.HasPrefix(p.CollectorLayerArn, "arn:") || !strings.Contains(p.CollectorLayerArn, ":layer:")) {
		return fmt.Errorf("collectorLayerArn=%q is not a Lambda layer version ARN", p.CollectorLayerArn)
	}
	if p.NoTracing && p.CollectorLayerArn != "" {
		return fmt.Errorf("tracing=false and collectorLayerArn: choose one")
	}
	if p.IdempotencyWindow < 0 || p.IdempotencyWindow%time.Second != 0 {
		return fmt.Errorf("idempotencyWindow=%s: want a duration of whole seconds, such as 48h", p.IdempotencyWindow)
	}
	return nil
}

// FromContext reads a stage's settings from the CDK context (-c key=value, cdk.json or
// CDK_CONTEXT_JSON); docs/deploy.md lists the keys. A value that is not one of a key's
// values is an error, so a typo never deploys the default.
func FromContext(scope constructs.Construct) (*Props, error) {
	get := func(key, def string) string {
		switch v := scope.Node().TryGetContext(jsii.String(key)).(type) {
		case nil:
			return def
		case string:
			if v == "" {
				return def
			}
			return v
		case []any:
			parts := make([]string, len(v))
			for i, x := range v {
				parts[i] = fmt.Sprint(x)
			}
			return strings.Join(parts, ",")
		default:
			return fmt.Sprint(v)
		}
	}
	var errs []error
	flag := func(key string) *bool {
		v := get(key, "")
		if v == "" {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("context %s=%q: want true or false", key, v))
			return nil
		}
		return &b
	}
	quota := func(key string) *int {
		v := get(key, "")
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("context %s=%q: want a non-negative integer (0 disables)", key, v))
			return nil
		}
		return &n
	}
	props := &Props{
		Stage:              get("stage", "dev"),
		CodeDir:            get("codeDir", "dist"),
		CognitoUserPoolArn: get("cognitoUserPoolArn", ""),
		CognitoClientIDs:   config.List(get("cognitoClientIds", "")),
		Architecture:       get("architecture", "arm64"),
		DemoTypes:          flag("demoTypes"),
		OperatorPrincipals: config.List(get("operatorPrincipals", "")),
		TenantQuota:        quota("tenantQuota"),
		PrincipalQuota:     quota("principalQuota"),
		EventPublishers:    config.List(get("eventPublishers", "")),
		TableEncryption:    get("tableEncryption", ""),
		TableKMSKeyArn:     get("tableKmsKeyArn", ""),
		CollectorLayerArn:  get("collectorLayerArn", ""),
	}
	props.ConsoleDomainPrefix = get("consoleDomainPrefix", "")
	props.ConsoleCognitoDomain, props.ConsoleClientID = get("consoleCognitoDomain", ""), get("consoleClientId", "")
	switch a := get("authorizer", ""); a {
	case "":
	case "cognito":
		props.Cognito = true
	case "iam":
		if props.CognitoUserPoolArn != "" {
			errs = append(errs, fmt.Errorf("context authorizer=iam and cognitoUserPoolArn: choose one"))
		}
	default:
		errs = append(errs, fmt.Errorf("context authorizer=%q: want iam (the default) or cognito", a))
	}
	if v := get("idempotencyWindow", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("context idempotencyWindow=%q: want a positive duration such as 48h", v))
		}
		props.IdempotencyWindow = d
	}
	if reserve := flag("reservedConcurrency"); reserve != nil {
		props.NoReservedConcurrency = !*reserve
	}
	if role := flag("apiGatewayCloudWatchRole"); role != nil {
		props.APIGatewayCloudWatchRole = *role
	}
	if tracing := flag("tracing"); tracing != nil {
		props.NoTracing = !*tracing
	}
	if console := flag("console"); console != nil {
		props.NoConsole = !*console
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	if err := props.check(); err != nil {
		return nil, err
	}
	return props, nil
}
