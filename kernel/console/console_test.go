package console

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func testCommands(calls *[]string) map[string]Command {
	return map[string]Command{
		"echo": {Help: "print arguments", Run: func(w io.Writer, args []string) error {
			*calls = append(*calls, strings.Join(args, ","))
			_, err := io.WriteString(w, strings.Join(args, " ")+"\n")
			return err
		}},
		"fail": {Help: "always fails", Run: func(w io.Writer, args []string) error {
			return errors.New("broken")
		}},
	}
}

func TestExec(t *testing.T) {
	var calls []string
	cmds := testCommands(&calls)
	var out bytes.Buffer
	Exec(&out, "  echo a   b ", cmds)
	Exec(&out, "nosuch x", cmds)
	Exec(&out, "fail", cmds)
	Exec(&out, "   ", cmds)
	Exec(&out, "help", cmds)
	if len(calls) != 1 || calls[0] != "a,b" {
		t.Fatalf("echo calls %q", calls)
	}
	s := out.String()
	for _, want := range []string{"a b\n", "nosuch: unknown command", "fail: broken", "echo", "always fails"} {
		if !strings.Contains(s, want) {
			t.Errorf("output %q lacks %q", s, want)
		}
	}
}

func TestRunLineEditing(t *testing.T) {
	var calls []string
	cmds := testCommands(&calls)
	var out bytes.Buffer
	// "ecx" + backspace + "ho hi" + CR, then a control byte that must be
	// ignored, then LF.
	Run(strings.NewReader("ecx\x7fho hi\r\x01echo z\n"), &out, cmds)
	if len(calls) != 2 || calls[0] != "hi" || calls[1] != "z" {
		t.Fatalf("calls %q", calls)
	}
	if !strings.Contains(out.String(), "\b \b") {
		t.Errorf("backspace not echoed as erase: %q", out.String())
	}
}
