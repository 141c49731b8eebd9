// Command systable writes docs/syscalls.md: every Linux x86-64 system
// call with what Shortbread does for it (supported, partial with what is
// missing, unsupported with why, or missing), from the system-call table
// in kernel/proc (the map literals of Entry values registered in init
// functions) and kernel/proc/support.go's notes. Linux's names and
// numbers come from the host's <asm/unistd_64.h>.
//
// usage: go run ./tools/systable [-o docs/syscalls.md]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Call is one table entry.
type Call struct {
	No      int
	Name    string
	Handler string
}

// Note is a support note.
type Note struct {
	Level string // "supported" (conditions not tested, and why), "partial" or "unsupported"
	Text  string
}

const unistd = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"

func main() {
	out := flag.String("o", "docs/syscalls.md", "where to write the document")
	flag.Parse()
	calls, notes, err := load("kernel/proc")
	if err != nil {
		fail(err)
	}
	linux, err := linuxCalls(unistd)
	if err != nil {
		fail(err)
	}
	if err := check(calls, notes); err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, []byte(render(calls, notes, linux)), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "systable:", err)
	os.Exit(1)
}

// load parses the package's files for the table's map literals and the
// supportNotes map.
func load(dir string) ([]Call, map[string]Note, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	var calls []Call
	notes := map[string]Note{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			mt, ok := cl.Type.(*ast.MapType)
			if !ok {
				return true
			}
			switch v := mt.Value.(type) {
			case *ast.Ident:
				switch v.Name {
				case "Entry":
					calls = append(calls, tableEntries(cl)...)
				case "supportNote":
					for k, n := range noteEntries(cl) {
						notes[k] = n
					}
				}
			}
			return true
		})
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].No < calls[j].No })
	return calls, notes, nil
}

func tableEntries(cl *ast.CompositeLit) []Call {
	var out []Call
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		k, ok := kv.Key.(*ast.BasicLit)
		v, ok2 := kv.Value.(*ast.CompositeLit)
		if !ok || !ok2 || len(v.Elts) != 2 {
			continue
		}
		no, err := strconv.Atoi(k.Value)
		name, ok3 := v.Elts[0].(*ast.BasicLit)
		fn, ok4 := v.Elts[1].(*ast.Ident)
		if err != nil || !ok3 || !ok4 {
			continue
		}
		s, _ := strconv.Unquote(name.Value)
		out = append(out, Call{No: no, Name: s, Handler: fn.Name})
	}
	return out
}

func noteEntries(cl *ast.CompositeLit) map[string]Note {
	out := map[string]Note{}
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		k, ok := kv.Key.(*ast.BasicLit)
		v, ok2 := kv.Value.(*ast.CompositeLit)
		if !ok || !ok2 || len(v.Elts) != 2 {
			continue
		}
		name, _ := strconv.Unquote(k.Value)
		level, _ := v.Elts[0].(*ast.Ident)
		text, _ := v.Elts[1].(*ast.BasicLit)
		if level == nil || text == nil {
			continue
		}
		s, _ := strconv.Unquote(text.Value)
		out[name] = Note{Level: level.Name, Text: s}
	}
	return out
}

// check finds notes for calls not in the table, numbers given twice,
// unsupported calls whose handler is not the ENOSYS one, and the
// converse.
func check(calls []Call, notes map[string]Note) error {
	byName := map[string]Call{}
	seen := map[int]string{}
	for _, c := range calls {
		if prev, ok := seen[c.No]; ok {
			return fmt.Errorf("system call %d is in the table twice (%s, %s)", c.No, prev, c.Name)
		}
		seen[c.No] = c.Name
		byName[c.Name] = c
	}
	for name, n := range notes {
		c, ok := byName[name]
		if !ok {
			return fmt.Errorf("support note for %q, which is not in the table", name)
		}
		if n.Level != "supported" && n.Level != "partial" && n.Level != "unsupported" {
			return fmt.Errorf("support note for %q: level %q", name, n.Level)
		}
		if (n.Level == "unsupported") != (c.Handler == "sysNosys") {
			return fmt.Errorf("%q: note says %s but its handler is %s", name, n.Level, c.Handler)
		}
	}
	for _, c := range calls {
		if c.Handler == "sysNosys" && notes[c.Name].Level != "unsupported" {
			return fmt.Errorf("%q answers ENOSYS on purpose but has no unsupported note saying why", c.Name)
		}
	}
	return nil
}

var nrLine = regexp.MustCompile(`^#define __NR_(\w+) (\d+)$`)

// linuxCalls reads Linux's numbers and names.
func linuxCalls(path string) (map[int]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := nrLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			n, _ := strconv.Atoi(m[2])
			out[n] = m[1]
		}
	}
	return out, sc.Err()
}

func render(calls []Call, notes map[string]Note, linux map[int]string) string {
	var b strings.Builder
	b.WriteString("# System calls\n\n")
	b.WriteString("Generated by `go run ./tools/systable` from the table in `kernel/proc` and the notes in `kernel/proc/support.go`; `go test ./tools/systable` fails when this file is stale. ")
	b.WriteString("*supported*: as Linux documents it, checked by the user-space suite on both kernels where a test exists; *partial*: what is missing; *unsupported*: ENOSYS on purpose, and why; a note on a supported call names the errors its Linux man page documents that the suite cannot make happen, and why; *missing*: not implemented (ENOSYS, logged once per number).\n\n")
	counts := map[string]int{}
	status := func(c Call) (string, string) {
		if n, ok := notes[c.Name]; ok {
			return n.Level, n.Text
		}
		return "supported", ""
	}
	inTable := map[int]Call{}
	for _, c := range calls {
		inTable[c.No] = c
		s, _ := status(c)
		counts[s]++
	}
	missing := 0
	for n := range linux {
		if _, ok := inTable[n]; !ok {
			missing++
		}
	}
	fmt.Fprintf(&b, "%d in the table: %d supported, %d partial, %d unsupported; %d of Linux's %d missing.\n\n",
		len(calls), counts["supported"], counts["partial"], counts["unsupported"], missing, len(linux))
	b.WriteString("| no | call | status | notes |\n|---|---|---|---|\n")
	nos := map[int]bool{}
	for n := range linux {
		nos[n] = true
	}
	for n := range inTable {
		nos[n] = true
	}
	var all []int
	for n := range nos {
		all = append(all, n)
	}
	sort.Ints(all)
	for _, n := range all {
		c, ok := inTable[n]
		if !ok {
			fmt.Fprintf(&b, "| %d | %s | missing | |\n", n, linux[n])
			continue
		}
		s, text := status(c)
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", n, c.Name, s, text)
	}
	return b.String()
}
