// Package sandbox confines and contains the processes git-norma starts for a step: agents and
// check commands. git-norma never restricts itself; it starts a launcher — its own binary
// re-executed with the hidden argument Entry — once per run (Server), which starts each
// command of the run, one at a time, from a thread it restricts with Landlock for that command
// alone, and when the command ends kills every descendant it left behind (setsid daemons,
// double forks included). A one-off command gets a launcher of its own (RunAlone). Where the
// kernel allows, the launcher is pid 1 of a pid namespace of its own, which no descendant can
// leave; elsewhere it is the child subreaper and sweeps what it inherited.
package sandbox

import (
	"fmt"
	"os"
	"strconv"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Entry is the hidden first argument that makes git-norma act as the launcher.
const Entry = "__sandbox-exec"

// Mode is how strictly agents are confined.
type Mode string

const (
	// ModeAuto confines where the kernel can and runs unconfined (saying so) where it cannot.
	ModeAuto Mode = "auto"
	// ModeRequired refuses to run an agent the kernel cannot confine.
	ModeRequired Mode = "required"
	// ModeOff never applies Landlock. Containment (no descendant survives a step) still holds.
	ModeOff Mode = "off"
)

// ModeEnv overrides the configured mode: scripts that must run an agent unconfined set
// GIT_NORMA_SANDBOX=off.
const ModeEnv = "GIT_NORMA_SANDBOX"

// ParseMode accepts auto, required and off.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeRequired, ModeOff:
		return m, nil
	}
	return "", fmt.Errorf("must be auto, required or off, got %q", s)
}

// EffectiveMode is the configured mode unless ModeEnv overrides it.
func EffectiveMode(configured Mode) (Mode, error) {
	if v := os.Getenv(ModeEnv); v != "" {
		m, err := ParseMode(v)
		if err != nil {
			return "", fmt.Errorf("%s: %v", ModeEnv, err)
		}
		return m, nil
	}
	return configured, nil
}

// Policy is what one confined process may do.
type Policy struct {
	// Landlock restricts writes to Writable (and /dev); false only contains the processes.
	Landlock bool `json:"landlock"`
	// Writable are the directories (or files) the process and its descendants may write.
	Writable []string `json:"writable"`
	// Network allows TCP bind and connect; false denies them where Landlock ABI >= 4.
	Network bool `json:"network"`
}

// abiOverrideEnv pretends the kernel offers this Landlock ABI. It exists for tests only (the
// machines that run them have Landlock, and the refusal of mode required must be testable).
const abiOverrideEnv = "GIT_NORMA_SANDBOX_TEST_ABI"

// ABI is the Landlock ABI version the kernel offers, 0 with the reason when it offers none.
func ABI() (int, string) {
	if v := os.Getenv(abiOverrideEnv); v != "" {
		n, _ := strconv.Atoi(v)
		if n <= 0 {
			return 0, "Landlock disabled by " + abiOverrideEnv + " (a test setting)"
		}
		return n, ""
	}
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, "the kernel does not offer Landlock (" + err.Error() + "; it needs Linux 5.13+ with lsm=landlock)"
	}
	return v, ""
}

// NetworkABI is the first Landlock ABI that can deny TCP bind and connect.
const NetworkABI = 4
