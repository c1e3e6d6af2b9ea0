// Package stack runs a private copy of the system on this machine for the reliability tests:
// PostgreSQL and Redis instances on free ports (never the shared ones on 5432 and 6379, which
// other tests use), the service binaries as child processes, the data they need, and a
// fault-injecting proxy in front of the Discord fake.
package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"forumstats.local/shared/testutil"
)

// Proc is a child process whose output is kept.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	out  *Buffer
	done chan struct{}
	err  error // of Wait, once done is closed
}

// Buffer keeps a process's output; it is testutil.Buffer, safe for concurrent writers.
type Buffer = testutil.Buffer

// StartProc starts bin with args and extra environment (on top of a minimal base, so the
// tests do not inherit a developer's DATABASE_URL). Stdout and stderr go to one Buffer. The
// child is killed if the test binary dies.
func StartProc(name, bin string, env []string, args ...string) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(baseEnv(), env...)
	out := &Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	// A grandchild holding the output open must not keep Wait from returning.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, "TZ=UTC")
}

// Output is the process's stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits up to d for the process to exit and returns its exit error (nil for status 0).
func (p *Proc) Wait(d time.Duration) (error, bool) {
	select {
	case <-p.done:
		return p.err, true
	case <-time.After(d):
		return nil, false
	}
}

// ExitCode is the exit status once done (-1 when killed by a signal or still running).
func (p *Proc) ExitCode() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Stop asks the process to end with SIGTERM and kills it after grace.
func (p *Proc) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, ok := p.Wait(grace); !ok {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Kill sends SIGKILL and waits for the exit.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Run runs bin to completion within timeout and returns its combined output.
func Run(ctx context.Context, timeout time.Duration, bin string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(baseEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %v: %w", bin, strings.Join(args, " "), timeout, ctx.Err())
	}
	return out.String(), err
}

// RunSplit is Run with stdout and stderr apart.
func RunSplit(ctx context.Context, timeout time.Duration, bin string, env []string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(baseEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %v: %w", bin, strings.Join(args, " "), timeout, ctx.Err())
	}
	return out.String(), errb.String(), err
}

// FreePort returns a TCP port that was free a moment ago on 127.0.0.1.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr is FreePort as "127.0.0.1:PORT".
func FreeAddr() (string, error) {
	p, err := FreePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(p), nil
}

// WaitHTTP polls url until it answers want, the process dies, or timeout passes.
func WaitHTTP(url string, want int, timeout time.Duration, p *Proc) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if p != nil {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited (%v) while waiting for %s:\n%s", p.Name, p.err, url, tail(p.Output(), 3000))
			default:
			}
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("waiting for " + url + ": " + last)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
