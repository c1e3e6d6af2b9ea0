package httpcoding

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

func TestNoneMatch(t *testing.T) {
	const tag = `"abc"`
	tests := []struct {
		fields []string
		want   bool
	}{
		{nil, false},
		{[]string{`"abc"`}, true},
		{[]string{`W/"abc"`}, true}, // weak comparison
		{[]string{`*`}, true},
		{[]string{`"x", "abc"`}, true},
		{[]string{`"x",W/"abc"`}, true},
		{[]string{`"x"`, `"abc"`}, true}, // several fields
		{[]string{`"x", "y"`}, false},
		{[]string{`abc`}, false},
		{[]string{`"ab`}, false},
		{[]string{`"abc`}, false},
		{[]string{`"abcd"`}, false},
		{[]string{`"a,bc", "abc"`}, true}, // a comma inside a tag is not a separator
		{[]string{``}, false},
		{[]string{` , ,`}, false},
		{[]string{`"abc-gzip"`}, true}, // the gzip representation's tag
		{[]string{`W/"abc-gzip"`}, true},
		{[]string{`"x", "abc-gzip"`}, true},
		{[]string{`"abc-gzi"`}, false},
		{[]string{`"abc-gzip-gzip"`}, false},
	}
	for _, tt := range tests {
		if got := NoneMatch(tt.fields, tag); got != tt.want {
			t.Errorf("NoneMatch(%q) = %v, want %v", tt.fields, got, tt.want)
		}
	}
}

func FuzzNoneMatch(f *testing.F) {
	for _, s := range []string{`"abc"`, `W/"abc", *`, `"a,b"`, `,,W/`, `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		// A malformed element stops the parse (RFC 9110 gives it no meaning),
		// so only after a well-formed list must the tag still be found.
		got := NoneMatch([]string{field + `, "abc"`}, `"abc"`)
		if wellFormed(field) && !got {
			t.Fatalf("%q followed by the tag does not match", field)
		}
	})
}

// wellFormed is an independent reading of an If-None-Match list.
func wellFormed(field string) bool {
	f := field
	for {
		for f != "" && (f[0] == ' ' || f[0] == '\t' || f[0] == ',') {
			f = f[1:]
		}
		if f == "" {
			return true
		}
		if f[0] == '*' {
			return true
		}
		if len(f) >= 2 && f[:2] == "W/" {
			f = f[2:]
		}
		if f == "" || f[0] != '"' {
			return false
		}
		i := 1
		for i < len(f) && f[i] != '"' {
			i++
		}
		if i == len(f) {
			return false
		}
		f = f[i+1:]
	}
}

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		fields []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZip"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"gzip, deflate, br"}, true},
		{[]string{"br", "gzip"}, true},
		{[]string{"deflate, br"}, false},
		{[]string{"identity"}, false},
		{[]string{"*"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"gzip;q=0.5"}, true},
		{[]string{"*, gzip;q=0"}, false}, // named refusal wins over the wildcard
		{[]string{"*;q=0"}, false},
		{[]string{"br;q=1, *;q=0.1"}, true},
		{[]string{"gzip;q=x"}, false}, // unreadable q: not accepted
	}
	for _, tt := range tests {
		if got := AcceptsGzip(tt.fields); got != tt.want {
			t.Errorf("AcceptsGzip(%q) = %v, want %v", tt.fields, got, tt.want)
		}
	}
}

func TestGzipTag(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: `"abc-gzip"`, `W/"abc"`: `W/"abc-gzip"`, `"a.csv1"`: `"a.csv1-gzip"`} {
		if got := GzipTag(in); got != want {
			t.Errorf("GzipTag(%s) = %s, want %s", in, got, want)
		}
	}
}

func FuzzGzip(f *testing.F) {
	for _, s := range []string{"", "a", `{"servers":[]}`, string(make([]byte, 5000))} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		z := Gzip(body)
		r, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			t.Fatalf("gzip header: %v", err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("gunzip: %v", err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("round trip changed %d bytes into %d", len(body), len(got))
		}
	})
}

// The coding is decided on every request: the decision allocates nothing.
func TestAcceptsGzipAllocates(t *testing.T) {
	fields := []string{"br;q=1.0, gzip;q=0.8, *;q=0.1"}
	if n := testing.AllocsPerRun(100, func() { AcceptsGzip(fields) }); n != 0 {
		t.Errorf("AcceptsGzip allocates %v times", n)
	}
}
