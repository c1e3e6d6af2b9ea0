package conversation

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestParsePage(t *testing.T) {
	cases := []struct {
		values []string
		want   int64
		ok     bool
	}{
		{nil, 1, true},
		{[]string{"1"}, 1, true},
		{[]string{"2"}, 2, true},
		{[]string{"007"}, 7, true},
		{[]string{"9223372036854775807"}, math.MaxInt64, true},
		{[]string{"9223372036854775808"}, math.MaxInt64, true}, // beyond int64: past any last page
		{[]string{"99999999999999999999999999"}, math.MaxInt64, true},
		{[]string{""}, 0, false},
		{[]string{"0"}, 0, false},
		{[]string{"000"}, 0, false},
		{[]string{"-1"}, 0, false},
		{[]string{"+1"}, 0, false},
		{[]string{"1.5"}, 0, false},
		{[]string{"1e3"}, 0, false},
		{[]string{"abc"}, 0, false},
		{[]string{" 1"}, 0, false},
		{[]string{"1 "}, 0, false},
		{[]string{"0x10"}, 0, false},
		{[]string{"١"}, 0, false}, // a non-ASCII digit
		{[]string{"99999999999999999999x"}, 0, false},
		{[]string{"1", "1"}, 0, false}, // repeated: refused
		{[]string{"1", "2"}, 0, false},
	}
	for _, c := range cases {
		got, err := ParsePage(c.values)
		if c.ok {
			if err != nil || got != c.want {
				t.Errorf("ParsePage(%q) = %d, %v; want %d", c.values, got, err, c.want)
			}
			continue
		}
		var pe *InvalidPageError
		if !errors.As(err, &pe) || pe.Max != 0 {
			t.Errorf("ParsePage(%q) = %d, %v; want InvalidPageError without max", c.values, got, err)
		}
	}
}

func TestLastPageAndQueryPage(t *testing.T) {
	cases := []struct{ total, per, last int64 }{
		{0, 20, 1}, {1, 20, 1}, {19, 20, 1}, {20, 20, 1}, {21, 20, 2}, {40, 20, 2}, {41, 20, 3},
		{1_000_000, 20, 50_000}, {5, 1, 5},
	}
	for _, c := range cases {
		if got := LastPage(c.total, c.per); got != c.last {
			t.Errorf("LastPage(%d, %d) = %d; want %d", c.total, c.per, got, c.last)
		}
	}
	if got := QueryPage(3); got != 3 {
		t.Errorf("QueryPage(3) = %d", got)
	}
	// A huge page is clamped, so the store's position arithmetic (page*per) cannot overflow.
	if p := QueryPage(math.MaxInt64); p <= 0 || p*100/100 != p {
		t.Errorf("QueryPage(max) = %d overflows page*100", p)
	}
}

func TestPageOf(t *testing.T) {
	cases := []struct {
		page, total, per int64
		shown            int
		want             Pagination
		wantMax          int64 // of the *InvalidPageError; 0: no error
	}{
		{1, 0, 20, 0, Pagination{CurrentPage: 1, LastPage: 1, PerPage: 20, Shown: 0, Total: 0}, 0},
		{2, 41, 20, 20, Pagination{CurrentPage: 2, LastPage: 3, PerPage: 20, Shown: 20, Total: 41}, 0},
		{3, 41, 20, 1, Pagination{CurrentPage: 3, LastPage: 3, PerPage: 20, Shown: 1, Total: 41}, 0},
		{4, 41, 20, 0, Pagination{}, 3},
		{2, 0, 20, 0, Pagination{}, 1},
		{math.MaxInt64, 5, 5, 0, Pagination{}, 1},
	}
	for _, c := range cases {
		got, err := pageOf(c.page, c.total, c.per, c.shown)
		var pageErr *InvalidPageError
		switch {
		case c.wantMax == 0 && err != nil:
			t.Errorf("pageOf(%d, %d, %d) error %v", c.page, c.total, c.per, err)
		case c.wantMax != 0 && (!errors.As(err, &pageErr) || pageErr.Max != c.wantMax):
			t.Errorf("pageOf(%d, %d, %d) error %v; want page past the last (%d)", c.page, c.total, c.per, err, c.wantMax)
		case got != c.want:
			t.Errorf("pageOf(%d, %d, %d) = %+v; want %+v", c.page, c.total, c.per, got, c.want)
		}
	}
}

func TestParseMarkReadDate(t *testing.T) {
	const now = 1_800_000_000
	ok := map[string]int64{
		"":           now,
		"0":          now,
		"1":          1,
		"1767225600": 1767225600,
		"1800000000": now,
		"1800000001": now, // future counts as now
		"9999999999": now,
	}
	for s, want := range ok {
		if got, err := ParseMarkReadDate(s, now); err != nil || got != want {
			t.Errorf("ParseMarkReadDate(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"-1", "abc", "1.5", " 1", "99999999999999999999", "+5"} {
		if _, err := ParseMarkReadDate(s, now); !errors.Is(err, ErrInvalidDate) {
			t.Errorf("ParseMarkReadDate(%q) err = %v; want ErrInvalidDate", s, err)
		}
	}
}

func TestIsUnread(t *testing.T) {
	if !IsUnread(10, 9) || IsUnread(10, 10) || IsUnread(10, 11) || !IsUnread(1, 0) {
		t.Fatal("a message is unread exactly when its date is later than last_read_date")
	}
}

// FuzzParsePage: never panics; an accepted page is positive and, when it fits int64, is exactly
// the decimal value of the input.
func FuzzParsePage(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1.5", "abc", "", "9223372036854775808", "007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParsePage([]string{s})
		if err != nil {
			return
		}
		if n < 1 {
			t.Fatalf("ParsePage(%q) = %d", s, n)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				t.Fatalf("ParsePage(%q) accepted a non-digit", s)
			}
		}
		if v, perr := strconv.ParseInt(s, 10, 64); perr == nil && v != n {
			t.Fatalf("ParsePage(%q) = %d; want %d", s, n, v)
		}
	})
}

// FuzzParseMarkReadDate: never panics, never returns a date in the future or a negative one.
func FuzzParseMarkReadDate(f *testing.F) {
	for _, s := range []string{"", "0", "1", "-1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const now = 1_800_000_000
		d, err := ParseMarkReadDate(s, now)
		if err == nil && (d < 0 || d > now) {
			t.Fatalf("ParseMarkReadDate(%q) = %d", s, d)
		}
	})
}
