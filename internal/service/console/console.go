// Package console serves the operations console: static files embedded in the API function
// (assets/), answered at /console/ on the API's own origin (docs/console.md). The console
// reads and acts through the public API with the caller's own token; nothing here reads an
// operation. Every answer carries a Content-Security-Policy that lets the page load its own
// files only, and talk to its own origin (and the Cognito domain it signs in through).
package console

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the console is served under; every path under it is the console's.
const Prefix = "/console"

// Config says how the console signs its users in: with a pasted bearer token (the local
// stack's dev tokens) when CognitoDomain is empty, else through the Cognito hosted UI of
// that domain (OAuth 2.0 authorization code with PKCE) as the app client ClientID, whose
// ID tokens the API accepts (LONGRUN_COGNITO_CLIENT_IDS).
type Config struct {
	// CognitoDomain is the hosted UI's base URL, https://<prefix>.auth.<region>.amazoncognito.com
	// or a custom domain (LONGRUN_CONSOLE_COGNITO_DOMAIN).
	CognitoDomain string
	// ClientID is the app client the console signs in as (LONGRUN_CONSOLE_CLIENT_ID).
	ClientID string
}

// clientID is what Cognito app client ids are made of.
var clientID = regexp.MustCompile(`^[A-Za-z0-9_+]{1,128}$`)

// Validate checks that the configuration is token sign-in (both empty) or Cognito sign-in
// (an https origin and a client id), and returns it with the domain reduced to its origin.
func (c Config) Validate() (Config, error) {
	if c.CognitoDomain == "" && c.ClientID == "" {
		return c, nil
	}
	if c.CognitoDomain == "" || c.ClientID == "" {
		return c, fmt.Errorf("console: the Cognito domain and the client id go together (LONGRUN_CONSOLE_COGNITO_DOMAIN, LONGRUN_CONSOLE_CLIENT_ID)")
	}
	u, err := url.Parse(c.CognitoDomain)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		u.Opaque != "" || (u.Path != "" && u.Path != "/") || strings.ContainsAny(u.Host, " ;,'\"") {
		return c, fmt.Errorf("console: LONGRUN_CONSOLE_COGNITO_DOMAIN=%q is not an https origin such as https://<prefix>.auth.<region>.amazoncognito.com", c.CognitoDomain)
	}
	if !clientID.MatchString(c.ClientID) {
		return c, fmt.Errorf("console: LONGRUN_CONSOLE_CLIENT_ID=%q is not a Cognito app client id", c.ClientID)
	}
	c.CognitoDomain = "https://" + strings.ToLower(u.Host)
	return c, nil
}

// Handler answers the console's paths.
type Handler struct {
	headers map[string]string // on every answer
	files   map[string]file   // by name under /console/
}

type file struct {
	body        string
	contentType string
	cache       string
}

// The Cache-Control of the page and its configuration (read fresh on every visit, so a
// deployment's change shows at once), and of the other files (briefly cached: their names
// carry no version).
const (
	noStore    = "no-store"
	briefCache = "public, max-age=300"
)

// contentTypes are the media types of the files the console is made of; a file of another
// kind is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
}

// New builds the handler for cfg (Validate's rules).
func New(cfg Config) (*Handler, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	h := &Handler{headers: SecurityHeaders(cfg), files: map[string]file{}}
	err = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("console: %s is of no served kind", p)
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		cache := briefCache
		if name == "index.html" {
			cache = noStore
		}
		h.files[name] = file{body: string(b), contentType: ct, cache: cache}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := h.files["index.html"]; !ok {
		return nil, fmt.Errorf("console: no index.html among the assets")
	}
	body, err := json.Marshal(configDocument(cfg))
	if err != nil {
		return nil, err
	}
	h.files["config.json"] = file{body: string(body), contentType: contentTypes[".json"], cache: noStore}
	return h, nil
}

// configDocument is /console/config.json: how the page signs in.
func configDocument(cfg Config) any {
	type cognito struct {
		Domain   string `json:"domain"`
		ClientID string `json:"clientId"`
	}
	if cfg.CognitoDomain == "" {
		return struct {
			SignIn string `json:"signIn"`
		}{"token"}
	}
	return struct {
		SignIn  string  `json:"signIn"`
		Cognito cognito `json:"cognito"`
	}{"cognito", cognito{cfg.CognitoDomain, cfg.ClientID}}
}

// SecurityHeaders are the headers of every console answer: a Content-Security-Policy that
// allows the console's own files only (no inline script or style, nothing from another
// origin), requests to its own origin and, with Cognito sign-in, to the Cognito domain (the
// token exchange); no framing, no referrer, no sniffing.
func SecurityHeaders(cfg Config) map[string]string {
	cognito := ""
	if cfg.CognitoDomain != "" {
		cognito = " " + cfg.CognitoDomain
	}
	csp := strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self' data:",
		"connect-src 'self'" + cognito,
		"form-action 'self'" + cognito,
		"frame-ancestors 'none'",
		"base-uri 'none'",
	}, "; ")
	return map[string]string{
		"Content-Security-Policy": csp,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	}
}

// Owns reports whether path is the console's: /console and everything under /console/.
func Owns(path string) bool {
	return path == Prefix || strings.HasPrefix(path, Prefix+"/")
}

// Serve answers a request for one of the console's paths (Owns): GET and HEAD of
// /console/ (the page), /console/<file> and /console/config.json; /console is sent on to
// /console/ so the page's relative references resolve under it. Any other path under
// /console is 404, another method 405. The caller adds nothing the console would not: the
// API's handler passes the answer on with its request id.
func (h *Handler) Serve(method, urlPath string) events.APIGatewayProxyResponse {
	name, ok := strings.CutPrefix(urlPath, Prefix+"/")
	switch {
	case urlPath == Prefix:
		if method != http.MethodGet && method != http.MethodHead {
			return h.answer(method, http.StatusMethodNotAllowed, "text/plain; charset=utf-8", noStore, "Method not allowed.\n", "Allow", "GET, HEAD")
		}
		// Relative, so a stage prefix (/dev/console → /dev/console/) is kept.
		return h.answer(method, http.StatusFound, "text/plain; charset=utf-8", noStore, "The console is at console/.\n", "Location", "console/")
	case !ok:
		return h.answer(method, http.StatusNotFound, "text/plain; charset=utf-8", noStore, "Not found.\n")
	case name == "":
		name = "index.html"
	}
	f, found := h.files[name]
	if !found {
		return h.answer(method, http.StatusNotFound, "text/plain; charset=utf-8", noStore, "Not found.\n")
	}
	if method != http.MethodGet && method != http.MethodHead {
		return h.answer(method, http.StatusMethodNotAllowed, "text/plain; charset=utf-8", noStore, "Method not allowed.\n", "Allow", "GET, HEAD")
	}
	return h.answer(method, http.StatusOK, f.contentType, f.cache, f.body)
}

// answer is one response with the security headers, and extra as name, value pairs; a HEAD
// gets the headers without the body.
func (h *Handler) answer(method string, status int, contentType, cache, body string, extra ...string) events.APIGatewayProxyResponse {
	headers := make(map[string]string, len(h.headers)+3+len(extra)/2)
	for k, v := range h.headers {
		headers[k] = v
	}
	headers["Content-Type"] = contentType
	headers["Cache-Control"] = cache
	for i := 0; i+1 < len(extra); i += 2 {
		headers[extra[i]] = extra[i+1]
	}
	if method == http.MethodHead {
		body = ""
	}
	return events.APIGatewayProxyResponse{StatusCode: status, Headers: headers, Body: body}
}
