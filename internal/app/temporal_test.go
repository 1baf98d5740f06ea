package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTemporalCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	ok := Temporal{Address: "localhost:7233", Namespace: DefaultTemporalNamespace, TaskQueue: DefaultTemporalTaskQueue}
	require.NoError(t, ok.Check())
	withDir := ok
	withDir.BlobDir = dir
	require.NoError(t, withDir.Check())
	for _, tc := range []struct {
		edit func(*Temporal)
		want string
	}{
		{func(t *Temporal) { t.Address = "localhost" }, `--temporal "localhost" is not HOST:PORT`},
		{func(t *Temporal) { t.Address = ":7233" }, `--temporal ":7233" is not HOST:PORT`},
		{func(t *Temporal) { t.Address = "localhost:http" }, "the port must be a number from 1 to 65535"},
		{func(t *Temporal) { t.Address = "localhost:70000" }, "the port must be a number from 1 to 65535"},
		{func(t *Temporal) { t.Namespace = " " }, "--namespace is empty"},
		{func(t *Temporal) { t.TaskQueue = "" }, "--task-queue is empty"},
		{func(t *Temporal) { t.BlobDir = filepath.Join(dir, "missing") }, "no such file or directory (create it, on a disk that every worker and client shares)"},
		{func(t *Temporal) { t.BlobDir = file }, "is not a directory"},
	} {
		bad := ok
		tc.edit(&bad)
		err := bad.Check()
		require.Error(t, err, "%+v", bad)
		assert.Contains(t, err.Error(), tc.want)
	}
}
