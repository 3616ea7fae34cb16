package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/longrun-dev/longrun/internal/local/ddblocal"
)

// The operations console (docs/console.md) in a real browser: headless Chromium, Debian's
// chromium package (`make chromium` installs it), driven through chromedp against the
// local stack's /console/. The pages act through the public API with the token signed in,
// as a person would: every wait is on the page's own text or attributes, never a sleep.

// chromiumPath is the browser; LONGRUN_CHROMIUM names another.
func chromiumPath() string {
	if p := os.Getenv("LONGRUN_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// browser is one Chromium for the suite's console tests; each test has a browser context
// (a tab with storage of its own) in it. stopBrowser, from TestMain, ends it.
var browser struct {
	once    sync.Once
	ctx     context.Context
	cancel  context.CancelFunc
	dataDir string
	err     error
}

func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
		_ = os.RemoveAll(browser.dataDir)
	}
}

// consolePatience bounds every wait on a page: an operation's workflow on a loaded machine
// (make test runs this suite beside other jobs) takes seconds, not minutes.
const consolePatience = 2 * time.Minute

// consoleTab is a fresh tab in its own browser context at 1280×800, with the page's uncaught
// exceptions, errors it logs and Content-Security-Policy violations reported as failures.
func consoleTab(t *testing.T) context.Context {
	t.Helper()
	exe := chromiumPath()
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("the console's browser tests need headless Chromium at %s: `make chromium` installs Debian's chromium package (%v)", exe, err)
	}
	browser.once.Do(func() {
		browser.dataDir, browser.err = os.MkdirTemp("", "longrun-e2e-chromium-")
		if browser.err != nil {
			return
		}
		// The flags this machine's Chromium needs headless (docs/development.md): no sandbox
		// as root, no GPU, and none of its own network traffic, which a closed network refuses.
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe),
			chromedp.UserDataDir(browser.dataDir),
			chromedp.NoSandbox,
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("no-first-run", true),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		browser.ctx = ctx
		browser.cancel = func() { cancelCtx(); cancelAlloc() }
		browser.err = chromedp.Do(ctx) // starts the browser
	})
	if browser.err != nil {
		t.Fatalf("start %s: %v", exe, browser.err)
	}
	var mu sync.Mutex
	var problems []string
	listen := func(ev any) {
		var p string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			p = fmt.Sprintf("uncaught exception: %s %s:%d", d.Text, d.URL, d.LineNumber)
			if d.Exception != nil && d.Exception.Description != "" {
				p += ": " + d.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			// A refused request (a 404 for another tenant's operation) is logged by the
			// network as an error; anything else at error level is the page's fault.
			if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
				p = fmt.Sprintf("console %s error: %s", ev.Entry.Source, ev.Entry.Text)
			}
		}
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	}
	tab, cancelTab := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(listen))
	t.Cleanup(cancelTab)
	do(t, tab, chromedp.EmulateViewport(1280, 800), // the tab's first action makes it
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			// Counted before the console's own scripts run (a DevTools script is outside the
			// page's policy).
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
				Source: `window.__cspViolations = []; document.addEventListener('securitypolicyviolation',
					(e) => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile + ':' + e.lineNumber));`})
			return err
		}))
	ctx, cancel := context.WithTimeout(tab, 4*time.Minute)
	t.Cleanup(func() {
		var violations []string
		var text string
		_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			var err error
			if violations, err = chromedp.Evaluate[[]string](`window.__cspViolations || []`)(ctx, tg); err != nil {
				return err
			}
			text, err = chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`)(ctx, tg)
			return err
		}))
		// The page never shows a provider identifier, as no API answer holds one.
		for _, leak := range []string{"arn:aws", "000000000000", "123456789012", "execution:", stack.Table, "dlq"} {
			if strings.Contains(text, leak) {
				t.Errorf("the page shows %q:\n%s", leak, text)
			}
		}
		cancel()
		cancelTab()
		mu.Lock()
		defer mu.Unlock()
		for _, v := range violations {
			t.Errorf("Content-Security-Policy violation: %s", v)
		}
		for _, p := range problems {
			t.Errorf("page: %s", p)
		}
	})
	return ctx
}

func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v\n%s", err, mainText(ctx))
	}
}

// mainText is the page's visible text, for failure messages.
func mainText(ctx context.Context) string {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(c, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(the page's text could not be read: " + err.Error() + ")"
	}
	return "page text:\n" + text
}

// eval runs a JavaScript statement on the page (a click on an element found by a path
// a selector cannot say, say).
func eval(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { `+expr+`; return true; })()`)); err != nil {
		t.Fatalf("%s: %v\n%s", expr, err, mainText(ctx))
	}
}

// js is s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitFor waits until the JavaScript expression is true on the page.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	// An element not there yet is a false, not an exception the page would report.
	guarded := `(() => { try { return !!(` + expr + `); } catch (e) { return false; } })()`
	deadline := time.Now().Add(consolePatience)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](guarded, chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(100*time.Millisecond)))
		if err == nil {
			return
		}
		// A poll that began as the page was replaced (a navigation) looks again in the new one.
		if msg := err.Error(); time.Now().Before(deadline) && ctx.Err() == nil &&
			(strings.Contains(msg, "Cannot find context") || strings.Contains(msg, "navigated or closed") || strings.Contains(msg, "context was destroyed")) {
			continue
		}
		t.Fatalf("waiting for %s: %v\n%s", what, err, mainText(ctx))
	}
}

// textOf is the visible text of the first element sel matches ("" when there is none).
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%s) || {innerText: ''}).innerText`, js(sel))))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// screenshot keeps the page as it is now in .artifacts/console/<name>.png.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	root, err := ddblocal.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, ".artifacts", "console", name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// signIn opens the console and signs in with a bearer token, as the local stack's sign-in
// page asks.
func signIn(t *testing.T, ctx context.Context, token string, shot string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(stack.APIURL+"/console/"),
		chromedp.WaitVisible(chromedp.CSS(`form.signin input[name=token]`)))
	if shot != "" {
		screenshot(t, ctx, shot)
	}
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`form.signin input[name=token]`), token),
		chromedp.Click(chromedp.CSS(`form.signin button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#who-name`)))
}

// openOperation finds an operation by id through the list page's search box.
func openOperation(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	do(t, ctx, chromedp.Click(chromedp.CSS(`nav a[data-nav=operations]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.search input[name=q]`)),
		chromedp.SendKeys(chromedp.CSS(`form.search input[name=q]`), id),
		chromedp.Click(chromedp.CSS(`form.search button[type=submit]`)))
}

// Sign in, then the list with a filter: the target filter shows the operation of that target
// and not another, newest first, and each row shows its state as a colour and a word.
func TestConsoleSignInAndFilteredList(t *testing.T) {
	t.Parallel()
	run := time.Now().UnixNano()
	c := alice(t)
	mine := c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"console-list-%d","steps":2}}`, run))
	other := c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"console-other-%d"}}`, run))
	c.poll(mine, time.Minute)

	ctx := consoleTab(t)
	signIn(t, ctx, "alice-dev-token", "sign-in")
	if who := textOf(t, ctx, "#who-name"); strings.Contains(who, "operator") {
		t.Errorf("alice is shown as %q", who)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#nav-operator').hidden`)); err != nil || !hidden {
		t.Errorf("alice sees the operator page's link (%v)", err)
	}
	// The unfiltered list has both, newest first.
	waitFor(t, ctx, "both operations listed", fmt.Sprintf(`!!document.querySelector('a[href="#/operations/%s"]') && !!document.querySelector('a[href="#/operations/%s"]')`, mine, other))
	order := textOf(t, ctx, "table.ops tbody")
	if strings.Index(order, other) > strings.Index(order, mine) {
		t.Errorf("not newest first:\n%s", order)
	}

	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`form.filters input[name=target]`), fmt.Sprintf("demo:console-list-%d", run)),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	waitFor(t, ctx, "the filtered list", `location.hash.includes('target=') && document.querySelector('.list-status').innerText.startsWith('1 operation shown')`)
	rows := textOf(t, ctx, "table.ops tbody")
	if !strings.Contains(rows, mine) || strings.Contains(rows, other) {
		t.Fatalf("filtered by target, the list has:\n%s", rows)
	}
	if !strings.Contains(rows, "succeeded") {
		t.Errorf("the row does not say its state: %s", rows)
	}
	class, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('table.ops tbody .badge').className`))
	if err != nil || !strings.Contains(class, "state-succeeded") {
		t.Errorf("the state's badge is %q (%v), want its colour class state-succeeded", class, err)
	}
	if bar, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('table.ops tbody [role=progressbar]').getAttribute('aria-valuenow')`)); err != nil || bar != "100" {
		t.Errorf("the progress bar says %q (%v), want 100", bar, err)
	}

	// A state filter that does not match empties the list; the filter stays in the address.
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`form.filters select[name=state]`), "failed"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	waitFor(t, ctx, "no failed operation of that target", `location.hash.includes('state=failed') && document.querySelector('.list-status').innerText === 'No operations match.'`)

	// The whole list, at 1280×800 and in a narrow window.
	do(t, ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=button]`)))
	waitFor(t, ctx, "the whole list again", `location.hash === '#/operations' && document.querySelectorAll('table.ops tbody tr').length >= 2`)
	screenshot(t, ctx, "operations")
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	waitFor(t, ctx, "the narrow layout", `getComputedStyle(document.querySelector('table.ops tbody tr')).display === 'block'`)
	screenshot(t, ctx, "operations-narrow")
}

// One operation, from waiting for a signal to its end: the page polls at the API's
// Retry-After, the signal is sent through the form its schema builds, and the timeline,
// the result and the events follow the operation to succeeded, where the polling stops.
func TestConsoleOperationTimelineToItsEnd(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"console-timeline-%d","steps":3,"sleepMs":400,"await":"approval"}}`, time.Now().UnixNano()))

	ctx := consoleTab(t)
	signIn(t, ctx, "alice-dev-token", "")
	openOperation(t, ctx, id)
	waitFor(t, ctx, "the operation's page", fmt.Sprintf(`location.hash === '#/operations/%s' && document.querySelector('h1').innerText.includes(%s)`, id, js(id)))
	waitFor(t, ctx, "the operation awaiting approval", `(document.querySelector('.summary') || {innerText: ''}).innerText.includes('signal approval') && !!document.querySelector('form.signal-form:not([hidden])') && !document.querySelector('form.signal-form').closest('section').hidden`)
	if note := textOf(t, ctx, ".refresh-note"); !strings.Contains(note, "Retry-After") {
		t.Errorf("the page does not say when it looks again: %q", note)
	}
	waitFor(t, ctx, "the wait on the timeline", `!!document.querySelector('.tl-await')`)

	// The form built from approval's schema: approved (a required boolean) and by.
	do(t, ctx, chromedp.Click(chromedp.CSS(`form.signal-form input[name=approved]`)),
		chromedp.SendKeys(chromedp.CSS(`form.signal-form input[name=by]`), "alice, in the console"),
		chromedp.Click(chromedp.CSS(`form.signal-form button[type=submit]`)))
	waitFor(t, ctx, "the signal recorded", `document.querySelector('form.signal-form .form-result').innerText.includes('Signal approval recorded')`)

	waitFor(t, ctx, "the operation succeeded", `document.querySelector('.head-badge').innerText.includes('succeeded') && document.querySelector('.refresh-note').innerText.startsWith('Final state: succeeded')`)
	waitFor(t, ctx, "the whole history drawn", `!!document.querySelector('.tl-mark.tl-succeeded') && document.querySelectorAll('.tl-span.tl-step').length >= 2`)
	timeline := textOf(t, ctx, ".timeline")
	// (No dispatched fact when the execution's start is recorded first: a start implies it.)
	for _, want := range []string{"accepted", "started", "Step 1", "Awaiting approval", "approval received", "succeeded"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, timeline)
		}
	}
	// The first step only waited; the three that work follow it, drawn one by one or, when
	// they reported together, as one bar: the last ends at step 4.
	if !regexp.MustCompile(`Steps? (\d+–)?4 · `).MatchString(timeline) {
		t.Errorf("the timeline does not reach step 4:\n%s", timeline)
	}
	result := textOf(t, ctx, ".side")
	if !strings.Contains(result, "Result") || !strings.Contains(result, "alice, in the console") {
		t.Errorf("the result is not shown:\n%s", result)
	}
	if !strings.Contains(result, "Input") || !strings.Contains(result, `"sleepMs": 400`) {
		t.Errorf("the input (the history's accepted entry) is not shown:\n%s", result)
	}
	events := textOf(t, ctx, "table.events")
	for _, want := range []string{"accepted", "running", "succeeded"} {
		if !strings.Contains(events, want) {
			t.Errorf("the events lack %q:\n%s", want, events)
		}
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`details.every-fact > summary`)), chromedp.WaitVisible(chromedp.CSS(`table.history`)))
	if !strings.Contains(textOf(t, ctx, "table.history"), "signal approval") {
		t.Error("every fact's table does not show the signal")
	}
	// Polling stopped: nothing is scheduled once the state is terminal, and the actions are gone.
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('.actions').hidden`)); err != nil || !hidden {
		t.Errorf("the cancel action is still offered on a terminal operation (%v)", err)
	}

	path := screenshot(t, ctx, "operation")
	// docs/console.md shows this page: written when missing or asked for (-update-docs), so a
	// test run leaves the committed picture alone.
	root, err := ddblocal.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(root, "docs", "images", "console-operation.png")
	if _, err := os.Stat(doc); err == nil && !*updateDocs {
		return
	}
	png, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(doc), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", doc)
}

// updateDocs rewrites docs/images/console-operation.png from this run's screenshot:
// go test -run TestConsoleOperationTimelineToItsEnd ./internal/e2e/ -update-docs
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/images/console-operation.png")

// Cancel from the page, with If-Match the version it shows: the operation ends canceled.
func TestConsoleCancel(t *testing.T) {
	t.Parallel()
	c := alice(t)
	// It waits for a signal, with nothing running, so the version the page shows holds still.
	id := c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"console-cancel-%d","await":"approval"}}`, time.Now().UnixNano()))

	ctx := consoleTab(t)
	signIn(t, ctx, "alice-dev-token", "")
	openOperation(t, ctx, id)
	waitFor(t, ctx, "the operation awaiting approval", `(document.querySelector('.summary') || {innerText: ''}).innerText.includes('signal approval')`)
	version := textOf(t, ctx, ".summary .pair:nth-child(4) dd")
	do(t, ctx, chromedp.Click(chromedp.CSS(`.actions button.danger-outline`)),
		chromedp.WaitVisible(chromedp.CSS(`.actions .confirm`)))
	if confirm := textOf(t, ctx, ".actions .confirm"); !strings.Contains(confirm, `If-Match: "`+version+`"`) {
		t.Errorf("the confirmation does not name the version shown (%s): %q", version, confirm)
	}
	screenshot(t, ctx, "cancel")
	do(t, ctx, chromedp.Click(chromedp.CSS(`.actions .confirm button.danger`)))
	waitFor(t, ctx, "the operation canceled", `document.querySelector('.head-badge').innerText.includes('canceled') && document.querySelector('.refresh-note').innerText.startsWith('Final state: canceled')`)
	if r := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); r.json["state"] != "canceled" {
		t.Fatalf("the API says %v", r.json["state"])
	}
	waitFor(t, ctx, "the end on the timeline", `!!document.querySelector('.tl-mark.tl-canceled')`)
	if !strings.Contains(textOf(t, ctx, ".timeline"), "cancel requested") {
		t.Errorf("the timeline lacks the cancel intent:\n%s", textOf(t, ctx, ".timeline"))
	}
}

// The pages refuse another tenant's operation: Bob, opening Alice's, reads "No such
// operation" and nothing of it, as the API answers him.
func TestConsoleRefusesAnotherTenantsOperation(t *testing.T) {
	t.Parallel()
	target := fmt.Sprintf("console-secret-%d", time.Now().UnixNano())
	id := alice(t).admit(`{"type":"demo.task","input":{"target":"` + target + `"}}`)

	ctx := consoleTab(t)
	signIn(t, ctx, "bob-dev-token", "")
	openOperation(t, ctx, id)
	waitFor(t, ctx, "No such operation", `document.querySelector('h1').innerText === 'No such operation'`)
	screenshot(t, ctx, "not-found")
	// Straight to its address, too.
	do(t, ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(stack.APIURL+"/console/#/operations/"+id))
	waitFor(t, ctx, "No such operation", `document.querySelector('h1') && document.querySelector('h1').innerText === 'No such operation'`)
	for _, sel := range []string{"main", "title"} {
		text := textOf(t, ctx, sel)
		for _, secret := range []string{target, "demo.task", "acme", "alice"} {
			if strings.Contains(text, secret) {
				t.Errorf("bob's page shows %q: %s", secret, text)
			}
		}
	}
	// Nor does his list have it.
	do(t, ctx, chromedp.Click(chromedp.CSS(`nav a[data-nav=operations]`)))
	waitFor(t, ctx, "bob's list", `!!document.querySelector('.list-status') && document.querySelector('.list-status').innerText !== 'Loading…'`)
	if strings.Contains(textOf(t, ctx, "main"), id) {
		t.Errorf("bob's list shows alice's operation")
	}
}

// An operator retries an unknown step until it succeeds: a flaky demo.task loses its last
// step's first result and waits in outcome_unknown; the operator finds it in the queue of
// every tenant's, retries the step with a reason and If-Match, and it ends succeeded.
func TestConsoleOperatorRetriesAnUnknownStep(t *testing.T) {
	t.Parallel()
	c := alice(t)
	id := c.admit(fmt.Sprintf(`{"type":"demo.task","input":{"target":"console-flaky-%d","steps":2,"outcome":"flaky"}}`, time.Now().UnixNano()))
	if r := c.poll(id, time.Minute); r.json["state"] != "outcome_unknown" {
		t.Fatalf("flaky demo.task ended %v, want outcome_unknown: %s", r.json["state"], r.body)
	}

	ctx := consoleTab(t)
	signIn(t, ctx, "ops-dev-token", "")
	waitFor(t, ctx, "the operator's link", `!document.querySelector('#nav-operator').hidden && document.querySelector('#who-name').innerText.includes('operator')`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#nav-operator`)))
	waitFor(t, ctx, "the counts", `!!document.querySelector('.counts')`)
	if counts := textOf(t, ctx, ".counts"); !strings.Contains(counts, "outcome unknown") || !strings.Contains(counts, "running") {
		t.Errorf("the counts by state: %q", counts)
	}
	// The queue is oldest first across the suite's tenants: page on until this one shows.
	item := fmt.Sprintf(`document.querySelector('.queue a[href="#/operations/%s"]')`, id)
	waitFor(t, ctx, "the operation in the queue", fmt.Sprintf(`(() => {
		if (%s) return true;
		const more = document.querySelector('button.more');
		if (more && !more.hidden && !more.disabled) more.click();
		return false; })()`, item))
	screenshot(t, ctx, "operator")
	card := fmt.Sprintf(`%s.closest('li')`, item)
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](card+`.innerText`)); err != nil || !strings.Contains(text, "acme") || !strings.Contains(text, "outcome unknown") {
		t.Errorf("the queue's item: %q (%v)", text, err)
	}
	// A reason is required.
	eval(t, ctx, card+`.querySelector('button[value=retry]').click()`)
	waitFor(t, ctx, "a reason asked for", card+`.querySelector('.form-result').innerText.includes('A reason is required')`)
	eval(t, ctx, card+`.querySelector('textarea[name=reason]').focus()`)
	do(t, ctx, chromedp.KeyEvent("The provider lost the result; running the step again is safe."))
	eval(t, ctx, card+`.querySelector('button[value=retry]').click()`)
	waitFor(t, ctx, "the retry recorded", card+`.innerText.includes('Resolved: the operation is now running')`)

	// Its page follows it to the end, the retry on its timeline.
	eval(t, ctx, item+`.click()`)
	waitFor(t, ctx, "the retried operation succeeded", `!!document.querySelector('.head-badge') && document.querySelector('.head-badge').innerText.includes('succeeded')`)
	waitFor(t, ctx, "the retry on the timeline", `!!document.querySelector('.tl-mark.tl-retried')`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`details.every-fact > summary`)), chromedp.WaitVisible(chromedp.CSS(`table.history`)))
	if text := textOf(t, ctx, "table.history"); !strings.Contains(text, "running the step again is safe") {
		t.Errorf("the operator's reason is not among the facts:\n%s", text)
	}
	screenshot(t, ctx, "operator-retried")
	if r := c.do(http.MethodGet, "/v1/operations/"+id, "", ""); r.json["state"] != "succeeded" {
		t.Fatalf("the API says %v: %s", r.json["state"], r.body)
	}
}
