package browser

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

// ErrNoChromium is returned when no Chromium or Chrome executable is found.
// Its message says how to install one.
var ErrNoChromium = errors.New("browser: no Chromium found")

// InstallHint says how to install Chromium, for the messages of a missing
// browser.
const InstallHint = "install it (Debian/Ubuntu: sudo apt-get install chromium; Fedora: sudo dnf install chromium; " +
	"macOS: brew install --cask chromium) or set browser.chromium to the path of a Chromium or Chrome executable"

// chromiumNames are the executables looked for on PATH, in this order.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

// FindChromium returns the Chromium (or Chrome) executable to run: path
// when it is set (an absolute path, or a name looked up on PATH), else
// /usr/bin/chromium, else the first of chromium, chromium-browser,
// google-chrome, google-chrome-stable and chrome on PATH, else (on macOS)
// the applications' usual places. The error matches ErrNoChromium and says
// how to install one.
func FindChromium(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: %s is not an executable (%v); %s", ErrNoChromium, path, errors.Unwrap(err), InstallHint)
		}
		return p, nil
	}
	if isExecutable("/usr/bin/chromium") {
		return "/usr/bin/chromium", nil
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	if runtime.GOOS == "darwin" {
		for _, p := range []string{
			"/Applications/Chromium.app/Contents/MacOS/Chromium",
			"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
		} {
			if isExecutable(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w (looked for /usr/bin/chromium and for chromium, chromium-browser, google-chrome and chrome on PATH): %s", ErrNoChromium, InstallHint)
}

func isExecutable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}
