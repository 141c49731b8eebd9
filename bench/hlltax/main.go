// Command hlltax measures Shortbread's high-level-language tax, as the
// Biscuit paper (OSDI'18) did: the share of non-idle kernel CPU time spent
// in garbage collection, function prologues (stack-bound checks), write
// barriers and safety checks. It classifies every instruction of the
// kernel ELF (package classify) and attributes the samples that the
// kernel's profiler dumps on the serial console (package samples) to the
// classes (package report).
//
// Usage:
//
//	go run ./bench/hlltax -kernel build/kernel.elf -log serial.log [-pprof out.pb.gz] [-md out.md]
//	go run ./bench/hlltax -kernel build/kernel.elf -static
//	go run ./bench/hlltax -kernel build/kernel.elf -disasm 'runtime\.mallocgc$'
//
// The kernel writes the dump with the command-line option bench=hlltax;
// the format is described in package samples. The profile opens with
// go tool pprof -top out.pb.gz; every sample has a class label
// (-tagfocus=class=Safety, -tags).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/report"
	"shortbread/bench/hlltax/samples"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run is the command; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hlltax", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kernel := fs.String("kernel", "build/kernel.elf", "kernel ELF the samples were taken from")
	logPath := fs.String("log", "", "serial log with hlltax-begin … hlltax-end sections (- for standard input)")
	pprofOut := fs.String("pprof", "", "write a pprof profile (gzip) of the kernel samples here")
	mdOut := fs.String("md", "", "also write the Markdown tables here")
	static := fs.Bool("static", false, "print the static instruction counts per class")
	disasm := fs.String("disasm", "", "print the classified instructions of the functions matching this regexp")
	top := fs.Int("top", 15, "functions listed per section")
	section := fs.Int("section", 0, "use only this section (from 1; 0 for all)")
	all := fs.Bool("all", false, "include idle and user samples in the profile (label mode)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: hlltax -kernel ELF (-log LOG [-pprof OUT] [-md OUT] | -static | -disasm REGEXP)\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || (*logPath == "" && !*static && *disasm == "") {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "hlltax: %v\n", err)
		return 1
	}

	m, err := classify.Load(*kernel)
	if err != nil {
		return fail(err)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(stderr, "hlltax: classify: %s\n", n)
	}
	if *static {
		printStatic(stdout, m)
	}
	if *disasm != "" {
		re, err := regexp.Compile(*disasm)
		if err != nil {
			return fail(err)
		}
		printDisasm(stdout, m, re)
	}
	if *logPath == "" {
		return 0
	}

	var secs []*samples.Section
	if *logPath == "-" {
		secs, err = samples.Parse(stdin)
	} else {
		secs, err = samples.ParseFile(*logPath)
	}
	if err != nil {
		return fail(err)
	}
	if len(secs) == 0 {
		return fail(fmt.Errorf("%s: no hlltax-begin section", *logPath))
	}
	if *section != 0 {
		if *section < 0 || *section > len(secs) {
			return fail(fmt.Errorf("-section %d: the log has %d sections", *section, len(secs)))
		}
		secs = secs[*section-1 : *section]
	}

	var md bytes.Buffer
	for i, s := range secs {
		if err := s.Check(); err != nil {
			fmt.Fprintf(stderr, "hlltax: warning: %v\n", err)
		}
		title := fmt.Sprintf("hlltax section %d of %d (log line %d)", i+1, len(secs), s.Line)
		if b := s.Meta["bench"]; b != "" {
			title += ": " + b
		}
		if err := report.Compute(m, s).WriteMarkdown(&md, title, *top); err != nil {
			return fail(err)
		}
	}
	stdout.Write(md.Bytes())
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, md.Bytes(), 0o644); err != nil {
			return fail(err)
		}
	}
	if *pprofOut != "" {
		f, err := os.Create(*pprofOut)
		if err != nil {
			return fail(err)
		}
		err = report.WriteProfile(f, m, secs, report.ProfileOptions{Binary: *kernel, IncludeIdle: *all, IncludeUser: *all})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stderr, "hlltax: wrote %s (go tool pprof -top %s)\n", *pprofOut, *pprofOut)
	}
	return 0
}

func printStatic(w io.Writer, m *classify.Map) {
	fmt.Fprintf(w, "%s: %d functions, text %#x-%#x\n\n", m.Path, len(m.Funcs), m.TextStart, m.TextEnd)
	fmt.Fprint(w, m.Static.Summary())

	var rule [classify.NumClasses]int
	machine := 0
	for _, f := range m.Funcs {
		if classify.IsMachineLayer(f.Name) {
			machine++
		} else if f.RuleMatched {
			rule[f.RuleClass]++
		}
	}
	s := m.Sites
	fmt.Fprintf(w, "\nfunctions by name rule: GC %d, Prologue %d, WriteBarrier %d, Safety %d; machine layer %d (Other)\n",
		rule[classify.GC], rule[classify.Prologue], rule[classify.WriteBarrier], rule[classify.Safety], machine)
	fmt.Fprintf(w, "sites in the other functions:\n")
	fmt.Fprintf(w, "  stack checks           %6d (morestack blocks %d)\n", s.StackChecks, s.Morestack)
	fmt.Fprintf(w, "  write-barrier tests    %6d (with a barrier path %d)\n", s.WBTests, s.WBPaths)
	fmt.Fprintf(w, "  check branches         %6d (to %d panic calls)\n", s.CheckBranch, s.PanicBlocks)
	fmt.Fprintf(w, "  nil checks             %6d\n", s.NilChecks)
	fmt.Fprintf(w, "  division fix-ups       %6d\n", s.DivFixups)
	if s.DecodeErrors > 0 {
		fmt.Fprintf(w, "  undecodable bytes      %6d\n", s.DecodeErrors)
	}

	// Where the classified instructions are, by reason.
	reasons := map[string]int{}
	for _, f := range m.Funcs {
		for _, in := range f.Insts {
			reasons[fmt.Sprintf("%-12v %v", in.Class, in.Reason)]++
		}
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "\ninstructions by class and reason:\n")
	for _, k := range keys {
		fmt.Fprintf(w, "  %-28s %8d\n", k, reasons[k])
	}
}

func printDisasm(w io.Writer, m *classify.Map, re *regexp.Regexp) {
	for _, f := range m.Funcs {
		if !re.MatchString(f.Name) {
			continue
		}
		rule := "no name rule"
		if f.RuleMatched {
			rule = "name rule: " + f.RuleClass.String()
		}
		fmt.Fprintf(w, "TEXT %s %#x-%#x (%s)\n", f.Name, f.Entry, f.End, rule)
		for _, in := range f.Insts {
			fmt.Fprintf(w, "  %#x  %-12v %-12v %-44s %s\n", in.Addr, in.Class, in.Reason, in.Text, in.Helper)
		}
	}
}
