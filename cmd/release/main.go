// Command release builds every Lambda function for AWS (linux/arm64 by default,
// provided.al2023, handler "bootstrap", -tags lambda.norpc, trimmed and stripped) and zips
// each into <out>/<function>.zip for CDK, printing each binary's and zip's size. It builds
// from longrun's source wherever the working directory's module has it (this checkout, a
// replace, or the module cache), so a team's CDK app gets longrun's functions with
// `go run github.com/longrun-dev/longrun/cmd/release -out dist` in its own module.
package main

import (
	"archive/zip"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/longrun-dev/longrun/internal/local/devstack"
)

func main() {
	out := flag.String("out", "dist", "output folder")
	arch := flag.String("arch", "arm64", "arm64 (Graviton, the default) or amd64 (x86_64, e.g. for LocalStack on an x86 host)")
	flag.Parse()
	if *arch != "arm64" && *arch != "amd64" {
		fmt.Fprintln(os.Stderr, "release: -arch must be arm64 or amd64")
		os.Exit(2)
	}
	if err := run(*out, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(out, arch string) error {
	src, err := devstack.SourceRoot(context.Background())
	if err != nil {
		return err
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	names, err := functions(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	fmt.Printf("%-22s %12s %12s\n", "function", "binary", "zip")
	for _, name := range names {
		dir := filepath.Join(out, name)
		bin := filepath.Join(dir, "bootstrap")
		start := time.Now()
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./functions/"+name)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s: %w", name, err)
		}
		zipPath := filepath.Join(out, name+".zip")
		if err := zipBootstrap(bin, zipPath); err != nil {
			return fmt.Errorf("zip %s: %w", name, err)
		}
		bs, _ := os.Stat(bin)
		zs, _ := os.Stat(zipPath)
		fmt.Printf("%-22s %9.1f MB %9.1f MB   (%.1fs)\n", name, mb(bs.Size()), mb(zs.Size()), time.Since(start).Seconds())
	}
	return nil
}

// functions lists the functions/<name> folders of longrun's source src.
func functions(src string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(src, "functions"))
	if err != nil {
		return nil, fmt.Errorf("longrun's source at %s: %w", src, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// zipBootstrap writes a zip holding bootstrap, executable, as Lambda's custom runtime needs.
func zipBootstrap(bin, zipPath string) error {
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	h.Modified = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // fixed, so equal builds zip equal
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := io.Copy(w, src); err != nil {
		return err
	}
	return zw.Close()
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
