// Empty: its presence lets machine.go declare functions without bodies,
// which the runtime patch set provides through go:linkname.
