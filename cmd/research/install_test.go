package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ways to install that docs/install.md describes, besides go install:
// the release script and the Dockerfile.

// repoRoot is the module's root, two directories up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// TestReleaseScriptRefusesBadArguments: what is not a version or a target
// is refused before anything is built.
func TestReleaseScriptRefusesBadArguments(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed: scripts/release.sh needs it")
	}
	script := filepath.Join(repoRoot(t), "scripts", "release.sh")
	for _, tt := range []struct {
		args    []string
		targets string
		want    string
	}{
		{[]string{"1.2; rm -rf /", t.TempDir()}, "", "is not a version such as v1.2.3"},
		{[]string{"v1.2"}, "", "is not a version such as v1.2.3"},
		{nil, "", "usage: scripts/release.sh VERSION [OUTDIR]"},
		{[]string{"v1.2.3", t.TempDir()}, "linux", "target linux is not OS/ARCH"},
	} {
		cmd := exec.Command("bash", append([]string{script}, tt.args...)...)
		cmd.Env = append(os.Environ(), "RELEASE_TARGETS="+tt.targets)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%q: %s", tt.args, out)
		assert.Contains(t, string(out), tt.want, "%q", tt.args)
		assert.NotContains(t, string(out), "building", "%q", tt.args)
	}
}

// TestReleaseScript builds this machine's release binary with
// scripts/release.sh: stamped with the version, its checksum in SHA256SUMS.
// A release is built with -trimpath and without the race detector, which
// share no build cache with the tests: it compiles every dependency again
// (about 3 minutes of CPU), so it runs only when DEEPGRAPH_TEST_RELEASE=1.
func TestReleaseScript(t *testing.T) {
	if os.Getenv("DEEPGRAPH_TEST_RELEASE") != "1" {
		t.Skip("set DEEPGRAPH_TEST_RELEASE=1 to build a release binary with scripts/release.sh (it compiles every dependency again)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed: scripts/release.sh needs it")
	}
	root := repoRoot(t)
	out := t.TempDir()
	const version = "v0.0.1-releasetest"
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "release.sh"), version, out)
	cmd.Env = append(os.Environ(), "RELEASE_TARGETS="+target)
	logs, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", logs)

	name := "research_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin := filepath.Join(out, name)
	got, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "research "+version+" ("), "%s", got)

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{64}  `+name+`\n$`, string(sums))
	if _, err := exec.LookPath("sha256sum"); err == nil {
		check := exec.Command("sha256sum", "--check", "SHA256SUMS")
		check.Dir = out
		res, err := check.CombinedOutput()
		assert.NoError(t, err, "%s", res)
	}
}

// TestDockerImage builds the Dockerfile's static image and runs it: the
// version it was built with, as a user that is not root. It runs when a
// Docker engine answers.
func TestDockerImage(t *testing.T) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker is not installed: the Dockerfile's image is not built")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, docker, "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (%s): the Dockerfile's image is not built", strings.TrimSpace(firstLine(string(out))))
	}
	root := repoRoot(t)
	const version = "v0.0.1-dockertest"
	tag := "deepgraph-research-test:" + strings.TrimPrefix(version, "v")
	build := exec.Command(docker, "build", "--build-arg", "VERSION="+version, "-t", tag, root)
	logs, err := build.CombinedOutput()
	require.NoError(t, err, "docker build:\n%s", logs)
	t.Cleanup(func() { _ = exec.Command(docker, "image", "rm", "-f", tag).Run() })

	var stdout, stderr bytes.Buffer
	run := exec.Command(docker, "run", "--rm", tag, "version")
	run.Stdout, run.Stderr = &stdout, &stderr
	require.NoError(t, run.Run(), "%s", stderr.String())
	assert.True(t, strings.HasPrefix(stdout.String(), "research "+version+" ("), stdout.String())

	user, err := exec.Command(docker, "image", "inspect", "--format", "{{.Config.User}}", tag).Output()
	require.NoError(t, err)
	assert.Equal(t, "10001:10001", strings.TrimSpace(string(user)), "the image runs as an unprivileged user")

	// The store goes to the user's home, which it may write.
	stdout.Reset()
	stderr.Reset()
	cfg := exec.Command(docker, "run", "--rm", tag, "config")
	cfg.Stdout, cfg.Stderr = &stdout, &stderr
	require.NoError(t, cfg.Run(), "%s", stderr.String())
	assert.Contains(t, stdout.String(), "/home/research/")
}

// firstLine is the first line of s that is not blank.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}
