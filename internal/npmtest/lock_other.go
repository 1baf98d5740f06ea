//go:build !unix

package npmtest

// lockFile does nothing here: installs still land whole (a temporary
// directory renamed into place), but two processes may both install.
func lockFile(string) (func(), error) { return func() {}, nil }
