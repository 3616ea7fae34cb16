package console

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func newHandler(t *testing.T, cfg Config) *Handler {
	t.Helper()
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var cognito = Config{CognitoDomain: "https://longrun-dev.auth.eu-west-1.amazoncognito.com", ClientID: "4abc5def6ghi7jkl8mno9pqr0s"}

// Every answer, a 404 and a redirect included, carries the security headers.
func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	h := newHandler(t, Config{})
	for _, tc := range []struct{ method, path string }{
		{"GET", "/console"}, {"GET", "/console/"}, {"HEAD", "/console/"}, {"GET", "/console/console.js"},
		{"GET", "/console/config.json"}, {"GET", "/console/nope.js"}, {"POST", "/console/"}, {"GET", "/console/a/b"},
	} {
		r := h.Serve(tc.method, tc.path)
		want := map[string]string{
			"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"X-Frame-Options":         "DENY",
		}
		for k, v := range want {
			if got := r.Headers[k]; got != v {
				t.Errorf("%s %s: %s = %q, want %q", tc.method, tc.path, k, got, v)
			}
		}
		if r.Headers["Content-Type"] == "" || r.Headers["Cache-Control"] == "" {
			t.Errorf("%s %s: no Content-Type or Cache-Control: %v", tc.method, tc.path, r.Headers)
		}
	}
}

// With Cognito sign-in the page may talk to the Cognito domain (the token exchange) and
// nothing else beside its own origin.
func TestTheCSPAllowsTheCognitoDomainOnly(t *testing.T) {
	h := newHandler(t, cognito)
	csp := h.Serve("GET", "/console/").Headers["Content-Security-Policy"]
	for _, want := range []string{
		"connect-src 'self' https://longrun-dev.auth.eu-west-1.amazoncognito.com;",
		"form-action 'self' https://longrun-dev.auth.eu-west-1.amazoncognito.com;",
		"script-src 'self';", "style-src 'self';", "default-src 'none';", "frame-ancestors 'none';", "base-uri 'none'",
	} {
		if !strings.Contains(csp+";", want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Count(csp, "amazoncognito.com") != 2 {
		t.Errorf("CSP %q", csp)
	}
}

func TestPathsAndContentTypes(t *testing.T) {
	h := newHandler(t, Config{})
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
		cache        string
	}{
		{"GET", "/console/", 200, "text/html; charset=utf-8", "no-store"},
		{"GET", "/console/index.html", 200, "text/html; charset=utf-8", "no-store"},
		{"GET", "/console/console.css", 200, "text/css; charset=utf-8", "public, max-age=300"},
		{"GET", "/console/console.js", 200, "text/javascript; charset=utf-8", "public, max-age=300"},
		{"GET", "/console/timeline.js", 200, "text/javascript; charset=utf-8", "public, max-age=300"},
		{"GET", "/console/icon.svg", 200, "image/svg+xml", "public, max-age=300"},
		{"GET", "/console/config.json", 200, "application/json", "no-store"},
		{"HEAD", "/console/console.js", 200, "text/javascript; charset=utf-8", "public, max-age=300"},
		{"GET", "/console/nope.html", 404, "text/plain; charset=utf-8", "no-store"},
		{"GET", "/console/assets/console.js", 404, "text/plain; charset=utf-8", "no-store"},
		{"GET", "/console/../v1/operations", 404, "text/plain; charset=utf-8", "no-store"},
		{"GET", "/console//console.js", 404, "text/plain; charset=utf-8", "no-store"},
		{"GET", "/console/Console.js", 404, "text/plain; charset=utf-8", "no-store"},
		{"POST", "/console/", 405, "text/plain; charset=utf-8", "no-store"},
		{"DELETE", "/console/console.js", 405, "text/plain; charset=utf-8", "no-store"},
		{"PUT", "/console", 405, "text/plain; charset=utf-8", "no-store"},
		{"GET", "/consoles", 404, "text/plain; charset=utf-8", "no-store"},
	} {
		r := h.Serve(tc.method, tc.path)
		if r.StatusCode != tc.status || r.Headers["Content-Type"] != tc.contentType || r.Headers["Cache-Control"] != tc.cache {
			t.Errorf("%s %s: %d %q %q, want %d %q %q", tc.method, tc.path, r.StatusCode, r.Headers["Content-Type"], r.Headers["Cache-Control"],
				tc.status, tc.contentType, tc.cache)
		}
		if tc.status == 405 && r.Headers["Allow"] != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, r.Headers["Allow"])
		}
	}
}

// /console goes on to /console/ by a relative Location, so a stage prefix is kept.
func TestConsoleWithoutSlashRedirects(t *testing.T) {
	h := newHandler(t, Config{})
	for _, m := range []string{"GET", "HEAD"} {
		r := h.Serve(m, "/console")
		if r.StatusCode != http.StatusFound || r.Headers["Location"] != "console/" {
			t.Errorf("%s /console: %d %v", m, r.StatusCode, r.Headers)
		}
	}
}

// A HEAD is answered as a GET without the body.
func TestHeadHasNoBody(t *testing.T) {
	h := newHandler(t, Config{})
	get, head := h.Serve("GET", "/console/"), h.Serve("HEAD", "/console/")
	if get.Body == "" || head.Body != "" || head.StatusCode != 200 {
		t.Fatalf("GET %d %d bytes, HEAD %d %q", get.StatusCode, len(get.Body), head.StatusCode, head.Body)
	}
	for k, v := range get.Headers {
		if head.Headers[k] != v {
			t.Errorf("HEAD %s = %q, GET %q", k, head.Headers[k], v)
		}
	}
}

func TestConfigJSON(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, `{"signIn":"token"}`},
		{cognito, `{"signIn":"cognito","cognito":{"domain":"https://longrun-dev.auth.eu-west-1.amazoncognito.com","clientId":"4abc5def6ghi7jkl8mno9pqr0s"}}`},
		{Config{CognitoDomain: "https://Auth.Example.com/", ClientID: "abc"}, `{"signIn":"cognito","cognito":{"domain":"https://auth.example.com","clientId":"abc"}}`},
	} {
		r := newHandler(t, tc.cfg).Serve("GET", "/console/config.json")
		if r.StatusCode != 200 || r.Body != tc.want || !json.Valid([]byte(r.Body)) {
			t.Errorf("%+v: %d %s, want %s", tc.cfg, r.StatusCode, r.Body, tc.want)
		}
	}
}

func TestConfigIsValidated(t *testing.T) {
	for _, bad := range []Config{
		{CognitoDomain: "http://longrun.auth.us-east-1.amazoncognito.com", ClientID: "abc"},
		{CognitoDomain: "longrun.auth.us-east-1.amazoncognito.com", ClientID: "abc"},
		{CognitoDomain: "https://longrun.auth.us-east-1.amazoncognito.com/oauth2", ClientID: "abc"},
		{CognitoDomain: "https://longrun.auth.us-east-1.amazoncognito.com?x=1", ClientID: "abc"},
		{CognitoDomain: "https://user@longrun.auth.us-east-1.amazoncognito.com", ClientID: "abc"},
		{CognitoDomain: "https://", ClientID: "abc"},
		{CognitoDomain: "https://a.example.com; script-src *", ClientID: "abc"},
		{CognitoDomain: "https://longrun.auth.us-east-1.amazoncognito.com"},
		{ClientID: "abc"},
		{CognitoDomain: "https://longrun.auth.us-east-1.amazoncognito.com", ClientID: "a b"},
		{CognitoDomain: "https://longrun.auth.us-east-1.amazoncognito.com", ClientID: `abc"`},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

func TestOwns(t *testing.T) {
	for path, want := range map[string]bool{
		"/console": true, "/console/": true, "/console/x.js": true, "/console/a/b": true,
		"/consoles": false, "/v1/console": false, "/": false, "/v1/operations": false,
	} {
		if Owns(path) != want {
			t.Errorf("Owns(%q) = %v", path, !want)
		}
	}
}

// The page runs with script-src and style-src 'self' only: no inline script, style or event
// handler, and nothing (script, style, font, image) from another origin, so it works offline.
func TestAssetsAreSelfContained(t *testing.T) {
	inline := []*regexp.Regexp{
		regexp.MustCompile(`(?is)<script\b[^>]*>\s*[^<\s]`), // a script with a body
		regexp.MustCompile(`(?i)<style\b`),
		regexp.MustCompile(`(?i)\sstyle\s*=`),
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),
		regexp.MustCompile(`(?i)javascript:`),
	}
	external := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(\s*['"]?(?:https?:)?//`)
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		text := string(b)
		if strings.HasSuffix(p, ".html") {
			for _, tag := range regexp.MustCompile(`(?is)<script\b[^>]*>`).FindAllString(text, -1) {
				if !strings.Contains(tag, " src=") {
					t.Errorf("%s: a script without src: %q", p, tag)
				}
			}
			for _, re := range inline {
				if m := re.FindString(text); m != "" {
					t.Errorf("%s: inline script or style: %q", p, m)
				}
			}
		}
		for _, m := range external.FindAllString(text, -1) {
			// The SVG's namespace and problem types are names, not fetches.
			if m == "http://www.w3.org" && strings.HasSuffix(p, ".svg") || m == "https://longrun.dev" && strings.HasSuffix(p, ".js") {
				continue
			}
			t.Errorf("%s: references another origin: %q", p, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// index.html loads exactly the console's own files, by relative URL (under /console/, with a
// stage prefix or without).
func TestIndexLoadsItsOwnFiles(t *testing.T) {
	h := newHandler(t, Config{})
	index := h.Serve("GET", "/console/").Body
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(index, -1)
	if len(refs) < 3 {
		t.Fatalf("refs %v", refs)
	}
	for _, m := range refs {
		ref := m[1]
		if strings.Contains(ref, ":") || strings.HasPrefix(ref, "/") {
			t.Errorf("index.html references %q, not a relative file", ref)
			continue
		}
		if r := h.Serve("GET", "/console/"+ref); r.StatusCode != 200 {
			t.Errorf("index.html references %q: %d", ref, r.StatusCode)
		}
	}
	// Each module's imports are files the console serves.
	for name, f := range h.files {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		for _, m := range regexp.MustCompile(`from '\./([^']+)'`).FindAllStringSubmatch(f.body, -1) {
			if _, ok := h.files[m[1]]; !ok {
				t.Errorf("%s imports %s, which is not served", name, m[1])
			}
		}
	}
}

// The token is kept in sessionStorage only: never localStorage, never a cookie.
func TestTheTokenStaysInTheTab(t *testing.T) {
	h := newHandler(t, Config{})
	for name, f := range h.files {
		for _, bad := range []string{"localStorage", "document.cookie", "innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function"} {
			if strings.Contains(f.body, bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
	if !strings.Contains(h.files["api.js"].body, "sessionStorage.setItem(TOKEN") {
		t.Error("api.js does not keep the token in sessionStorage")
	}
}
