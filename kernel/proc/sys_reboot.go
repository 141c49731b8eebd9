package proc

// reboot(2): power off or restart the machine. The kernel sets PowerOff
// and Restart (the power package needs the ACPI tables it holds).
var (
	PowerOff func()
	Restart  func()
)

// Linux's reboot magic numbers and commands (include/uapi/linux/reboot.h).
const (
	rebootMagic1   = 0xfee1dead
	rebootPowerOff = 0x4321fedc
	rebootHalt     = 0xcdef0123
	rebootRestart  = 0x01234567
	rebootCADOn    = 0x89abcdef
	rebootCADOff   = 0
)

var rebootMagic2 = [...]uint32{672274793, 85072278, 369367448, 537993216}

func sysReboot(t *Thread, a *[6]uint64) (int64, bool) {
	if !t.creds().privileged() { // CAP_SYS_BOOT
		return -ePERM, false
	}
	magic2 := false
	for _, m := range rebootMagic2 {
		magic2 = magic2 || uint32(a[1]) == m
	}
	if uint32(a[0]) != rebootMagic1 || !magic2 {
		return -eINVAL, false
	}
	switch uint32(a[2]) {
	case rebootCADOn, rebootCADOff:
		// Ctrl-Alt-Del has no meaning on a serial console.
		return 0, false
	case rebootPowerOff, rebootHalt:
		// Halting would leave a machine that does nothing: power off.
		Log.Infof("proc: %v: reboot: power off", t.Proc)
		if PowerOff != nil {
			PowerOff()
		}
	case rebootRestart:
		Log.Infof("proc: %v: reboot: restart", t.Proc)
		if Restart != nil {
			Restart()
		}
	}
	return -eINVAL, false
}
