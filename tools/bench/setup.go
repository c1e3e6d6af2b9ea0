package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"time"

	"forumstats.local/shared/testutil"
	"forumstats.local/tools/stack"
)

// Flags are the flags every benchmark has: the server its database is created on, the database's
// name, and whether to keep it.
type Flags struct {
	AdminURL string
	DB       string
	Keep     bool
}

// Define defines -admin-url, -db (defaulting to db) and -keep on the command line.
func (f *Flags) Define(db string) {
	flag.StringVar(&f.AdminURL, "admin-url", cmp.Or(os.Getenv("BENCH_POSTGRES_URL"), "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL URL of a database from which to create the bench database (env BENCH_POSTGRES_URL)")
	flag.StringVar(&f.DB, "db", db, "name of the bench database (created, then dropped)")
	flag.BoolVar(&f.Keep, "keep", false, "keep the bench database afterwards")
}

var dbNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Check refuses a database name that PostgreSQL would need quoted or would cut.
func (f Flags) Check() error {
	if !dbNameRE.MatchString(f.DB) {
		return fmt.Errorf("-db %q: want lower-case letters, digits and _", f.DB)
	}
	return nil
}

// Exit ends a benchmark's main: on an error it prints it after the command's name and exits 1, so
// that `make bench` fails.
func Exit(name string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Cleanups is what a setup leaves to undo, run in reverse order by Close, as defers would be.
type Cleanups []func()

// Add registers f.
func (c *Cleanups) Add(f func()) { *c = append(*c, f) }

// Close runs the cleanups, the last added first, and forgets them.
func (c *Cleanups) Close() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

// CloseOnError runs Close when *err is set: deferred by a setup, it undoes a half-made one.
func (c *Cleanups) CloseOnError(err *error) {
	if *err != nil {
		c.Close()
	}
}

// Prepare is what a service benchmark does first: it builds svc, creates its database (Flags.DB)
// and applies the migrations with `svc migrate`, as an operator would. It returns the binary and
// the service's environment naming the database (DATABASE_URL), whose URL it returns too.
func (c *Cleanups) Prepare(ctx context.Context, svc string, f Flags) (bin, dbURL string, env []string, err error) {
	if bin, _, err = c.Build(ctx, svc); err != nil {
		return "", "", nil, err
	}
	if dbURL, err = c.CreateDatabase(ctx, f, f.DB); err != nil {
		return "", "", nil, err
	}
	env = []string{"DATABASE_URL=" + dbURL}
	if out, err := stack.Run(ctx, 2*time.Minute, bin, env, "migrate"); err != nil {
		return "", "", nil, fmt.Errorf("%s migrate: %w\n%s", svc, err, out)
	}
	return bin, dbURL, env, nil
}

// Build compiles the service svc (stack.Forum, ...) into a temporary directory, removed on Close,
// and returns the binary and the directory.
func (c *Cleanups) Build(ctx context.Context, svc string) (bin, dir string, err error) {
	dir, err = stack.TempDir(svc + "-bench")
	if err != nil {
		return "", "", err
	}
	c.Add(func() { _ = os.RemoveAll(dir) })
	bins, err := stack.Build(ctx, dir, svc)
	if err != nil {
		return "", "", err
	}
	return bins[svc], dir, nil
}

// CreateDatabase creates database name on f's server (testutil.CreateDatabase, which replaces a
// leftover of that name) and returns its URL; Close drops it unless f.Keep.
func (c *Cleanups) CreateDatabase(ctx context.Context, f Flags, name string) (string, error) {
	dbURL, drop, err := testutil.CreateDatabase(ctx, f.AdminURL, name, "")
	if err != nil {
		return "", err
	}
	if f.Keep {
		c.Add(func() { fmt.Printf("database %s kept\n", name) })
	} else {
		c.Add(drop)
	}
	return dbURL, nil
}

// StartService runs `bin serve` with env (stack.StartService: a free port, ready once /healthz
// answers) and stops it on Close.
func (c *Cleanups) StartService(name, bin string, env []string) (*stack.Service, error) {
	svc, err := stack.StartService(name, bin, env)
	if err != nil {
		return nil, err
	}
	c.Add(func() { svc.Stop(10 * time.Second) })
	return svc, nil
}
