// Command exchange measures collector-svc's `import` and `export` of a reports file against their
// targets (collector-svc/README.md, "Import and export file"): the built binary imports a
// generated file into a fresh PostgreSQL database and exports it again, at two sizes (-scales
// times the base file, which has -guilds servers; default 1× and 4×: 163 MB and 652 MB).
// For each size it reads the command's peak resident set (the kernel's rusage of the finished
// child, ru_maxrss: nothing to install) and its time, checks that the export gives back the
// imported file byte for byte (the generated file is in export's own order and format), and holds
// them to:
//
//   - peak resident set < 128 MiB for import and for export, at every size;
//   - the peak at the largest size within 1.25 × the peak at 1×: memory does not grow with the file;
//   - the time at 1× no worse than before streaming (-before-import, -before-export: the figures
//     of the binary that held the whole file in memory, measured once on this machine, which was
//     busy then: measure them again with -bin on a quieter one), with 10 % for the machine's drift.
//
// It prints the figures beside the targets and exits 1 when one is missed.
//
//	go run ./tools/bench/exchange [-guilds 100] [-days 366] [-channels 35] [-scales 1,4] [-bin BIN]
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

const peakCeiling = 128 << 20

type options struct {
	bench.Flags
	guilds, days, channels, months int
	scales                         []int
	beforeImport, beforeExport     time.Duration
	bin                            string
	timeout                        time.Duration
}

func main() {
	o, err := parseFlags()
	if err == nil {
		err = bench.Run(func(ctx context.Context) (*env, error) { return setup(ctx, o) },
			func(ctx context.Context, e *env) ([]result, error) { return measure(ctx, o, e) },
			func(e *env, rs []result) *bench.Report { return report(o, rs) })
	}
	bench.Exit("exchange-bench", err)
}

func parseFlags() (options, error) {
	var o options
	o.Define(fmt.Sprintf("exchange_bench_%d", os.Getpid()))
	flag.IntVar(&o.guilds, "guilds", 100, "servers of the 1× file")
	flag.IntVar(&o.days, "days", 366, "daily reports per server")
	flag.IntVar(&o.months, "months", 12, "monthly reports per server")
	flag.IntVar(&o.channels, "channels", 35, "channels per report")
	scales := flag.String("scales", "1,4", "sizes to measure, as multiples of -guilds (comma-separated, the first is the reference)")
	// The binary of fb10348 (the whole file in memory) on the 1× file, 2026-11-26, load average
	// 20–25: import 5 min 28 s (peak 1,306 MiB), export 1 min 30 s (peak 1,070 MiB).
	flag.DurationVar(&o.beforeImport, "before-import", 5*time.Minute+28*time.Second, "import time of the 1× file before streaming, on this machine")
	flag.DurationVar(&o.beforeExport, "before-export", 90*time.Second, "export time of the 1× file before streaming, on this machine (0: not held)")
	flag.StringVar(&o.bin, "bin", "", "a built collector-svc to measure instead of building the workspace's")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up a command after this long")
	flag.Parse()
	for _, s := range strings.Split(*scales, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-scales: %q is not a positive integer", s)
		}
		o.scales = append(o.scales, n)
	}
	if o.guilds <= 0 || o.days <= 0 || o.days > 3000 || o.months < 0 || o.months > 99 || o.channels < 0 {
		return o, fmt.Errorf("-guilds, -days (1..3000), -months (0..99), -channels: out of range")
	}
	return o, o.Check()
}

// env is the built binary, its temporary directory and what to clean up.
type env struct {
	bin, dir string
	bench.Cleanups
}

func setup(ctx context.Context, o options) (_ *env, err error) {
	e := &env{bin: o.bin}
	defer e.CloseOnError(&err)
	if o.bin == "" {
		e.bin, e.dir, err = e.Build(ctx, stack.Collector)
		return e, err
	}
	if e.dir, err = stack.TempDir("exchange-bench"); err != nil {
		return nil, err
	}
	e.Add(func() { _ = os.RemoveAll(e.dir) })
	return e, nil
}

// result is one size's figures.
type result struct {
	scale                  int
	size                   int64
	importPeak, exportPeak int64
	importTime, exportTime time.Duration
	identical              bool
}

func measure(ctx context.Context, o options, e *env) ([]result, error) {
	var out []result
	for i, scale := range o.scales {
		path := filepath.Join(e.dir, fmt.Sprintf("reports_%dx.json", scale))
		size, sum, err := generate(path, o, scale)
		if err != nil {
			return nil, err
		}
		dbURL, err := e.CreateDatabase(ctx, o.Flags, fmt.Sprintf("%s_%d", o.DB, i))
		if err != nil {
			return nil, err
		}
		// The import applies the reports schema's migrations first, as every command does.
		dbEnv := []string{"DATABASE_URL=" + dbURL}
		r := result{scale: scale, size: size}
		fmt.Fprintf(os.Stderr, "exchange-bench: %d× (%s): import\n", scale, mb(size))
		if r.importTime, r.importPeak, err = runMeasured(ctx, o.timeout, e.bin, dbEnv, "import", "--file", path); err != nil {
			return nil, err
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
		exported := filepath.Join(e.dir, fmt.Sprintf("export_%dx.json", scale))
		fmt.Fprintf(os.Stderr, "exchange-bench: %d×: export\n", scale)
		if r.exportTime, r.exportPeak, err = runMeasured(ctx, o.timeout, e.bin, dbEnv, "export", "--file", exported); err != nil {
			return nil, err
		}
		got, err := hashFile(exported)
		if err != nil {
			return nil, err
		}
		r.identical = got == sum
		if err := os.Remove(exported); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "exchange-bench: %d×: import %s, peak %s; export %s, peak %s; identical %v\n",
			scale, r.importTime.Round(time.Millisecond), mb(r.importPeak), r.exportTime.Round(time.Millisecond), mb(r.exportPeak), r.identical)
		out = append(out, r)
	}
	return out, nil
}

// runMeasured runs bin with args and returns its wall time and peak resident set (ru_maxrss of
// the finished child, which the kernel keeps in kilobytes).
func runMeasured(ctx context.Context, timeout time.Duration, bin string, env []string, args ...string) (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "TZ=UTC", "LOG_LEVEL=warn"}, env...)
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("collector-svc %s: %w\n%s", strings.Join(args, " "), err, outBuf.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, fmt.Errorf("collector-svc %s: no rusage on this platform", args[0])
	}
	return took, ru.Maxrss << 10, nil
}

func hashFile(path string) ([32]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return [32]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, err
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// generate writes the file of scale × o.guilds servers in export's format and order (so that an
// export after the import gives it back byte for byte) and returns its size and SHA-256.
func generate(path string, o options, scale int) (int64, [32]byte, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, [32]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	w := bufio.NewWriterSize(cw, 1<<20)
	guilds := o.guilds * scale
	// Ids of equal length sort by number, so byte order is numeric order.
	id := func(g int) string { return strconv.FormatInt(700000000000000000+int64(g)*1000, 10) }
	chID := func(g, c int) string { return strconv.FormatInt(800000000000000000+int64(g)*1000+int64(c), 10) }
	// list writes n elements as export does: "[]" when empty, else one per line, indented.
	list := func(n int, elem func(i int)) {
		if n == 0 {
			w.WriteString("[]")
			return
		}
		w.WriteString("[")
		for i := range n {
			if i > 0 {
				w.WriteString(",")
			}
			elem(i)
		}
		w.WriteString("\n  ]")
	}
	start := time.Date(2025, 11, 20, 0, 0, 0, 0, time.UTC)
	reportsOf := func(key string, n int, period func(i int) string) func(k int) {
		return func(k int) {
			g, i := k/n, k%n
			// Channels by messages descending: channel c has (channels - c) × 7 + the period's index.
			total := int64(0)
			for c := range o.channels {
				total += int64((o.channels-c)*7 + i)
			}
			status, errJSON := "ok", "null"
			if i%50 == 7 {
				status, errJSON = "stale", "{\n        \"code\": \"timeout\",\n        \"message\": \"slow \\u0026 late\"\n      }"
			}
			fmt.Fprintf(w, "\n    {\n      \"guildId\": %q,\n      %q: %q,\n      \"generatedAt\": %q,\n      \"status\": %q,\n      \"error\": %s,\n      \"totalMessages\": %d,\n      \"channels\": ",
				id(g), key, period(i), start.AddDate(0, 0, i).Add(21*time.Hour+1500*time.Microsecond).Format(time.RFC3339Nano), status, errJSON, total)
			if o.channels == 0 {
				w.WriteString("[]\n    }")
				return
			}
			w.WriteString("[")
			for c := range o.channels {
				if c > 0 {
					w.WriteString(",")
				}
				fmt.Fprintf(w, "\n        {\n          \"id\": %q,\n          \"name\": \"channel-%d\",\n          \"messages\": %d\n        }", chID(g, c), c, (o.channels-c)*7+i)
			}
			w.WriteString("\n      ]\n    }")
		}
	}
	w.WriteString("{\n  \"refreshMinutes\": 10,\n  \"catalog\": ")
	list(guilds, func(g int) {
		fmt.Fprintf(w, "\n    {\n      \"number\": %d,\n      \"name\": \"Server \\u003c%d\\u003e\",\n      \"guildId\": %q\n    }", g+1, g+1, id(g))
	})
	w.WriteString(",\n  \"guilds\": ")
	list(guilds, func(g int) {
		fmt.Fprintf(w, "\n    {\n      \"guildId\": %q,\n      \"icon\": \"a_%x\",\n      \"banner\": null,\n      \"metadataAt\": \"2026-11-20T10:00:00.123456Z\"\n    }", id(g), g)
	})
	w.WriteString(",\n  \"daily\": ")
	list(guilds*o.days, reportsOf("date", o.days, func(i int) string { return start.AddDate(0, 0, i).Format(time.DateOnly) }))
	w.WriteString(",\n  \"monthly\": ")
	list(guilds*o.months, reportsOf("month", o.months, func(i int) string { return start.AddDate(0, i, 0).Format("2006-01") }))
	w.WriteString("\n}\n")
	if err := w.Flush(); err != nil {
		return 0, [32]byte{}, err
	}
	if err := f.Close(); err != nil {
		return 0, [32]byte{}, err
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return cw.n, sum, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// report holds the figures to the targets: every peak under the ceiling, the largest size's
// peaks within 1.25 × the first size's, the first size's times no worse than before streaming.
func report(o options, rs []result) *bench.Report {
	r := &bench.Report{Title: fmt.Sprintf("collector-svc import and export (%d servers × %d days + %d months × %d channels per 1×)", o.guilds, o.days, o.months, o.channels)}
	for _, x := range rs {
		at := fmt.Sprintf("%d× (%s)", x.scale, mb(x.size))
		r.Add(at+": import peak RSS", stack.MiB(x.importPeak), "< "+stack.MiB(peakCeiling), x.importPeak < peakCeiling)
		r.Add(at+": export peak RSS", stack.MiB(x.exportPeak), "< "+stack.MiB(peakCeiling), x.exportPeak < peakCeiling)
		r.Add(at+": export = imported file", fmt.Sprint(x.identical), "byte for byte", x.identical)
	}
	if len(rs) == 0 {
		return r
	}
	first, last := rs[0], rs[len(rs)-1]
	if len(rs) > 1 {
		for _, k := range []struct {
			name        string
			first, last int64
		}{{"import", first.importPeak, last.importPeak}, {"export", first.exportPeak, last.exportPeak}} {
			ratio := float64(k.last) / float64(k.first)
			r.Add(fmt.Sprintf("%s peak %d× ÷ %d×", k.name, last.scale, first.scale), fmt.Sprintf("%.2f", ratio), "≤ 1.25", ratio <= 1.25)
		}
	}
	const drift = 1.10
	r.Add(fmt.Sprintf("%d× import time", first.scale), first.importTime.Round(100*time.Millisecond).String(),
		fmt.Sprintf("≤ %s (before streaming %s, + 10 %%)", scaleDur(o.beforeImport, drift), o.beforeImport), first.importTime <= scaleDur(o.beforeImport, drift))
	if o.beforeExport > 0 {
		r.Add(fmt.Sprintf("%d× export time", first.scale), first.exportTime.Round(100*time.Millisecond).String(),
			fmt.Sprintf("≤ %s (before streaming %s, + 10 %%)", scaleDur(o.beforeExport, drift), o.beforeExport), first.exportTime <= scaleDur(o.beforeExport, drift))
	} else {
		r.Add(fmt.Sprintf("%d× export time", first.scale), first.exportTime.Round(100*time.Millisecond).String(), "recorded", true)
	}
	return r
}

func scaleDur(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }
