package stack

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Redis is a private redis-server on a free port, without persistence.
type Redis struct {
	Port int
	bin  string
	proc *Proc
}

// NewRedis starts redis-server.
func NewRedis(ctx context.Context) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	r := &Redis{Port: port, bin: bin}
	return r, r.Start(ctx)
}

// Start starts the server on its port and waits until it answers PING.
func (r *Redis) Start(ctx context.Context) error {
	p, err := StartProc("redis", r.bin, nil, "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	if err != nil {
		return err
	}
	r.proc = p
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := r.Ping(); err == nil {
			return nil
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("redis not ready: %v\n%s", err, tail(p.Output(), 2000))
		}
		select {
		case <-p.Done():
			return fmt.Errorf("redis exited:\n%s", tail(p.Output(), 2000))
		case <-time.After(30 * time.Millisecond):
		}
	}
}

// Ping sends PING.
func (r *Redis) Ping() error {
	line, err := r.command("PING")
	if err == nil && line != "+PONG" {
		err = fmt.Errorf("PING answered %q", line)
	}
	return err
}

// DBSize is the number of keys in database 0.
func (r *Redis) DBSize() (int, error) {
	line, err := r.command("DBSIZE")
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(line, ":") {
		return 0, fmt.Errorf("DBSIZE answered %q", line)
	}
	return strconv.Atoi(line[1:])
}

// command sends an inline command over a raw connection (the tools need no Redis client) and
// returns the first line of the answer.
func (r *Redis) command(cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Kill kills the server with SIGKILL.
func (r *Redis) Kill() {
	if r.proc != nil {
		r.proc.Kill()
		r.proc = nil
	}
}

// Addr is host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// URL is the redis:// URL of database 0.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Close kills the server.
func (r *Redis) Close() { r.Kill() }
