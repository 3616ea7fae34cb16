// Package layers guards the shape of the house: which layer may import which, and that
// docs/architecture.md, the map of the house, names every package with its real imports.
//
// Update the map's import cells after a change of imports with
//
//	go test ./internal -run TestArchitectureMap -update
package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/longrun-dev/longrun"

var update = flag.Bool("update", false, "rewrite the imports cells of docs/architecture.md")

type pkg struct {
	ImportPath string
	Imports    []string // direct, non-test
	Deps       []string // transitive, non-test
}

// rel is a package's path inside the module ("" for the root).
func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	// ./... stops at a nested module: the worker and client modules are named (go.work
	// joins them).
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...", "./worker/...", "./client/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// layerOf names the layer a package path (inside the module) belongs to.
func layerOf(r string) string {
	for _, l := range []string{"internal/core", "internal/service", "internal/aws", "internal/local",
		"internal/client", "internal/testkit", "internal/e2e", "functions", "cmd", "infra"} {
		if r == l || strings.HasPrefix(r, l+"/") {
			return strings.TrimPrefix(l, "internal/")
		}
	}
	if r == "api" || r == "events" {
		return "contract" // the OpenAPI document and the event schemas, embedded
	}
	if r == "construct" || strings.HasPrefix(r, "construct/") {
		return "construct" // the public CDK construct: deployment code, like infra
	}
	if r == "local" {
		return "runner" // the public local runner: the local stack for a team's own tests
	}
	if r == "internal" {
		return "internal" // this test
	}
	return "public"
}

// allowed lists, per layer, the layers of this module its packages may depend on (directly
// or not), and the outside module prefixes they must not.
func rules() map[string]struct {
	layers  []string
	foreign []string
} {
	awsSDK := []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/aws/aws-cdk-go", "github.com/aws/jsii-runtime-go"}
	type rule = struct {
		layers  []string
		foreign []string
	}
	return map[string]rule{
		// The domain: pure, no AWS of any kind, not even the Lambda event shapes.
		"core": {layers: []string{"core"}, foreign: []string{"github.com/aws/"}},
		// Services speak ports; they may read the shapes Lambda hands them
		// (aws-lambda-go/events) but never an SDK client or an adapter.
		"service": {layers: []string{"core", "service"}, foreign: awsSDK},
		// Adapters implement the services' ports.
		"aws":     {layers: []string{"core", "service", "aws"}},
		"local":   {layers: []string{"core", "service", "aws", "local"}},
		"client":  {layers: []string{"client"}},
		"testkit": {layers: []string{"core", "service", "aws", "local", "testkit"}},
		"e2e":     {layers: []string{"core", "service", "aws", "local", "client", "testkit", "public"}},
		// Workers are written on the public worker package, as a team's are.
		"functions": {layers: []string{"core", "service", "aws", "public"}},
		"cmd":       {layers: []string{"core", "service", "aws", "local", "client", "public"}},
		"infra":     {layers: []string{"core", "service", "aws", "construct", "infra"}},
		// The CDK construct is public but deployment code: it builds what infra built, from
		// the same specs (dynamo.TableSpec, eventsource.Mappings, stepfunctions.Template,
		// optype), and never runs or emulates anything. Its API carries CDK types only.
		"construct": {layers: []string{"core", "service", "aws", "construct"}},
		// The local runner is public but is the local stack: it wraps internal/local for a
		// team's tests and nothing public depends on it.
		"runner": {layers: []string{"core", "service", "aws", "local", "runner"}},
		// Public packages are what users import: they must not drag internal packages'
		// types into their API, so they depend on nothing internal but the core.
		"public":   {layers: []string{"core", "public"}},
		"contract": {},
		"internal": {},
	}
}

// violations lists every dependency that points the wrong way.
func violations(pkgs []pkg) []string {
	rs := rules()
	var out []string
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		r, ok := rs[layerOf(from)]
		r.layers = append(r.layers, "contract") // anyone may read the contract
		if !ok {
			out = append(out, fmt.Sprintf("%s: no layer rule for %q", from, layerOf(from)))
			continue
		}
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/") || dep == module {
				if to := layerOf(rel(dep)); !slices.Contains(r.layers, to) {
					out = append(out, fmt.Sprintf("%s (%s) depends on %s (%s)", from, layerOf(from), rel(dep), to))
				}
				continue
			}
			for _, f := range r.foreign {
				if strings.HasPrefix(dep, f) {
					out = append(out, fmt.Sprintf("%s (%s) depends on %s", from, layerOf(from), dep))
				}
			}
		}
	}
	return out
}

// TestLayers fails when a dependency points outward: the core imports no AWS SDK and no
// adapter, services import no adapter, nothing but tests imports the test kits.
func TestLayers(t *testing.T) {
	for _, v := range violations(listPackages(t)) {
		t.Error(v)
	}
}

// publicModules are the modules users require besides longrun's own, each with the modules
// its packages, and their tests, may reach beyond the standard library. A team's worker
// requires the worker module, and a service that calls longrun the client module, so they
// weigh nothing: never longrun's module, with its emulators, OpenTelemetry and CDK.
func publicModules() map[string][]string {
	return map[string][]string{
		"worker": {module + "/worker", "github.com/aws/aws-lambda-go"},
		"client": {module + "/client",
			// SigV4 signing (client.SigV4), and the generated wire types' runtime.
			"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go", "github.com/oapi-codegen/runtime",
			"github.com/apapsch/go-jsonmerge/v2", "github.com/google/uuid",
			// Its tests: static credentials, and the contract read with kin-openapi.
			"github.com/aws/aws-sdk-go-v2/credentials", "github.com/getkin/kin-openapi", "go.yaml.in/yaml/v4",
			"github.com/go-openapi/jsonpointer", "github.com/go-openapi/swag/jsonname",
			"github.com/santhosh-tekuri/jsonschema/v6", "golang.org/x/text"},
	}
}

// beyond lists the modules that are not allowed.
func beyond(modules, allowed []string) []string {
	var out []string
	for _, m := range modules {
		if !slices.Contains(allowed, m) {
			out = append(out, m)
		}
	}
	return out
}

// Issue 24: each public module's go.mod requires only modules it may reach and replaces
// nothing, and its packages and their tests reach no other module beyond the standard
// library, built as a user's module would build them (GOWORK=off). The worker module's
// go.mod requires aws-lambda-go alone.
func TestThePublicModulesWeighNothing(t *testing.T) {
	for dir, allowed := range publicModules() {
		run := func(args ...string) []byte {
			t.Helper()
			cmd := exec.Command("go", args...)
			cmd.Dir = filepath.Join("..", dir)
			cmd.Env = append(os.Environ(), "GOWORK=off")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: go %v: %v\n%s", dir, args, err, stderr.String())
			}
			return out
		}
		var mod struct {
			Module  struct{ Path string }
			Require []struct{ Path string }
			Replace []json.RawMessage
		}
		if err := json.Unmarshal(run("mod", "edit", "-json"), &mod); err != nil {
			t.Fatal(err)
		}
		var required []string
		for _, r := range mod.Require {
			required = append(required, r.Path)
		}
		if mod.Module.Path != module+"/"+dir || len(mod.Replace) != 0 {
			t.Errorf("%s/go.mod: module %s, %d replaces: want %s/%s and none", dir, mod.Module.Path, len(mod.Replace), module, dir)
		}
		for _, m := range beyond(required, allowed) {
			t.Errorf("%s/go.mod requires %s", dir, m)
		}
		if dir == "worker" && !slices.Equal(required, []string{"github.com/aws/aws-lambda-go"}) {
			t.Errorf("worker/go.mod requires %v, want github.com/aws/aws-lambda-go alone", required)
		}
		var modules []string
		for _, m := range strings.Fields(string(run("list", "-test", "-deps", "-f", "{{if not .Standard}}{{.Module.Path}}{{end}}", "./..."))) {
			if !slices.Contains(modules, m) {
				modules = append(modules, m)
			}
		}
		if !slices.Contains(modules, module+"/"+dir) || len(modules) < 2 {
			t.Fatalf("%s: go list found the modules %v", dir, modules)
		}
		for _, m := range beyond(modules, allowed) {
			t.Errorf("the %s module reaches the module %s", dir, m)
		}
	}
}

// The check above can fail: a schema library or longrun's own module is beyond it.
func TestBeyondCatchesAForeignModule(t *testing.T) {
	got := beyond([]string{module + "/worker", "github.com/aws/aws-lambda-go", "github.com/santhosh-tekuri/jsonschema/v6", module}, publicModules()["worker"])
	if want := []string{"github.com/santhosh-tekuri/jsonschema/v6", module}; !slices.Equal(got, want) {
		t.Fatalf("beyond: %v, want %v", got, want)
	}
}

// TestLayersCatchWrongEdges proves the rules can fail, on a made-up tree with one wrong edge
// of each kind and one right one.
func TestLayersCatchWrongEdges(t *testing.T) {
	m := func(r string) string { return module + "/" + r }
	pkgs := []pkg{
		{ImportPath: m("internal/service/httpapi"), Deps: []string{m("internal/aws/dynamo")}},
		{ImportPath: m("internal/core/operation"), Deps: []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb"}},
		{ImportPath: m("internal/core/facts"), Deps: []string{"github.com/aws/aws-lambda-go/events"}},
		{ImportPath: m("internal/service/notify"), Deps: []string{"github.com/aws/smithy-go"}},
		{ImportPath: m("functions/api"), Deps: []string{m("internal/testkit/dynamotest")}},
		{ImportPath: m("internal/aws/dynamo"), Deps: []string{m("internal/local/ddblocal")}},
		{ImportPath: m("worker"), Deps: []string{m("internal/service/recorder")}},
		{ImportPath: m("construct"), Deps: []string{m("internal/local/devstack")}},
		{ImportPath: m("client"), Deps: []string{m("construct")}}, // a public package dragging in the adapters
		{ImportPath: m("functions/api"), Deps: []string{m("construct")}},
		{ImportPath: m("worker"), Deps: []string{m("local")}}, // a public package dragging in the local stack
		{ImportPath: m("local"), Deps: []string{m("internal/testkit/dynamotest")}},
		// allowed: services read Lambda's event shapes; adapters import services' ports
		{ImportPath: m("internal/service/dispatch"), Deps: []string{"github.com/aws/aws-lambda-go/events", m("internal/core/facts")}},
		{ImportPath: m("internal/aws/sqs"), Deps: []string{m("internal/service/dispatch"), "github.com/aws/aws-sdk-go-v2/service/sqs"}},
		// allowed: the construct builds from the adapters' specs; infra is made of the construct
		{ImportPath: m("construct"), Deps: []string{m("internal/aws/dynamo"), m("internal/service/notify"), m("internal/core/optype"), "github.com/aws/aws-cdk-go/awscdk/v2"}},
		{ImportPath: m("infra/stack"), Deps: []string{m("construct"), m("internal/aws/stepfunctions")}},
		{ImportPath: m("local"), Deps: []string{m("internal/local/devstack"), m("internal/core/operation")}},
	}
	got := violations(pkgs)
	if len(got) != 12 {
		t.Fatalf("want the 12 wrong edges reported, got %d:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// mapRow is one package row of docs/architecture.md's tables:
// | `path` | what it is | imports |
type mapRow struct {
	line    int
	path    string
	imports string
}

func readMap(t *testing.T) ([]string, []mapRow) {
	t.Helper()
	b, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var rows []mapRow
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		cells := strings.Split(line, "|")
		if len(cells) != 5 || strings.TrimSpace(cells[0]) != "" || strings.TrimSpace(cells[4]) != "" {
			continue
		}
		path := strings.TrimSpace(cells[1])
		if !strings.HasPrefix(path, "`") || !strings.HasSuffix(path, "`") {
			continue
		}
		rows = append(rows, mapRow{line: len(lines) - 1, path: strings.Trim(path, "`"), imports: strings.TrimSpace(cells[3])})
	}
	return lines, rows
}

// importsCell is how the map writes a package's direct imports inside the module: paths
// relative to internal/ (or to the root outside it), sorted, or "—" for none.
func importsCell(p pkg) string {
	var deps []string
	for _, imp := range p.Imports {
		if strings.HasPrefix(imp, module+"/") {
			deps = append(deps, strings.TrimPrefix(rel(imp), "internal/"))
		}
	}
	if len(deps) == 0 {
		return "—"
	}
	slices.Sort(deps)
	return strings.Join(deps, ", ")
}

// TestArchitectureMap fails when docs/architecture.md misses a package, names one that is
// not there, or gives a package imports it does not have.
func TestArchitectureMap(t *testing.T) {
	pkgs := listPackages(t)
	want := map[string]string{}
	for _, p := range pkgs {
		if r := rel(p.ImportPath); r != "internal" && r != "" {
			want[r] = importsCell(p)
		}
	}
	lines, rows := readMap(t)
	seen := map[string]bool{}
	changed := false
	for _, row := range rows {
		cell, ok := want[row.path]
		if !ok {
			t.Errorf("docs/architecture.md:%d names %s, which is not a package", row.line+1, row.path)
			continue
		}
		seen[row.path] = true
		if row.imports != cell {
			if *update {
				cells := strings.Split(lines[row.line], "|")
				cells[3] = " " + cell + " "
				lines[row.line] = strings.Join(cells, "|")
				changed = true
				continue
			}
			t.Errorf("docs/architecture.md:%d: %s imports %q, the map says %q (go test ./internal -run TestArchitectureMap -update)",
				row.line+1, row.path, cell, row.imports)
		}
	}
	var missing []string
	for path := range want {
		if !seen[path] {
			missing = append(missing, path)
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("docs/architecture.md has no row for %s (imports: %s)", m, want[m])
	}
	if changed {
		if err := os.WriteFile("../docs/architecture.md", []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Println("docs/architecture.md: imports updated")
	}
}
