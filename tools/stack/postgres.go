package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"forumstats.local/shared/testutil"
)

// Postgres is a private PostgreSQL server: its own data directory and port, run as a child
// process so that a test can stop, kill and restart it without touching anyone else's.
type Postgres struct {
	Dir  string // holds data/ and the socket
	Port int
	bin  string
	cred *syscall.Credential // the postgres OS user when running as root (initdb refuses root)
	opts []string
	proc *Proc
	logs *Buffer // output of every run of the server, across restarts
}

// PostgresOptions tune the server.
type PostgresOptions struct {
	// LogStatements logs every statement with its parameters (security tests grep it).
	LogStatements bool
}

// pgBinDir finds the PostgreSQL binaries: PG_BIN, else the newest /usr/lib/postgresql/*/bin,
// else pg_config --bindir.
func pgBinDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		return strings.TrimSpace(string(out)), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres): set PG_BIN")
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// NewPostgres initialises a cluster in a new temporary directory and starts it.
func NewPostgres(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "reliab-pg-")
	if err != nil {
		return nil, err
	}
	pg := &Postgres{Dir: dir, bin: bin, logs: &Buffer{}}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres OS user for initdb: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if pg.Port, err = FreePort(); err != nil {
		return nil, err
	}
	// Durability is not under test; speed is welcome on a shared 2-core machine.
	pg.opts = []string{"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=64MB"}
	if opts.LogStatements {
		pg.opts = append(pg.opts, "-c", "log_statement=all", "-c", "log_parameter_max_length=-1")
	}
	if err := pg.Start(ctx); err != nil {
		pg.Close()
		return nil, err
	}
	return pg, nil
}

// Start starts the server on its port and waits until it accepts connections.
func (pg *Postgres) Start(ctx context.Context) error {
	args := append([]string{"-D", filepath.Join(pg.Dir, "data"), "-p", strconv.Itoa(pg.Port),
		"-k", pg.Dir, "-c", "listen_addresses=127.0.0.1"}, pg.opts...)
	cmd := exec.Command(filepath.Join(pg.bin, "postgres"), args...)
	cmd.Env = baseEnv()
	cmd.Stdout, cmd.Stderr = pg.logs, pg.logs
	// SIGQUIT on the test binary's death: PostgreSQL's immediate shutdown.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	p := &Proc{Name: "postgres", cmd: cmd, out: pg.logs, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	pg.proc = p
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, pg.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("postgres exited: %v\n%s", p.err, tail(pg.logs.String(), 2000))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the server down: fast mode (SIGINT: open sessions are cut, as in a restart by an
// operator) or, with immediate, SIGQUIT (as in a crash).
func (pg *Postgres) Stop(immediate bool) error {
	if pg.proc == nil {
		return nil
	}
	sig := syscall.SIGINT
	if immediate {
		sig = syscall.SIGQUIT
	}
	_ = pg.proc.Signal(sig)
	if _, ok := pg.proc.Wait(30 * time.Second); !ok {
		pg.proc.Kill()
		return errors.New("postgres did not stop in 30 s; killed")
	}
	pg.proc = nil
	return nil
}

// URL is the connection URL of database db.
func (pg *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, db)
}

// CreateDatabase creates database name (replacing a leftover of that name) and returns its URL.
// The database lives as long as the server: Close removes the whole cluster.
func (pg *Postgres) CreateDatabase(ctx context.Context, name string) (string, error) {
	url, _, err := testutil.CreateDatabase(ctx, pg.URL("postgres"), name, "")
	return url, err
}

// Connect opens a connection to database db.
func (pg *Postgres) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, pg.URL(db))
}

// Logs is the server's output so far (statements when LogStatements is on).
func (pg *Postgres) Logs() string { return pg.logs.String() }

// Close stops the server immediately and removes its directory.
func (pg *Postgres) Close() {
	_ = pg.Stop(true)
	_ = os.RemoveAll(pg.Dir)
}
