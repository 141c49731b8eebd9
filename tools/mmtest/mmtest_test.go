package mmtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sources are the machine-layer files under test, in runtime-patches.
var sources = []string{"sb_frames.go", "sb_mm.go"}

const buildLine = "//go:build shortbread"

var packageRuntime = regexp.MustCompile(`(?m)^package runtime$`)

// simFile turns a machine-layer file into a file of package sim: the build
// constraint on its first line goes, package runtime becomes package sim,
// and nothing else changes.
func simFile(src []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(src, []byte(buildLine+"\n"))
	if !ok {
		return nil, fmt.Errorf("does not start with %q", buildLine)
	}
	loc := packageRuntime.FindIndex(rest)
	if loc == nil {
		return nil, errors.New(`no "package runtime" clause`)
	}
	return slices.Concat(rest[:loc[0]], []byte("package sim"), rest[loc[1]:]), nil
}

// TestSimulatedMachine builds the real sb_frames.go and sb_mm.go with the
// shim and the simulation tests in a temporary module and runs them.
func TestSimulatedMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a nested module")
	}
	goCmd, err := exec.LookPath("go") // go test puts its own GOROOT/bin first
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range sources {
		src, err := os.ReadFile(filepath.Join("..", "..", "runtime-patches", name))
		if err != nil {
			t.Fatal(err)
		}
		out, err := simFile(src)
		if err != nil {
			t.Fatalf("runtime-patches/%s: %v", name, err)
		}
		write(name, out)
	}
	for name, from := range map[string]string{
		"shim.go":     "shim.go.txt",
		"sim_test.go": "sim_test.go.txt",
	} {
		data, err := os.ReadFile(filepath.Join("testdata", from))
		if err != nil {
			t.Fatal(err)
		}
		write(name, data)
	}
	write("go.mod", []byte("module sim\n\ngo 1.26\n"))

	args := []string{"test", "-count=1", "-timeout=2m"}
	if testing.Verbose() {
		args = append(args, "-v")
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = dir
	// The nested module has no dependencies: never switch toolchains or
	// reach the network for it, whatever the caller's settings.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off", "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err = cmd.Run()
	if err != nil {
		t.Fatalf("simulation tests of runtime-patches/%s failed (%v):\n%s", strings.Join(sources, ", "), err, out.Bytes())
	}
	if testing.Verbose() {
		t.Logf("simulation tests:\n%s", out.Bytes())
	}
}

func TestSimFile(t *testing.T) {
	src := "//go:build shortbread\n\n// Doc.\n\npackage runtime\n\nimport \"unsafe\"\n"
	got, err := simFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n// Doc.\n\npackage sim\n\nimport \"unsafe\"\n"; string(got) != want {
		t.Errorf("simFile = %q, want %q", got, want)
	}
	for _, bad := range []string{"package runtime\n", "//go:build shortbread\npackage main\n"} {
		if _, err := simFile([]byte(bad)); err == nil {
			t.Errorf("simFile(%q) succeeded", bad)
		}
	}
}
