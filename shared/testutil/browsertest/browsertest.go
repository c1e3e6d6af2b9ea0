// Package browsertest starts the headless Chromium that the services' browser tests drive
// (chromedp), the same way for every test: Debian's chromium, a fresh profile, and the flags that
// keep it off the network and quiet on a closed machine. Only tests import it.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Path finds Debian's chromium (or CHROMIUM). Its absence fails the test with what to install,
// naming what cannot be tested without it: browser tests are never skipped.
func Path(t testing.TB, what string) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatalf("chromium is not installed (apt-get install chromium, or set CHROMIUM): %s cannot run", what)
	return ""
}

// Context starts chromium (Path) headless with a new profile in the test's temporary directory,
// no sandbox (tests run as root), no GPU, no first run, no background networking, component
// updates or sync, and the extra options, and returns a chromedp context of a tab in it; the
// browser ends when the test does.
func Context(t testing.TB, what string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	exe := Path(t, what)
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
	}, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	return ctx
}
