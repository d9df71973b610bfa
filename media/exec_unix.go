//go:build unix

package media

import (
	"os/exec"
	"syscall"
)

// setProcessGroup runs the tool in a process group of its own and makes
// cancellation kill the whole group: ffmpeg and the wrappers in front of it
// must not outlive a timeout.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
