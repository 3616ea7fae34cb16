package stack

import (
	"archive/zip"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
)

// architectures are the values of the context `architecture`, with what each needs: Lambda's
// architecture, the GOARCH of the release build (`make build ARCH=…`) and the ELF machine of
// its binaries.
var architectures = map[string]struct {
	lambda  func() awslambda.Architecture
	goarch  string
	machine elf.Machine
}{
	"arm64":  {awslambda.Architecture_ARM_64, "arm64", elf.EM_AARCH64},
	"x86_64": {awslambda.Architecture_X86_64, "amd64", elf.EM_X86_64},
}

func lambdaArchitecture(name string) (awslambda.Architecture, error) {
	if name == "" {
		name = "arm64"
	}
	a, ok := architectures[name]
	if !ok {
		return nil, fmt.Errorf("context architecture=%q: want arm64 (the default) or x86_64 (Go's amd64)", name)
	}
	return a.lambda(), nil
}

// CheckCode fails unless every <function>.zip in dir holds a bootstrap built for the
// architecture: Lambda would only fail at the first invocation ("exec format error").
func CheckCode(dir, architecture string) error {
	if architecture == "" {
		architecture = "arm64"
	}
	want, ok := architectures[architecture]
	if !ok {
		_, err := lambdaArchitecture(architecture)
		return err
	}
	zips, err := filepath.Glob(filepath.Join(dir, "*.zip"))
	if err != nil || len(zips) == 0 {
		return fmt.Errorf("no function zips in %s: run `make build`", dir)
	}
	for _, z := range zips {
		m, err := bootstrapMachine(z)
		if err != nil {
			return fmt.Errorf("%s: %w", z, err)
		}
		if m != want.machine {
			return fmt.Errorf("%s is built for %s, the stack's architecture is %s: run `make build ARCH=%s`",
				z, goarchOf(m), architecture, want.goarch)
		}
	}
	return nil
}

// bootstrapMachine reads the ELF machine of the zip's bootstrap.
func bootstrapMachine(zipPath string) (elf.Machine, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return 0, err
	}
	defer zr.Close()
	f, err := zr.Open("bootstrap")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var h [20]byte // e_ident (16 bytes), e_type, e_machine
	if _, err := io.ReadFull(f, h[:]); err != nil || string(h[:4]) != elf.ELFMAG || elf.Data(h[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return 0, fmt.Errorf("bootstrap is not a little-endian ELF executable")
	}
	return elf.Machine(binary.LittleEndian.Uint16(h[18:])), nil
}

func goarchOf(m elf.Machine) string {
	for _, a := range architectures {
		if a.machine == m {
			return a.goarch
		}
	}
	return m.String()
}
