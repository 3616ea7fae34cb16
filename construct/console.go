package construct

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/jsii-runtime-go"
)

// domainPrefixPattern is what Cognito takes as a domain prefix (besides the reserved words).
var domainPrefixPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// reservedInPrefix are the words a Cognito domain prefix may not contain.
var reservedInPrefix = []string{"aws", "amazon", "cognito"}

// consoleClientID is what Cognito app client ids are made of (as the api function checks
// LONGRUN_CONSOLE_CLIENT_ID).
var consoleClientID = regexp.MustCompile(`^[A-Za-z0-9_+]{1,128}$`)

// check refuses console settings that contradict the authorization, and a domain prefix or
// hosted UI URL Cognito or the api function would refuse (at deployment, or at every cold
// start).
func (o ConsoleOptions) check(p *Props) error {
	created := p.Cognito != nil && p.Cognito.UserPool == nil
	existing := p.Cognito != nil && p.Cognito.UserPool != nil
	if o.Disabled {
		if o.DomainPrefix != "" || o.CognitoDomain != "" || o.ClientID != "" {
			return fmt.Errorf("Console: Disabled with a DomainPrefix, CognitoDomain or ClientID: choose one")
		}
		return nil
	}
	if o.DomainPrefix != "" && !created {
		return fmt.Errorf("Console.DomainPrefix names the hosted UI domain of a pool the construct creates (Cognito: &CognitoOptions{} without a UserPool); an existing pool's is Console.CognitoDomain")
	}
	if created {
		prefix := o.DomainPrefix
		if prefix != "" && !domainPrefixPattern.MatchString(prefix) {
			return fmt.Errorf("Console.DomainPrefix %q: want lowercase letters, digits and hyphens, at most 63, starting and ending with a letter or digit", prefix)
		}
		what := fmt.Sprintf("Console.DomainPrefix %q", prefix)
		if prefix == "" {
			prefix = defaultPrefixStart(p.Stage)
			what = fmt.Sprintf("the default domain prefix %q… (from Stage)", prefix)
		}
		for _, w := range reservedInPrefix {
			if strings.Contains(prefix, w) {
				return fmt.Errorf("%s contains %q, which Cognito does not allow in a domain prefix: set Console.DomainPrefix", what, w)
			}
		}
	}
	if o.CognitoDomain == "" && o.ClientID == "" {
		return nil
	}
	if !existing {
		return fmt.Errorf("Console.CognitoDomain and Console.ClientID are an existing pool's (Cognito.UserPool): a pool the construct creates gets a domain and a client of its own, and with IAM authorization the console cannot sign in")
	}
	if o.CognitoDomain == "" || o.ClientID == "" {
		return fmt.Errorf("Console.CognitoDomain and Console.ClientID go together: the hosted UI the console signs in through and the app client it signs in as")
	}
	if _, err := consoleOrigin(o.CognitoDomain); err != nil {
		return err
	}
	if !consoleClientID.MatchString(o.ClientID) {
		return fmt.Errorf("Console.ClientID %q is not a Cognito app client id", o.ClientID)
	}
	return nil
}

// consoleOrigin is the hosted UI's base URL as the api function keeps it: https and a host,
// nothing else (a trailing slash is dropped).
func consoleOrigin(domain string) (string, error) {
	u, err := url.Parse(domain)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		u.Opaque != "" || (u.Path != "" && u.Path != "/") || strings.ContainsAny(u.Host, " ;,'\"") {
		return "", fmt.Errorf("Console.CognitoDomain %q is not an https origin such as https://<prefix>.auth.<region>.amazoncognito.com", domain)
	}
	return "https://" + strings.ToLower(u.Host), nil
}

// defaultPrefixStart is the default domain prefix before the stack id's digits.
func defaultPrefixStart(stage string) string { return "longrun-" + strings.ToLower(stage) + "-" }

// console is the operations console's sign-in: the API's /console routes are restAPI's; here
// the console's URL, and with Cognito the hosted UI and the app client it signs in through,
// set on the api function (LONGRUN_CONSOLE_COGNITO_DOMAIN, LONGRUN_CONSOLE_CLIENT_ID), whose
// ID tokens the API then accepts (LONGRUN_COGNITO_CLIENT_IDS). With IAM authorization none:
// the console says it cannot sign in.
//
// The client's callback URL is the console's, which names the API: it is built from the
// REST API's id (a Ref of the RestApi alone), the region, the URL suffix and the stage's
// name as a literal, never from the stage or the deployment (APIURL), which depend on the
// methods, which depend on the api function, whose environment names the client: a cycle.
func (b *builder) console() {
	opts := b.props.Console
	if opts.Disabled {
		return
	}
	b.lr.ConsoleURL = awscdk.Fn_Join(jsii.String(""), &[]*string{
		jsii.String("https://"), b.lr.API.RestApiId(), jsii.String(".execute-api."), b.stack.Region(), jsii.String("."),
		b.stack.UrlSuffix(), jsii.String("/" + b.props.Stage + "/console/"),
	})
	if b.users == nil {
		return
	}
	fn := b.lr.Functions["api"]
	var domain, clientID, accepted *string
	switch pool := b.users.pool; {
	case b.users.client != nil: // the pool the construct created
		prefix := jsii.String(opts.DomainPrefix)
		if opts.DomainPrefix == "" {
			// The last group of the stack id's UUID (arn:…:stack/<name>/<uuid>): 12 hex
			// digits CloudFormation chose for this stack, unique without a choice, none
			// spelling a reserved word.
			uuid := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), b.stack.StackId(), nil))
			prefix = awscdk.Fn_Join(jsii.String(""), &[]*string{
				jsii.String(defaultPrefixStart(b.props.Stage)),
				awscdk.Fn_Select(jsii.Number(4), awscdk.Fn_Split(jsii.String("-"), uuid, nil)),
			})
		}
		b.lr.UserPoolDomain = pool.AddDomain(jsii.String("ConsoleDomain"), &awscognito.UserPoolDomainOptions{
			CognitoDomain: &awscognito.CognitoDomainOptions{DomainPrefix: prefix},
		})
		b.lr.ConsoleClient = pool.AddClient(jsii.String("ConsoleClient"), &awscognito.UserPoolClientOptions{
			UserPoolClientName: b.name("console"),
			// A page holds no secret: a public client, whose code only the page that asked
			// for it can redeem (PKCE's verifier stays in that page).
			GenerateSecret: jsii.Bool(false),
			AuthFlows:      &awscognito.AuthFlow{UserSrp: jsii.Bool(true)},
			OAuth: &awscognito.OAuthSettings{
				Flows:        &awscognito.OAuthFlows{AuthorizationCodeGrant: jsii.Bool(true)},
				Scopes:       &[]awscognito.OAuthScope{awscognito.OAuthScope_OPENID(), awscognito.OAuthScope_EMAIL(), awscognito.OAuthScope_PROFILE()},
				CallbackUrls: &[]*string{b.lr.ConsoleURL},
				LogoutUrls:   &[]*string{b.lr.ConsoleURL},
			},
			SupportedIdentityProviders: &[]awscognito.UserPoolClientIdentityProvider{awscognito.UserPoolClientIdentityProvider_COGNITO()},
			PreventUserExistenceErrors: jsii.Bool(true),
			EnableTokenRevocation:      jsii.Bool(true),
			IdTokenValidity:            awscdk.Duration_Hours(jsii.Number(1)),
			AccessTokenValidity:        awscdk.Duration_Hours(jsii.Number(1)),
			// A working day: the console's session ends with its tab (sessionStorage) anyway.
			RefreshTokenValidity: awscdk.Duration_Hours(jsii.Number(12)),
			// As the API's client: custom:tenant is read (the ID token carries it), never
			// written, and the write list is explicit (without one a client writes all).
			ReadAttributes:  clientReadAttributes(),
			WriteAttributes: clientWriteAttributes(),
		})
		domain = b.lr.UserPoolDomain.BaseUrl(nil)
		clientID = b.lr.ConsoleClient.UserPoolClientId()
		accepted = awscdk.Fn_Join(jsii.String(","), &[]*string{b.users.clientIDs, clientID})
	case opts.ClientID != "":
		origin, _ := consoleOrigin(opts.CognitoDomain) // checked by Props.check
		domain, clientID = jsii.String(origin), jsii.String(opts.ClientID)
		if ids := b.props.Cognito.ClientIDs; !slices.Contains(ids, opts.ClientID) {
			accepted = jsii.String(strings.Join(append(slices.Clone(ids), opts.ClientID), ","))
		}
	default:
		return // an existing pool without the console's client: the console cannot sign in
	}
	fn.AddEnvironment(jsii.String("LONGRUN_CONSOLE_COGNITO_DOMAIN"), domain, nil)
	fn.AddEnvironment(jsii.String("LONGRUN_CONSOLE_CLIENT_ID"), clientID, nil)
	if accepted != nil {
		fn.AddEnvironment(jsii.String("LONGRUN_COGNITO_CLIENT_IDS"), accepted, nil)
	}
}
