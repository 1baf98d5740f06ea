//go:build linux

package procgroup

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// TestSweepKillsAdoptedOrphansOnly: with this process a subreaper, the
// orphan a command leaves becomes its child; Sweep kills it, and spares
// the process Start started.
func TestSweepKillsAdoptedOrphansOnly(t *testing.T) {
	require.NoError(t, Adopt())
	kept := exec.Command("sleep", "100")
	require.NoError(t, Start(kept))
	t.Cleanup(func() {
		_ = kept.Process.Kill()
		_ = kept.Wait()
		Release(kept.Process.Pid)
	})

	out, err := exec.Command("sh", "-c", "setsid sleep 100 >/dev/null 2>&1 & echo $!").Output()
	require.NoError(t, err)
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(orphan, syscall.SIGKILL) })
	require.True(t, alive(orphan))
	assert.Contains(t, scanProcs().children(syscall.Getpid()), orphan, "the orphan was adopted")

	assert.Equal(t, 1, Sweep())
	assert.False(t, alive(orphan), "the orphan was killed and reaped")
	assert.True(t, alive(kept.Process.Pid), "the started process was spared")
	assert.Equal(t, 0, Sweep(), "nothing is left to sweep")
}

// TestProbe: the containment Probe reports works; in a PID namespace the
// command is PID 1.
func TestProbe(t *testing.T) {
	c := Probe()
	t.Logf("containment here: %s", c)
	cmd := exec.Command("sh", "-c", "echo $$")
	Configure(cmd)
	Contain(cmd, c)
	out, err := cmd.Output()
	require.NoError(t, err)
	if c.Namespaced() {
		assert.Equal(t, "1\n", string(out))
	} else {
		assert.NotEqual(t, "1\n", string(out))
	}
}

// TestSweepSparesTaggedProcesses: a child that other code started, tagged
// with a mark SpareTagged spares, survives a Sweep, until released.
func TestSweepSparesTaggedProcesses(t *testing.T) {
	require.NoError(t, Adopt())
	release := SpareTagged("DG_SPARE_TEST=1")
	defer release()
	other := exec.Command("sleep", "100")
	other.Env = []string{"DG_SPARE_TEST=1"}
	require.NoError(t, other.Start()) // not through Start: as a library would
	t.Cleanup(func() {
		_ = other.Process.Kill()
		_ = other.Wait()
	})
	assert.Equal(t, 0, Sweep())
	assert.True(t, alive(other.Process.Pid), "the tagged child was spared")
	release()
	assert.Equal(t, 1, Sweep(), "released, it is an unknown child again")
}
