package export

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

func TestCSV(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Table
		want string
	}{
		{"plain", Table{Header: []string{"a", "b"}, Rows: [][]Cell{{Text("x"), Int(3)}}}, "a,b\r\nx,3\r\n"},
		{"no rows", Table{Header: []string{"day"}}, "day\r\n"},
		{"comma quoted", Table{Header: []string{"n"}, Rows: [][]Cell{{Text("a,b")}}}, "n\r\n\"a,b\"\r\n"},
		{"quote doubled", Table{Header: []string{"n"}, Rows: [][]Cell{{Text(`say "hi"`)}}}, "n\r\n\"say \"\"hi\"\"\"\r\n"},
		{"newline quoted", Table{Header: []string{"n"}, Rows: [][]Cell{{Text("a\nb")}}}, "n\r\n\"a\nb\"\r\n"},
		{"crlf inside", Table{Header: []string{"n"}, Rows: [][]Cell{{Text("a\r\nb")}}}, "n\r\n\"a\r\nb\"\r\n"},
		{"lone empty field", Table{Header: []string{"n"}, Rows: [][]Cell{{Text("")}}}, "n\r\n\"\"\r\n"},
		{"empty cells", Table{Header: []string{"a", "b"}, Rows: [][]Cell{{IntOrEmpty(nil), Text("")}}}, "a,b\r\n,\r\n"},
		{"negative number stays a number", Table{Header: []string{"n"}, Rows: [][]Cell{{Int(-5)}}}, "n\r\n-5\r\n"},
		{"number from pointer", Table{Header: []string{"n"}, Rows: [][]Cell{{IntOrEmpty(ptr(int64(42)))}}}, "n\r\n42\r\n"},
		{"formula guarded", Table{Header: []string{"n"}, Rows: [][]Cell{{Text("=1+2")}, {Text("+1")}, {Text("-1")}, {Text("@SUM(A1)")}}},
			"n\r\n'=1+2\r\n'+1\r\n'-1\r\n'@SUM(A1)\r\n"},
		{"tab and cr guarded", Table{Header: []string{"n"}, Rows: [][]Cell{{Text("\tx")}, {Text("\rx")}}}, "n\r\n'\tx\r\n\"'\rx\"\r\n"},
		{"guarded and quoted", Table{Header: []string{"n"}, Rows: [][]Cell{{Text(`=HYPERLINK("x","y")`)}}}, "n\r\n\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\"\r\n"},
		{"header guarded", Table{Header: []string{"=cmd", "ok"}}, "'=cmd,ok\r\n"},
		{"unicode kept", Table{Header: []string{"name"}, Rows: [][]Cell{{Text("Кафе ☕")}}}, "name\r\nКафе ☕\r\n"},
		{"inner minus is no formula", Table{Header: []string{"n"}, Rows: [][]Cell{{Text("a-b=c")}}}, "n\r\na-b=c\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(CSV(tc.t)); got != tc.want {
				t.Fatalf("CSV = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFilename(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"chat-series", "all", "2026-11-01", "2026-11-26"}, "chat-series-all-2026-11-01-2026-11-26.csv"},
		{[]string{"chat-statistics", "3", "2026-11"}, "chat-statistics-3-2026-11.csv"},
		{[]string{`a"b`, "c/d\\e", "é ;"}, "a_b-c_d_e-____.csv"},
	} {
		if got := Filename(tc.parts...); got != tc.want {
			t.Errorf("Filename(%q) = %q, want %q", tc.parts, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzCSV: whatever the texts and numbers, encoding/csv reads back exactly the guarded fields
// (CRLF inside a quoted field read as LF, as encoding/csv does), every row ends in CRLF, and no
// text field read back starts with a formula character.
func FuzzCSV(f *testing.F) {
	f.Add("=1+2", "a,b", int64(-3), `q"x`)
	f.Add("", "", int64(0), "\r\n")
	f.Add("\t", "-", int64(1<<62), "@")
	f.Add("\r", "x\ry", int64(-1), "\n")
	f.Fuzz(func(t *testing.T, a, b string, n int64, c string) {
		table := Table{Header: []string{a, "n"}, Rows: [][]Cell{{Text(b), Int(n)}, {Text(c), IntOrEmpty(nil)}}}
		out := CSV(table)
		r := csv.NewReader(bytes.NewReader(out))
		r.FieldsPerRecord = 2
		records, err := r.ReadAll()
		if err != nil {
			t.Fatalf("encoding/csv cannot read %q: %v", out, err)
		}
		want := [][]string{{Guard(a), "n"}, {Guard(b), Int(n).String()}, {Guard(c), ""}}
		if len(records) != len(want) {
			t.Fatalf("%d records, want %d: %q", len(records), len(want), out)
		}
		for i := range want {
			for j := range want[i] {
				if got, w := records[i][j], strings.ReplaceAll(want[i][j], "\r\n", "\n"); got != w {
					t.Fatalf("record %d field %d = %q, want %q (CSV %q)", i, j, got, w, out)
				}
			}
		}
		if !bytes.HasSuffix(out, []byte("\r\n")) {
			t.Fatalf("no CRLF at the end: %q", out)
		}
		for _, s := range []string{records[0][0], records[1][0], records[2][0]} {
			if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
				t.Fatalf("text field %q starts with a formula character", s)
			}
		}
		if got := records[1][1]; got != Int(n).String() {
			t.Fatalf("number %d read back as %q", n, got)
		}
	})
}
