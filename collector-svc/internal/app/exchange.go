package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/demo"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/collector-svc/internal/store"
	"forumstats.local/shared/backend"
)

// Import runs `collector-svc import --file path`: a first pass reads the whole file as a stream
// and validates it before the database is opened; a second pass reads it again from its start
// and writes it in one transaction, or nothing is. Neither holds the file in memory, so path must
// be a file that can be read twice: a pipe (standard input fed by another process) is refused
// before anything is read, while standard input redirected from a file (/dev/stdin < F) is F.
func Import(ctx context.Context, cfg Config, log *slog.Logger, path string) (store.ImportStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return store.ImportStats{}, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return store.ImportStats{}, fmt.Errorf("import %s: the file is read twice (validated, then written), and this one cannot be (a pipe?): save it to a file first (nothing was written): %w", path, err)
	}
	return importFrom(ctx, cfg, log, path, f)
}

// DemoOptions are `collector-svc demo`'s: the moment, the days, the catalog file.
type DemoOptions struct {
	Now         time.Time
	Days        int
	CatalogFile string
	// Out, when set, is where the reports file is written ("-": standard output) instead of
	// importing it.
	Out string
}

// Demo runs `collector-svc demo`: the demo reports of the days up to now for the catalog's
// servers (internal/demo), imported as a reports file is: the same reading, validation and one
// transaction, so that the demo takes the write path of real data.
func Demo(ctx context.Context, cfg Config, log *slog.Logger, o DemoOptions, stdout io.Writer) (store.ImportStats, error) {
	entries, err := catalog.Load(o.CatalogFile)
	if err != nil {
		return store.ImportStats{}, fmt.Errorf("demo: %w", err)
	}
	file, err := demo.Generate(demo.Options{Now: o.Now, Days: o.Days, Catalog: entries, Seed: fakediscord.DemoOptions().Seed})
	if err != nil {
		return store.ImportStats{}, err
	}
	var buf bytes.Buffer
	if err := reportfile.Encode(&buf, file); err != nil {
		return store.ImportStats{}, fmt.Errorf("demo: %w", err)
	}
	switch o.Out {
	case "":
		return importFrom(ctx, cfg, log, "the demo reports", bytes.NewReader(buf.Bytes()))
	case "-":
		_, err = stdout.Write(buf.Bytes())
	default:
		err = writeFileAtomic(o.Out, buf.Bytes())
	}
	return store.ImportStats{}, err
}

// importFrom imports the reports file f (named name in errors): a first pass reads it whole and
// validates it before the database is opened, a second pass reads it again from its start and
// writes it in one transaction, or nothing is.
func importFrom(ctx context.Context, cfg Config, log *slog.Logger, path string, f io.ReadSeeker) (store.ImportStats, error) {
	if _, err := reportfile.Scan(f, reportfile.Visitor{}); err != nil {
		return store.ImportStats{}, fmt.Errorf("import %s: %w (nothing was written)", path, err)
	}
	b, err := open(ctx, cfg, log, backend.Given{})
	if err != nil {
		return store.ImportStats{}, err
	}
	defer b.Close()
	st, err := reportStore(b, log).ImportStream(ctx, func(v reportfile.Visitor) (reportfile.Counts, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return reportfile.Counts{}, err
		}
		return reportfile.Scan(f, v)
	})
	if err != nil {
		return store.ImportStats{}, fmt.Errorf("import %s: %w (nothing was written)", path, err)
	}
	return st, nil
}

// ExportStats counts what an export wrote.
type ExportStats = store.ExportStats

// Export runs `collector-svc export --file path`: the reports file, written as it is read into a
// temporary file, then renamed to path, or copied to stdout when path is "-", so that an
// interrupted or failed export never leaves a truncated file (or half a file on stdout) where a
// complete one was expected.
func Export(ctx context.Context, cfg Config, log *slog.Logger, path string, stdout io.Writer) (ExportStats, error) {
	b, err := open(ctx, cfg, log, backend.Given{})
	if err != nil {
		return ExportStats{}, err
	}
	defer b.Close()
	dir, pattern := filepath.Dir(path), "."+filepath.Base(path)+".*"
	if path == "-" {
		dir, pattern = "", "collector-export.*"
	}
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	st, err := reportStore(b, log).ExportTo(ctx, tmp)
	if err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	if path == "-" {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return ExportStats{}, fmt.Errorf("export: %w", err)
		}
		_, err := io.Copy(stdout, tmp)
		return st, err
	}
	if err := tmp.Close(); err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	return st, nil
}

// writeFileAtomic writes through a temporary file and a rename.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
