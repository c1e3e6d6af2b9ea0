package stack

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSumMetric(t *testing.T) {
	const text = `# HELP collector_live_events_total Events.
# TYPE collector_live_events_total counter
collector_live_events_total{shard="0",type="MESSAGE_CREATE"} 1500
collector_live_events_total{shard="1",type="MESSAGE_CREATE"} 2.5e+03
collector_live_events_total{shard="0",type="READY"} 1
collector_live_events_total_extra{type="MESSAGE_CREATE"} 99
collector_passes_total 3
collector_passes_total_x 7
`
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"collector_live_events_total", []string{`type="MESSAGE_CREATE"`}, 4000},
		{"collector_live_events_total", []string{`type="MESSAGE_CREATE"`, `shard="1"`}, 2500},
		{"collector_live_events_total", nil, 4001},
		{"collector_live_events_total", []string{`type="MESSAGE"`}, 0},
		{"collector_passes_total", nil, 3},
		{"collector_absent", nil, 0},
	} {
		got, err := sumMetric(bufio.NewScanner(strings.NewReader(text)), tt.name, tt.labels)
		if err != nil || got != tt.want {
			t.Errorf("%s %v = %v, %v; want %v", tt.name, tt.labels, got, err, tt.want)
		}
	}
	if _, err := sumMetric(bufio.NewScanner(strings.NewReader("m{a=\"b\"} x\n")), "m", nil); err == nil {
		t.Error("a value that is not a number was summed")
	}
}

func TestSnowflakeTime(t *testing.T) {
	// Discord's documented example: 175928847299117063 was made at 2016-04-30 11:18:25.796 UTC.
	want := time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC)
	if got := SnowflakeTime(175928847299117063); !got.Equal(want) {
		t.Fatalf("SnowflakeTime = %s, want %s", got, want)
	}
}

// FuzzSumMetric: any exposition text is read without a panic, and a sample line added to it of a
// metric named nowhere else is summed exactly.
func FuzzSumMetric(f *testing.F) {
	f.Add("m{a=\"b\"} 1\nm 2\n", 3.0)
	f.Add("m ", 1.0)
	f.Add("m{a=\"b\"}", 0.5)
	f.Fuzz(func(t *testing.T, text string, v float64) {
		_, _ = sumMetric(bufio.NewScanner(strings.NewReader(text)), "m", nil)
		if v != v || strings.Contains(text, "zz_fuzz_metric") {
			return // NaN never equals itself
		}
		in := strings.ReplaceAll(text, "\n", " ") + "\nzz_fuzz_metric{k=\"v\"} " + strconv.FormatFloat(v, 'g', -1, 64) + "\n"
		got, err := sumMetric(bufio.NewScanner(strings.NewReader(in)), "zz_fuzz_metric", []string{`k="v"`})
		if err != nil || got != v {
			t.Fatalf("%q: %v, %v; want %v", in, got, err, v)
		}
	})
}

func TestCountedFrom(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tt := range []struct {
		name  string
		since time.Time
		began []time.Time
		want  time.Time
	}{
		{"GUILD_CREATE a while after the session began", ms(50), []time.Time{ms(10)}, ms(50)},
		{"in the millisecond of the IDENTIFY", ms(10), []time.Time{ms(11)}, ms(11)},
		{"the same millisecond as the session's first", ms(11), []time.Time{ms(11)}, ms(11)},
		{"a later session does not count", ms(50), []time.Time{ms(10), ms(90)}, ms(50)},
		{"the latest earlier session counts", ms(40), []time.Time{ms(10), ms(41), ms(90)}, ms(41)},
		{"no session known", ms(50), nil, ms(50)},
	} {
		if got := CountedFrom(tt.since, tt.began); !got.Equal(tt.want) {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
