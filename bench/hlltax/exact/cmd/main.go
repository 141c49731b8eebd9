// Command cmd prints the exact high-level-language tax of a kernel run
// under QEMU TCG from the per-instruction counts of the TCG plugin
// tools/tcgcount/pccount.c (package exact), next to the sampled shares of
// the same run when given its serial log.
//
// Usage:
//
//	go run ./bench/hlltax/exact/cmd -kernel build/kernel.elf -plugin-args
//	go run ./bench/hlltax/exact/cmd -kernel build/kernel.elf -counts FILE.window [-whole FILE] [-log serial.log] [-md out.md]
//
// -plugin-args prints the plugin's arguments for the kernel (its
// executable segment and the window markers) without out=.
// tools/tcgcount/hlltax-exact.sh does the whole run.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/exact"
	"shortbread/bench/hlltax/report"
	"shortbread/bench/hlltax/samples"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kernel := fs.String("kernel", "build/kernel.elf", "kernel ELF the counts were taken from")
	counts := fs.String("counts", "", "counts file of the plugin (the .window file for the sampled window)")
	whole := fs.String("whole", "", "counts file of the whole run, for a column of its shares")
	logPath := fs.String("log", "", "serial log of the same run: print the sampled shares beside the exact ones")
	section := fs.Int("section", 1, "hlltax section of the log to compare with (from 1)")
	top := fs.Int("top", 15, "functions listed")
	mdOut := fs.String("md", "", "also write the Markdown here")
	title := fs.String("title", "", "heading of the table")
	pluginArgs := fs.Bool("plugin-args", false, "print the plugin arguments for the kernel (start, end, on, off) and exit")
	on := fs.String("on", exact.DefaultOn, "with -plugin-args: function whose entry opens the window (empty: no window)")
	off := fs.String("off", exact.DefaultOff, "with -plugin-args: function whose entry closes the window")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: exact -kernel ELF (-plugin-args | -counts FILE [-whole FILE] [-log LOG] [-md OUT])\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || (*counts == "" && !*pluginArgs) {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "exact: %v\n", err)
		return 1
	}
	if *pluginArgs {
		o := *off
		if *on == "" {
			o = ""
		}
		c, err := exact.Config(*kernel, *on, o)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintln(stdout, c.Args())
		return 0
	}

	m, err := classify.Load(*kernel)
	if err != nil {
		return fail(err)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(stderr, "exact: classify: %s\n", n)
	}
	cs, err := exact.ReadFile(*counts)
	if err != nil {
		return fail(err)
	}
	if len(cs) == 0 {
		return fail(fmt.Errorf("%s: no counts", *counts))
	}
	t := exact.Compute(m, cs, exact.Options{})
	var cmp exact.Compare
	if *whole != "" {
		wc, err := exact.ReadFile(*whole)
		if err != nil {
			return fail(err)
		}
		cmp.Whole = exact.Compute(m, wc, exact.Options{})
	}
	var note string
	if *logPath != "" {
		secs, err := samples.ParseFile(*logPath)
		if err != nil {
			return fail(err)
		}
		if *section < 1 || *section > len(secs) {
			return fail(fmt.Errorf("%s: -section %d: the log has %d hlltax sections", *logPath, *section, len(secs)))
		}
		sec := secs[*section-1]
		if err := sec.Check(); err != nil {
			fmt.Fprintf(stderr, "exact: warning: %v\n", err)
		}
		cmp.Sampled = report.Compute(m, sec)
		cmp.Duplicates = exact.Duplicates(sec)
		if ns := sec.NS(); ns > 0 {
			note = fmt.Sprintf("Window check: the sampled window lasted %d ns of guest time; the counts hold %d instruction "+
				"executions (%s of it). Under -icount shift=0 one guest instruction takes 1 ns, so the two agree when the "+
				"counts are of the sampled window and the guest ran kernel code only.\n\n",
				ns, t.Total, strconv.FormatFloat(100*float64(t.Total)/float64(ns), 'f', 3, 64)+"%")
		}
	}
	if *title == "" {
		*title = "Exact high-level-language tax (QEMU TCG instruction counts)"
	}
	var md bytes.Buffer
	if err := t.WriteMarkdown(&md, *title, cmp, *top); err != nil {
		return fail(err)
	}
	md.WriteString(note)
	stdout.Write(md.Bytes())
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, md.Bytes(), 0o644); err != nil {
			return fail(err)
		}
	}
	return 0
}
