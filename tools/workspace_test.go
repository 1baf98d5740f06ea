package tools

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorkspaceRefusesSystemDirectories(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix directory layout")
	}
	refused := []string{"/", "/etc", "/etc/ssl", "/usr", "/usr/bin", "/bin", "/sbin", "/lib", "/boot", "/dev", "/proc", "/sys", "/var", "/home", "/root"}
	for _, dir := range refused {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			err := CheckWorkspace(dir)
			require.ErrorIs(t, err, ErrUnsafeWorkspace)
			assert.Contains(t, err.Error(), "pass a project directory")
			_, err = NewEditor(EditorOptions{Workspace: dir})
			assert.ErrorIs(t, err, ErrUnsafeWorkspace, "the editor refuses it too")
			_, err = NewBash(ExecOptions{AllowExec: true, Workspace: dir})
			assert.ErrorIs(t, err, ErrUnsafeWorkspace, "and so does bash")
		})
	}

	t.Run("the home directory itself, not its subdirectories", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		err := CheckWorkspace(home)
		require.ErrorIs(t, err, ErrUnsafeWorkspace)
		assert.Contains(t, err.Error(), "home directory")
		sub := filepath.Join(home, "project")
		require.NoError(t, os.Mkdir(sub, 0o755))
		assert.NoError(t, CheckWorkspace(sub))
		_, err = NewEditor(EditorOptions{Workspace: sub})
		assert.NoError(t, err)
	})
	t.Run("a symbolic link to a system directory", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "etc")
		require.NoError(t, os.Symlink("/etc", link))
		assert.ErrorIs(t, CheckWorkspace(link), ErrUnsafeWorkspace)
	})
	t.Run("temporary directories are fine", func(t *testing.T) {
		assert.NoError(t, CheckWorkspace(t.TempDir()))
	})
}
