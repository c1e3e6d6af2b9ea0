package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/collector-svc/internal/store"
)

// Import runs `collector-svc import --file path`: the whole file is validated before the
// database is opened, then written in one transaction, or nothing is.
func Import(ctx context.Context, cfg Config, log *slog.Logger, path string) (store.ImportStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return store.ImportStats{}, fmt.Errorf("import: %w", err)
	}
	file, err := reportfile.Decode(f)
	f.Close()
	if err != nil {
		return store.ImportStats{}, fmt.Errorf("import %s: %w (nothing was written)", path, err)
	}
	b, err := open(ctx, cfg, log)
	if err != nil {
		return store.ImportStats{}, err
	}
	defer b.Close()
	st, err := reportStore(b, log).Import(ctx, file)
	if err != nil {
		return store.ImportStats{}, fmt.Errorf("import %s: %w (nothing was written)", path, err)
	}
	return st, nil
}

// ExportStats counts what an export wrote.
type ExportStats struct {
	Servers, Guilds, Daily, Monthly int
}

// Export runs `collector-svc export --file path`: the reports file, written to stdout when path
// is "-", else through a temporary file and a rename, so that an interrupted export never leaves
// a truncated file where a complete one was expected.
func Export(ctx context.Context, cfg Config, log *slog.Logger, path string, stdout io.Writer) (ExportStats, error) {
	b, err := open(ctx, cfg, log)
	if err != nil {
		return ExportStats{}, err
	}
	defer b.Close()
	file, err := reportStore(b, log).Export(ctx)
	if err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	var buf bytes.Buffer
	if err := reportfile.Encode(&buf, file); err != nil {
		return ExportStats{}, fmt.Errorf("export: %w", err)
	}
	st := ExportStats{Servers: len(file.Catalog), Guilds: len(file.Guilds), Daily: len(file.Daily), Monthly: len(file.Monthly)}
	if path == "-" {
		_, err := stdout.Write(buf.Bytes())
		return st, err
	}
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
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
