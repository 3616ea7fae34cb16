package construct

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
)

// Props configure one longrun deployment. Stage, CodeDir and Workers are required; every
// other field has a default.
type Props struct {
	// Stage names every resource longrun-<Stage>-… (the table is longrun-<Stage>) and
	// decides what deleting the stack deletes: on "dev" everything, data included; on any
	// other stage the table (deletion protection, RETAIN), its key, the user pool and the log
	// groups survive. Letters, digits and hyphens, at most 24.
	Stage string

	// TypesFiles are the operation types' definitions files (docs/operation-types.md), merged
	// as one; relative paths are taken from the directory the CDK app runs in. None: the
	// built-in types. The files are loaded and checked at synthesis and shipped to longrun's
	// functions in a layer (TypesLayer).
	TypesFiles []string
	// DemoTypes serves the types marked demo: true (LONGRUN_DEMO_TYPES=true on every longrun
	// function). Off, those types do not exist, and neither do workers that serve only them.
	DemoTypes bool
	// Workers are the team's worker functions by worker name (the worker key of the types):
	// exactly the workers of the types served, each an awslambda.Function of the app or an
	// imported one (awslambda.Function_FromFunctionArn). The team builds and owns them; the
	// construct only lets longrun's recorder invoke it (the recorder runs the steps). A worker
	// in another account must itself allow the recorder's role (its resource policy).
	//
	// A worker may run on any Lambda runtime and architecture: Go on provided.al2023,
	// Node.js (the TypeScript SDK, sdk/typescript), Python (sdk/python), a container image.
	// The recorder invokes it with a JSON step request and reads the JSON report it returns
	// (docs/worker-protocol.md), so the construct needs the function's ARN and nothing of its
	// handler, code, environment, layers, log format or tracing, none of which it sets. What
	// it does to each worker:
	//   - the recorder may invoke it (lambda:InvokeFunction on the function and its
	//     versions and aliases: the function's GrantInvoke, or for an imported one the
	//     recorder role's policy alone); nothing else of longrun may, and the worker gets no
	//     permission of longrun's;
	//   - it gets an event invoke config on $LATEST: the recorder as its destination on
	//     success and on failure, no retries (a step that failed may have acted), and steps
	//     Lambda cannot start kept queued 15 minutes at most. So the worker may configure no
	//     asynchronous invocation of its own (New refuses OnSuccess, OnFailure, RetryAttempts
	//     and MaxEventAge on a function of the app) and needs no dead-letter queue;
	//   - the recorder's resource policy lets the worker's role invoke it, as Lambda does
	//     when it delivers to a destination (an imported worker's role cannot be seen: its
	//     owner allows it);
	//   - an alarm on its Errors (each a step recorded outcome_unknown) and its errors and
	//     throttles on the dashboard.
	//
	// Its timeout must be at least the longest stepTimeout of its types (WorkerTimeouts
	// gives it; New checks a function of the app): the step request carries that
	// stepTimeout, and a step Lambda ends sooner is recorded outcome_unknown, as one that
	// outran it (it may have acted).
	Workers map[string]awslambda.IFunction

	// CodeDir holds longrun's own functions, api.zip, dispatcher.zip, notifier.zip,
	// recorder.zip and reconciler.zip, as longrun's cmd/release writes them
	// (`go run github.com/longrun-dev/longrun/cmd/release -out DIR` in the app's module, which
	// builds them from the longrun version the module requires).
	CodeDir string
	// Architecture is the instruction set of longrun's functions (and of the types layer):
	// awslambda.Architecture_ARM_64() when nil, or Architecture_X86_64(). The zips must be
	// built for it (cmd/release -arch amd64 for x86_64).
	Architecture awslambda.Architecture
	// NoReservedConcurrency leaves out the reserved concurrency of the functions that move
	// work forward (dispatcher, notifier, recorder and reconciler; docs/deploy.md lists
	// the sizes), for accounts whose concurrency limit cannot spare it.
	NoReservedConcurrency bool

	// MetricsNamespace is the CloudWatch namespace of longrun's metrics
	// (LONGRUN_METRICS_NAMESPACE on every longrun function; each also gets
	// LONGRUN_METRICS_DIMENSIONS=Stage=<Stage>), which the dashboard and alarms read; empty:
	// "longrun".
	MetricsNamespace string
	// Alarms are the thresholds of the alarms on longrun's metrics; the zero value takes the
	// defaults (docs/observability.md, "Dashboard and alarms").
	Alarms AlarmOptions
	// Tracing configures tracing; the zero value turns it on (docs/observability.md).
	Tracing TracingOptions

	// Cognito, when set, makes the API authorize callers with Cognito ID tokens instead of
	// IAM (SigV4, the default).
	Cognito *CognitoOptions
	// Console configures the operations console the api function serves at
	// …/<Stage>/console/; the zero value serves it, signing in through the hosted UI of the
	// pool the construct creates (docs/deploy.md, "The console").
	Console ConsoleOptions
	// OperatorPrincipals are the IAM roles and users (ARNs) that are operators when the API
	// authorizes with IAM (LONGRUN_OPERATOR_PRINCIPALS): they may resolve unknown outcomes.
	OperatorPrincipals []string
	// TenantQuota and PrincipalQuota are the active operations a tenant and a caller may
	// have (LONGRUN_QUOTA, LONGRUN_PRINCIPAL_QUOTA; 0 disables); nil: the functions' defaults,
	// 1000 and 500.
	TenantQuota, PrincipalQuota *int
	// IdempotencyWindow is how long an idempotency key answers replays for types without a
	// retention of their own (LONGRUN_IDEMPOTENCY_WINDOW); 0: 24h.
	IdempotencyWindow time.Duration
	// ThrottleRate and ThrottleBurst limit the API stage (requests/s); 0 means 100 and 200.
	ThrottleRate, ThrottleBurst float64
	// Reconcile paces the reconciler's runs; the zero value takes the functions' defaults
	// (docs/capacity.md, "Draining a backlog").
	Reconcile ReconcileOptions
	// APIGatewayCloudWatchRole makes the construct set the account's (and region's) API
	// Gateway CloudWatch Logs role, which the API's access log needs; off, the account must
	// have one already. It is the account's, so it is kept when the stack goes.
	APIGatewayCloudWatchRole bool

	// EventBus is where the notifier publishes "Operation State Changed"; nil: the construct
	// creates longrun-<Stage>-events. Either way the bus's resource policy gets a statement
	// denying everyone but the notifier and EventPublishers events with source longrun, so
	// a bus serves one longrun deployment.
	EventBus awsevents.IEventBus
	// EventPublishers are IAM roles and users (ARNs) that may put events with source longrun
	// on the bus besides the notifier, e.g. who runs `longrun republish`.
	EventPublishers []string

	// TableEncryption is how the table is encrypted at rest: with an AWS owned key (the
	// default) or a customer managed one, TableKey or one the construct creates. A customer
	// managed key encrypts the workflows' execution histories too, which hold operation data
	// for 90 days (docs/security.md, "Execution histories").
	TableEncryption TableEncryption
	// TableKey is an existing customer managed KMS key for the table and the workflows (it
	// implies TableEncryptionCustomerManaged). Its key policy must let the construct's roles
	// use it through DynamoDB and Step Functions.
	TableKey awskms.IKey
}

// CognitoOptions select Cognito authorization. The zero value creates a user pool and its
// app client: no self sign-up, custom:tenant ([TenantAttribute]) readable by the client but
// set by administrators only, and the operators group [OperatorsGroup]. An existing pool
// must have both.
type CognitoOptions struct {
	// UserPool is an existing pool to authorize with instead of one the construct creates.
	UserPool awscognito.IUserPool
	// ClientIDs are UserPool's app clients whose ID tokens the API accepts
	// (LONGRUN_COGNITO_CLIENT_IDS): clients that may not write custom:tenant. Required with
	// UserPool, refused without it (a created pool brings its own client).
	ClientIDs []string
}

// ConsoleOptions configure the operations console: static files the api function serves
// itself on the API's own origin, at /console/ of the stage (GET and HEAD of /console and
// /console/{proxy+}, which API Gateway does not authorize: the files are public, and every
// datum the console shows comes from the API with the signed-in user's own ID token). The
// zero value serves it. With a pool the construct creates (Cognito{}), the construct adds a
// hosted UI domain to the pool and an app client for the console (authorization code grant
// with PKCE, no secret, the console's URL as its callback and logout URL), whose ID tokens
// the API accepts too; the api function gets LONGRUN_CONSOLE_COGNITO_DOMAIN and
// LONGRUN_CONSOLE_CLIENT_ID. With an existing pool the console signs in when CognitoDomain
// and ClientID are given; with IAM authorization it cannot sign in (a browser does not sign
// requests with SigV4) and says so.
type ConsoleOptions struct {
	// Disabled leaves the console out: no /console routes (a request there meets the root's
	// authorized {proxy+}, as any path the API lacks), no domain, no app client, no
	// variables.
	Disabled bool
	// DomainPrefix is the prefix of the hosted UI domain the construct adds to the pool it
	// creates, https://<prefix>.auth.<region>.amazoncognito.com: lowercase letters, digits
	// and hyphens, at most 63, none of the words aws, amazon and cognito, and unique among
	// every account's prefixes in the region. Empty: longrun-<stage>-<12 hex digits of the
	// stack's id>, unique without a choice (the stack's id is CloudFormation's, known at
	// deployment only), and kept as long as the stack.
	DomainPrefix string
	// CognitoDomain and ClientID are, with an existing pool (Cognito.UserPool), its hosted UI
	// base URL (https://<prefix>.auth.<region>.amazoncognito.com, or the pool's custom
	// domain) and the app client the console signs in as: a public client (no secret) with
	// the authorization code grant, scopes openid, email and profile, the console's URL
	// (Longrun.ConsoleURL) among its callback and logout URLs, and, like Cognito.ClientIDs,
	// no right to write custom:tenant. The API accepts its ID tokens (the construct adds it to
	// LONGRUN_COGNITO_CLIENT_IDS). Both or neither; without them the console cannot sign in.
	CognitoDomain, ClientID string
}

// AlarmOptions are the thresholds of the alarms on longrun's metrics. A zero field takes
// its default. Every alarm looks at one 5-minute period and carries no action.
type AlarmOptions struct {
	// ServerErrorPercent: the API's 5xx answers, in percent of its requests, above which the
	// ApiServerErrorRate alarm fires; 0: 1 (%).
	ServerErrorPercent float64
	// ServerErrorMinRequests: with fewer requests than this in the period the 5xx rate never
	// fires (one 5xx in three requests is not an outage); 0: 20.
	ServerErrorMinRequests float64
	// TransactionConflicts: the transactions DynamoDB cancelled for a conflict, all functions
	// and calls together, above which the TransactionConflicts alarm fires; 0: 100. Each
	// conflict is retried, so a few are normal (racing duplicates); many mean hot items.
	TransactionConflicts float64
	// DispatchLag: the p99 of accepted → dispatched per type (the dispatcher's) above which
	// that type's DispatchLag alarm fires; 0: one minute.
	DispatchLag time.Duration
}

// ReconcileOptions pace the reconciler, which dispatches the accepted operations the
// dispatcher could not (a throttled StartExecution) and looks at the running ones. A zero field
// takes the functions' default, which follows the region the function runs in.
type ReconcileOptions struct {
	// DispatchRate is the StartExecution calls per second a run makes at most
	// (LONGRUN_DISPATCH_RATE); 0: half the region's StartExecution refill (150 in us-east-1,
	// us-west-2 and eu-west-1, 75 elsewhere). Raise it with the account's quota; the dispatcher
	// and the recorder's hand-backs draw on the same bucket.
	DispatchRate float64
	// DescribeRate is the DescribeExecution calls per second a run makes at most
	// (LONGRUN_DESCRIBE_RATE); 0: half the region's refill (7.5 in the large regions, 5
	// elsewhere).
	DescribeRate float64
	// Budget is how long a run goes on while operations are due (LONGRUN_RECONCILE_BUDGET),
	// less than the schedule's minute (the reconciler runs every minute); 0: 45 s.
	Budget time.Duration
	// Concurrency is how many operations a run works on at once
	// (LONGRUN_RECONCILE_CONCURRENCY); 0: 16, enough for ~260 dispatches a second.
	Concurrency int
}

// env is the reconciler's environment for o: only the fields set.
func (o ReconcileOptions) env() map[string]string {
	out := map[string]string{}
	if o.DispatchRate > 0 {
		out["LONGRUN_DISPATCH_RATE"] = strconv.FormatFloat(o.DispatchRate, 'f', -1, 64)
	}
	if o.DescribeRate > 0 {
		out["LONGRUN_DESCRIBE_RATE"] = strconv.FormatFloat(o.DescribeRate, 'f', -1, 64)
	}
	if o.Budget > 0 {
		out["LONGRUN_RECONCILE_BUDGET"] = o.Budget.String()
	}
	if o.Concurrency > 0 {
		out["LONGRUN_RECONCILE_CONCURRENCY"] = strconv.Itoa(o.Concurrency)
	}
	return out
}

// check refuses what the reconciler would refuse at start, or a budget that outlasts the
// schedule: with one instance reserved, the next run would wait for it.
func (o ReconcileOptions) check() error {
	if !(o.DispatchRate >= 0) || !(o.DescribeRate >= 0) || o.DispatchRate > 1e6 || o.DescribeRate > 1e6 || o.Concurrency < 0 {
		return fmt.Errorf("Reconcile %+v: want non-negative rates and concurrency (0 for the defaults)", o)
	}
	if o.Budget < 0 || o.Budget >= sizing.ReconcileEvery {
		return fmt.Errorf("Reconcile.Budget=%s: want less than the schedule's %s (0 for 45s)", o.Budget, sizing.ReconcileEvery)
	}
	return nil
}

// withDefaults is o with every zero field set to its default (the fields' comments say which).
func (o AlarmOptions) withDefaults() AlarmOptions {
	if o.ServerErrorPercent == 0 {
		o.ServerErrorPercent = 1
	}
	if o.ServerErrorMinRequests == 0 {
		o.ServerErrorMinRequests = 20
	}
	if o.TransactionConflicts == 0 {
		o.TransactionConflicts = 100
	}
	if o.DispatchLag == 0 {
		o.DispatchLag = time.Minute
	}
	return o
}

// TracingOptions configure tracing. The zero value turns it on: active tracing on
// longrun's functions, its state machines and the API stage (X-Ray), and on longrun's
// functions the OpenTelemetry collector layer with LONGRUN_TRACING=otlp and
// OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 (the collector's OTLP/HTTP receiver).
// The team's workers are left as they are.
type TracingOptions struct {
	// Disabled turns tracing off: no active tracing, no collector layer, LONGRUN_TRACING=off.
	Disabled bool
	// CollectorLayerArn is the Lambda layer of the collector the functions export their spans
	// to (an extension listening on localhost:4318). Empty: the AWS Distro for OpenTelemetry
	// collector layer that AWS publishes for the functions' architecture in the stack's
	// region (docs/deploy.md, "Tracing", names its version); in a region where it is not
	// published (China, GovCloud) there is none, and the functions export nothing
	// (LONGRUN_TRACING=off) while Lambda's own tracing stays on.
	CollectorLayerArn string
}

// TableEncryption is how the table is encrypted at rest.
type TableEncryption string

const (
	// TableEncryptionAWSOwned encrypts with a key AWS owns and manages (the default; "" too).
	TableEncryptionAWSOwned TableEncryption = "aws-owned"
	// TableEncryptionCustomerManaged encrypts with a customer managed key: Props.TableKey,
	// or a key the construct creates (rotated yearly, alias alias/longrun-<Stage>-table).
	TableEncryptionCustomerManaged TableEncryption = "customer"
)

var stagePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,23}$`)

// customerKey reports whether the table is encrypted with a customer managed key.
func (p *Props) customerKey() bool {
	return p.TableEncryption == TableEncryptionCustomerManaged || p.TableKey != nil
}

// check refuses settings that would deploy something other than was meant. It does not
// look at the types or the workers (New does, with the file loaded).
func (p *Props) check() error {
	if !stagePattern.MatchString(p.Stage) {
		return fmt.Errorf("Stage %q: want letters, digits and hyphens (at most 24), such as dev or prod", p.Stage)
	}
	for _, f := range p.TypesFiles {
		// LONGRUN_TYPES_FILE lists the files on Lambda separated by commas.
		if strings.TrimSpace(f) == "" || strings.Contains(filepath.Base(f), ",") {
			return fmt.Errorf("TypesFiles %q: want a path per file, none empty, no comma in a file's name", p.TypesFiles)
		}
	}
	if p.CodeDir == "" {
		return fmt.Errorf("CodeDir is empty: it holds longrun's function zips (longrun's cmd/release -out DIR writes them)")
	}
	if c := p.Cognito; c != nil {
		if c.UserPool != nil && len(c.ClientIDs) == 0 {
			return fmt.Errorf("Cognito.UserPool needs Cognito.ClientIDs: the app clients whose ID tokens the API accepts (clients that may not write custom:tenant)")
		}
		if c.UserPool == nil && len(c.ClientIDs) > 0 {
			return fmt.Errorf("Cognito.ClientIDs name clients of an existing pool: set Cognito.UserPool too (a pool the construct creates brings its own client)")
		}
	}
	if err := p.Console.check(p); err != nil {
		return err
	}
	for _, list := range []struct {
		field string
		arns  []string
	}{{"OperatorPrincipals", p.OperatorPrincipals}, {"EventPublishers", p.EventPublishers}} {
		for _, a := range list.arns {
			if !strings.HasPrefix(a, "arn:") || !(strings.Contains(a, ":iam::") || strings.Contains(a, ":sts::")) {
				return fmt.Errorf("%s: %q is not an IAM role or user ARN", list.field, a)
			}
		}
	}
	for _, q := range []struct {
		field string
		n     *int
	}{{"TenantQuota", p.TenantQuota}, {"PrincipalQuota", p.PrincipalQuota}} {
		if q.n != nil && *q.n < 0 {
			return fmt.Errorf("%s=%d: want a non-negative number (0 disables)", q.field, *q.n)
		}
	}
	if p.IdempotencyWindow < 0 || p.IdempotencyWindow%time.Second != 0 {
		return fmt.Errorf("IdempotencyWindow=%s: want whole seconds, more than 0 (or 0 for 24h)", p.IdempotencyWindow)
	}
	if p.ThrottleRate < 0 || p.ThrottleBurst < 0 {
		return fmt.Errorf("ThrottleRate=%v, ThrottleBurst=%v: want non-negative numbers (0 for 100 and 200)", p.ThrottleRate, p.ThrottleBurst)
	}
	if err := p.Reconcile.check(); err != nil {
		return err
	}
	if a := p.Alarms; a.ServerErrorPercent < 0 || a.ServerErrorMinRequests < 0 || a.TransactionConflicts < 0 || a.DispatchLag < 0 {
		return fmt.Errorf("Alarms %+v: want non-negative thresholds (0 for the defaults)", a)
	}
	if a := p.Tracing.CollectorLayerArn; a != "" && (!strings.HasPrefix(a, "arn:") || !strings.Contains(a, ":layer:")) {
		return fmt.Errorf("Tracing.CollectorLayerArn %q is not a Lambda layer version ARN", a)
	}
	if p.Tracing.Disabled && p.Tracing.CollectorLayerArn != "" {
		return fmt.Errorf("Tracing: a CollectorLayerArn with Disabled: choose one")
	}
	if ns := p.MetricsNamespace; ns != "" && (strings.TrimSpace(ns) != ns || strings.ContainsAny(ns, `"'`) || strings.HasPrefix(ns, "AWS/") || len(ns) > 255) {
		return fmt.Errorf("MetricsNamespace %q: want a CloudWatch namespace of your own (no quotes, spaces around, or AWS/ prefix)", ns)
	}
	switch p.TableEncryption {
	case "":
	case TableEncryptionAWSOwned:
		if p.TableKey != nil {
			return fmt.Errorf("TableKey needs TableEncryption %q (or none), not %q", TableEncryptionCustomerManaged, p.TableEncryption)
		}
	case TableEncryptionCustomerManaged:
	default:
		return fmt.Errorf("TableEncryption %q: want %q (the default) or %q", p.TableEncryption, TableEncryptionAWSOwned, TableEncryptionCustomerManaged)
	}
	return nil
}
