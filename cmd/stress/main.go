// Command stress runs the concurrency tests many times in a row on a loaded machine, and
// says how often each passed: `make stress` (issue 21). A test that fails under load is a
// defect, so this is how the suite's "never flakes" is measured rather than hoped for.
//
// Each package's concurrency tests run as `make test` runs them (the race detector but for
// the e2e suite) with -count, while -load goroutines per core spin, so the tests get what a
// busy CI machine leaves them. The last line is "stress: N tests, M runs each, K failed runs"
// and the exit status is 1 when any run failed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"
)

// suites are the concurrency tests, by package: the racers, quotas and appends under
// DynamoDB's transaction conflicts and on a slow store, the recorder's and the reconciler's
// races, and the whole e2e suite.
var suites = []suite{
	{pkg: "./internal/aws/dynamo", race: true,
		run: "UnderConflicts|SlowStore|SlowTransaction|GivesUp|TakenOnceInOrder|WritesEverythingOnce|CallerQuota|QuotaWeight"},
	{pkg: "./internal/service/httpapi", race: true,
		run: "UnderConflicts|OnASlowStore|Concurrent|QuotaExceeded|TargetBusyAndQuota|ConflictIsRetried|CountsConflicts"},
	{pkg: "./internal/service/recorder", race: true,
		run: "Racing|Twice|HandBacks|AnswersOnce|SlowSteps"},
	{pkg: "./internal/service/reconcile", race: true,
		run: "Drains|DispatchedOnce|CancelDuringAWait"},
	{pkg: "./internal/service/dispatch", race: true,
		run: "Racing|Once"},
	// The whole e2e suite: its concurrency tests, and every test that runs in parallel
	// with the others (main_test.go), since a stack shared under load is a race of its own.
	// Each run on a stack of its own, as CI runs it: the suite's tests name fixed targets, and
	// an operation a run leaves outcome_unknown holds its target for the next.
	{pkg: "./internal/e2e", parallel: 8, run: ".", fresh: true},
}

type suite struct {
	pkg      string
	run      string
	race     bool
	parallel int
	fresh    bool // one go test per run, rather than one with -count
}

func main() {
	count := flag.Int("count", 20, "runs of each test")
	load := flag.Int("load", 1, "busy goroutines per core beside the tests (0: none)")
	only := flag.String("pkg", "", "only the suites of the packages whose paths contain one of these (comma-separated)")
	flag.Parse()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for range *load * runtime.NumCPU() {
		go spin(ctx)
	}
	failed, tests := 0, 0
	for _, s := range suites {
		if !s.chosen(*only) {
			continue
		}
		start := time.Now()
		res, err := s.stress(*count)
		if err != nil {
			fmt.Fprintln(os.Stderr, "stress:", s.pkg+":", err)
			os.Exit(2)
		}
		names := make([]string, 0, len(res))
		for name := range res {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Printf("%s (%s, load %d per core)\n", s.pkg, time.Since(start).Round(time.Second), *load)
		for _, name := range names {
			r := res[name]
			if r.pass+r.fail == 0 {
				continue // matched, but only a helper's name
			}
			fmt.Printf("  %-60s passed %d of %d\n", name, r.pass, r.pass+r.fail)
			failed += r.fail
			tests++
		}
	}
	fmt.Printf("stress: %d tests, %d runs each, %d failed runs\n", tests, *count, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// chosen says whether the -pkg flag's list names the suite's package ("" names them all).
func (s suite) chosen(only string) bool {
	if only == "" {
		return true
	}
	for _, part := range strings.Split(only, ",") {
		if part != "" && strings.Contains(s.pkg, part) {
			return true
		}
	}
	return false
}

// spin keeps one core busy until ctx ends: the load a `stress` process per core would add.
func spin(ctx context.Context) {
	runtime.LockOSThread()
	for n := 0; ; n++ {
		if n%1_000_000 == 0 && ctx.Err() != nil {
			return
		}
	}
}

type tally struct{ pass, fail int }

// stress runs the suite's tests count times, in one go test (so a package's DynamoDB Local
// or stack starts once) or, for a fresh suite, in one go test each, and tallies each
// top-level test's passes and failures from its JSON events. The failures' output goes to
// stderr as it comes.
func (s suite) stress(count int) (map[string]*tally, error) {
	if !s.fresh {
		return s.goTest(count, map[string]*tally{})
	}
	res := map[string]*tally{}
	for range count {
		if _, err := s.goTest(1, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// goTest runs the suite's tests count times in one go test, adding to res.
func (s suite) goTest(count int, res map[string]*tally) (map[string]*tally, error) {
	args := []string{"test", "-json", "-count", fmt.Sprint(count), "-timeout", "3h", "-run", "^Test.*(" + s.run + ")"}
	if s.race {
		args = append(args, "-race")
	}
	if s.parallel > 0 {
		args = append(args, "-parallel", fmt.Sprint(s.parallel))
	}
	cmd := exec.Command("go", append(args, s.pkg)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	before := len(res)
	readErr := tallied(out, res)
	waitErr := cmd.Wait()
	if readErr != nil {
		return nil, readErr
	}
	if len(res) == before && before == 0 {
		return nil, fmt.Errorf("no test ran (%v)", waitErr)
	}
	return res, nil
}

// tallied reads go test's JSON events and adds each top-level test's ends to res, printing
// the output of a run that failed.
func tallied(r io.Reader, res map[string]*tally) error {
	output := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" || strings.Contains(e.Test, "/") {
			continue
		}
		t := res[e.Test]
		if t == nil {
			t = &tally{}
			res[e.Test] = t
		}
		switch e.Action {
		case "output":
			output[e.Test] = append(output[e.Test], e.Output)
		case "pass":
			t.pass++
			delete(output, e.Test)
		case "fail":
			t.fail++
			fmt.Fprintf(os.Stderr, "--- FAIL %s:\n%s", e.Test, strings.Join(output[e.Test], ""))
			delete(output, e.Test)
		}
	}
	return sc.Err()
}
