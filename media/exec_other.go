//go:build !unix

package media

import "os/exec"

// setProcessGroup: without process groups the default cancellation (kill
// the process) is all there is.
func setProcessGroup(cmd *exec.Cmd) {}
