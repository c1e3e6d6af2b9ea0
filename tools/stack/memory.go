package stack

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory reads a process's resident set from /proc: the current size and the peak since the
// process started or since the last ResetPeak. The attack tests compare the peak under attack
// with the size before it, so that what a bound is worth is a number, not a belief.
type Memory struct {
	RSS  int64 // bytes resident now (VmRSS)
	Peak int64 // bytes resident at the most (VmHWM)
}

// MiB formats a byte count in MiB with one decimal.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// ReadMemory reads pid's VmRSS and VmHWM.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status %s: %w", pid, name, err)
		}
		*dst = kb << 10
	}
	if err := sc.Err(); err != nil {
		return Memory{}, err
	}
	if m.Peak == 0 {
		return Memory{}, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
	}
	return m, nil
}

// ResetPeak sets pid's peak resident set back to its current one (clear_refs 5), so that a
// test measures the peak of its own attack, not of the process's start.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// Memory reads the process's resident set (see ReadMemory).
func (p *Proc) Memory() (Memory, error) { return ReadMemory(p.Pid()) }

// ResetPeak resets the process's peak resident set (see ResetPeak).
func (p *Proc) ResetPeak() error { return ResetPeak(p.Pid()) }
