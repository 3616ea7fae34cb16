package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dependencyFree are the npm packages that may be installed by version without a lockfile:
// each is one bundled package with no dependencies, so its version pins its whole tree.
var dependencyFree = []string{"@redocly/cli"}

// npmCommand finds an npm or npx command in a line of shell: the program, and what follows it.
var npmCommand = regexp.MustCompile(`(?:^|[\s;&|(])(npx|npm)\s+(.*)`)

// Issue #20, item 8: what the Makefiles and scripts fetch from npm runs on developers'
// machines and in CI, so it must be what was reviewed. Each node tool is installed with
// `npm ci` from a committed package-lock.json (its whole tree pinned, every package's digest
// checked), or, for a package without dependencies, by exact version; always with
// --ignore-scripts, so no package runs code as it installs. `npx` is refused: it fetches and
// runs a package at run time, with no lockfile and its scripts on.
func TestNodeToolsArePinnedAndRunNoScripts(t *testing.T) {
	files := trackedFiles(t, func(path string) bool {
		return filepath.Base(path) == "Makefile" || strings.HasSuffix(path, ".sh")
	})
	if !slices.Contains(files, "Makefile") {
		t.Fatalf("no Makefile among %v", files)
	}
	for _, file := range files {
		for _, line := range shellLines(t, file) {
			m := npmCommand.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if m[1] == "npx" {
				t.Errorf("%s: %q runs npx: install the tool with npm ci from a committed lockfile instead", file, line)
				continue
			}
			words := strings.Fields(makeCall.ReplaceAllString(m[2], "$$(…)"))
			if len(words) == 0 {
				continue
			}
			switch words[0] {
			case "ci":
			case "install", "i", "add":
				for _, spec := range packageSpecs(words[1:]) {
					if !exactlyDependencyFree(spec) {
						t.Errorf("%s: %q installs %s without a lockfile: use npm ci from a committed package-lock.json", file, line, spec)
					}
				}
			case "exec", "x":
				t.Errorf("%s: %q runs npm exec, which fetches a package at run time", file, line)
				continue
			default:
				continue // npm pack, npm view, …: nothing is installed or run
			}
			if !slices.Contains(words, "--ignore-scripts") {
				t.Errorf("%s: %q installs without --ignore-scripts", file, line)
			}
		}
	}
}

// packageSpecs is the packages an npm install's arguments name: every word that is not an
// option or an option's value.
func packageSpecs(args []string) []string {
	var specs []string
	for i := 0; i < len(args); i++ {
		switch w := args[i]; {
		case w == "--cache" || w == "--prefix" || w == "--registry":
			i++ // its value
		case strings.HasPrefix(w, "-") || strings.ContainsAny(w, "<>|&;"):
		default:
			specs = append(specs, w)
		}
	}
	return specs
}

// exactlyDependencyFree reports whether spec is a package of dependencyFree at an exact
// version (name@1.2.3).
func exactlyDependencyFree(spec string) bool {
	at := strings.LastIndex(spec, "@")
	if at <= 0 {
		return false
	}
	return slices.Contains(dependencyFree, spec[:at]) && regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(spec[at+1:])
}

// Every committed lockfile pins each package by its digest, so npm ci refuses anything else.
func TestLockfilesPinEveryPackage(t *testing.T) {
	for _, file := range trackedFiles(t, func(path string) bool { return filepath.Base(path) == "package-lock.json" }) {
		data, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		var lock struct {
			LockfileVersion int `json:"lockfileVersion"`
			Packages        map[string]struct {
				Version   string `json:"version"`
				Resolved  string `json:"resolved"`
				Integrity string `json:"integrity"`
				Link      bool   `json:"link"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(data, &lock); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if lock.LockfileVersion < 2 || len(lock.Packages) < 2 {
			t.Errorf("%s: lockfileVersion %d with %d packages; want a lockfile of npm 7 or later that lists the tree", file, lock.LockfileVersion, len(lock.Packages))
		}
		for name, p := range lock.Packages {
			if name == "" || p.Link {
				continue
			}
			if !strings.HasPrefix(p.Integrity, "sha512-") || p.Resolved != "" && !strings.HasPrefix(p.Resolved, "https://registry.npmjs.org/") {
				t.Errorf("%s: %s %s is not pinned by a sha512 digest from the npm registry (%q, %q)", file, name, p.Version, p.Integrity, p.Resolved)
			}
		}
	}
}

// trackedFiles lists the repository's tracked files that keep says to keep.
func trackedFiles(t *testing.T, keep func(string) bool) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if keep(f) {
			files = append(files, f)
		}
	}
	return files
}

// makeCall is a call of a make function ($(abspath …), $(patsubst …)): one word, whatever its
// arguments.
var makeCall = regexp.MustCompile(`\$\([a-z]+ [^()]*\)`)

// makeVariable is a simple assignment in a Makefile (NAME := value, NAME ?= value, …).
var makeVariable = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*[:?]?=\s*(.*)$`)

// shellLines is file's lines as a shell (or make) reads them: continuations joined,
// comments left out, and in a Makefile the $(NAME)s of its simple assignments expanded.
func shellLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if filepath.Base(file) != "Makefile" {
		return lines
	}
	vars := map[string]string{}
	for _, line := range lines {
		if m := makeVariable.FindStringSubmatch(line); m != nil {
			vars[m[1]] = m[2]
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for i, line := range lines {
		for range 5 { // variables made of variables
			line = ref.ReplaceAllStringFunc(line, func(r string) string {
				if v, ok := vars[r[2:len(r)-1]]; ok {
					return v
				}
				return r
			})
		}
		lines[i] = line
	}
	return lines
}
