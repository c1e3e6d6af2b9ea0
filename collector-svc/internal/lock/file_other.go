//go:build !unix

package lock

import "os"

// lockFile does not lock where flock is unavailable: run one collector per SQLite database.
func lockFile(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	return f, true, nil
}

func unlockFile(f *os.File) { f.Close() }
