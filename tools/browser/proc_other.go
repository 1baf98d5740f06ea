//go:build !linux

package browser

import "os/exec"

// dieWithParent does nothing here: only Linux kills a child with its
// parent. The browser is stopped by Close, and by chromedp when the
// program exits normally.
func dieWithParent(*exec.Cmd) {}

// killTagged does nothing here: the process group is killed instead.
func killTagged(string) {}

// alive reports true: without a check of our own, a directory that may
// still be used is never swept.
func alive(int) bool { return true }
