// Command stress runs the concurrency tests many times in a row on a loaded machine, and
// says how often each passed: `make stress` (issue 21). A test that fails under load is a
// defect, so this is how the suite's "never flakes" is measured rather than hoped for.
//
// Each package's concurrency tests run as `make test` runs them (the race detector but for
// the e2e suite), one go test per package per round, while -load goroutines per core spin,
// so the tests get what a busy CI machine leaves them. A line after each round says where
// the count stands; the last line is "stress: N tests, M runs each, K failed runs", and the
// exit status is 1 when any run failed.
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
// races (signals' among them: a signal racing a wait, a cancel, another signal, a timeout,
// a callback's replay; and an operator's retry racing a late result and a cancel), and the
// whole e2e suite.
var suites = []suite{
	{pkg: "./internal/aws/dynamo", race: true,
		run: "UnderConflicts|SlowStore|SlowTransaction|GivesUp|TakenOnceInOrder|WritesEverythingOnce|CallerQuota|QuotaWeight"},
	{pkg: "./internal/service/httpapi", race: true,
		run: "UnderConflicts|OnASlowStore|Concurrent|QuotaExceeded|TargetBusyAndQuota|ConflictIsRetried|CountsConflicts"},
	{pkg: "./internal/service/recorder", race: true,
		run: "Racing|Twice|HandBacks|AnswersOnce|SlowSteps|WakeTheWaitOnce|DeliveredOnce|DoesNotEndTheRetry"},
	{pkg: "./internal/service/reconcile", race: true,
		run: "Drains|DispatchedOnce|CancelDuringAWait"},
	{pkg: "./internal/service/dispatch", race: true,
		run: "Racing|Once|AwaitedSignalWakes"},
	// The whole e2e suite: its concurrency tests, and every test that runs in parallel
	// with the others (main_test.go), since a stack shared under load is a race of its own.
	{pkg: "./internal/e2e", parallel: 8, run: "."},
}

type suite struct {
	pkg      string
	run      string
	race     bool
	parallel int
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
	var chosen []suite
	for _, s := range suites {
		if s.chosen(*only) {
			chosen = append(chosen, s)
		}
	}
	// Round after round, each suite once a round, so that a run stopped early has as many
	// rounds of every package; each round's line says where the count stands.
	res := make([]map[string]*tally, len(chosen))
	for i := range res {
		res[i] = map[string]*tally{}
	}
	start := time.Now()
	for round := 1; round <= *count; round++ {
		for i, s := range chosen {
			if err := s.goTest(res[i]); err != nil {
				fmt.Fprintln(os.Stderr, "stress:", s.pkg+":", err)
				os.Exit(2)
			}
		}
		fmt.Printf("stress: round %d of %d done after %s, %d failed runs so far\n", round, *count,
			time.Since(start).Round(time.Second), failures(res))
	}
	tests := 0
	for i, s := range chosen {
		names := make([]string, 0, len(res[i]))
		for name, r := range res[i] {
			if r.pass+r.fail > 0 { // not only a helper's name that matched
				names = append(names, name)
			}
		}
		sort.Strings(names)
		fmt.Printf("%s (load %d per core)\n", s.pkg, *load)
		for _, name := range names {
			r := res[i][name]
			fmt.Printf("  %-60s passed %d of %d\n", name, r.pass, r.pass+r.fail)
			tests++
		}
	}
	failed := failures(res)
	fmt.Printf("stress: %d tests, %d runs each, %d failed runs\n", tests, *count, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

func failures(res []map[string]*tally) int {
	n := 0
	for _, m := range res {
		for _, r := range m {
			n += r.fail
		}
	}
	return n
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

// goTest runs the suite's tests once, in a go test of their own (so the package starts a
// DynamoDB Local or a stack of its own, as in CI: one emulator under many rounds would slow
// down with what they wrote, and the e2e suite's tests name fixed targets that an operation
// left outcome_unknown would hold), and adds each top-level test's end to res. A failure's
// output goes to stderr as it comes.
func (s suite) goTest(res map[string]*tally) error {
	args := []string{"test", "-json", "-count", "1", "-timeout", "1h", "-run", "^Test.*(" + s.run + ")"}
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
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	ran := 0
	readErr := tallied(out, res, &ran)
	waitErr := cmd.Wait()
	if readErr != nil {
		return readErr
	}
	if ran == 0 {
		return fmt.Errorf("no test ran (%v)", waitErr)
	}
	return nil
}

// tallied reads go test's JSON events and adds each top-level test's ends to res, printing
// the output of a run that failed.
func tallied(r io.Reader, res map[string]*tally, ran *int) error {
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
			*ran++
			delete(output, e.Test)
		case "fail":
			t.fail++
			*ran++
			fmt.Fprintf(os.Stderr, "--- FAIL %s:\n%s", e.Test, strings.Join(output[e.Test], ""))
			delete(output, e.Test)
		}
	}
	return sc.Err()
}
