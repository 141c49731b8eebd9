// Package console is the kernel's own command console, used until user
// programs (a shell) take the console over. It reads bytes from any
// reader (the serial driver's, in the kernel) and writes to any writer.
package console

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Command is one console command.
type Command struct {
	Help string
	Run  func(w io.Writer, args []string) error
}

// Run reads lines from in, echoing what is typed, and runs commands until
// in ends.
func Run(in io.Reader, out io.Writer, cmds map[string]Command) {
	r := bufio.NewReader(in)
	var line []byte
	fmt.Fprint(out, "shortbread> ")
	for {
		c, err := r.ReadByte()
		if err != nil {
			return
		}
		switch c {
		case '\r', '\n':
			fmt.Fprint(out, "\n")
			Exec(out, string(line), cmds)
			line = line[:0]
			fmt.Fprint(out, "shortbread> ")
		case 0x7f, 0x08:
			if len(line) > 0 {
				line = line[:len(line)-1]
				fmt.Fprint(out, "\b \b")
			}
		default:
			if c >= 0x20 && c < 0x7f {
				line = append(line, c)
				out.Write([]byte{c})
			}
		}
	}
}

// Exec runs one command line.
func Exec(out io.Writer, line string, cmds map[string]Command) {
	args := strings.Fields(line)
	if len(args) == 0 {
		return
	}
	if args[0] == "help" {
		names := make([]string, 0, len(cmds))
		for n := range cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(out, "  %-10s %s\n", n, cmds[n].Help)
		}
		return
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(out, "%s: unknown command (try help)\n", args[0])
		return
	}
	if err := c.Run(out, args[1:]); err != nil {
		fmt.Fprintf(out, "%s: %v\n", args[0], err)
	}
}
