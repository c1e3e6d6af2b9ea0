package httpapi_test

import (
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
)

// readCSV parses a CSV answer with encoding/csv (every row as long as the header).
func readCSV(t *testing.T, body string) [][]string {
	t.Helper()
	if !strings.HasSuffix(body, "\r\n") {
		t.Fatalf("rows do not end in CRLF: %q", body)
	}
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV %q: %v", body, err)
	}
	return records
}

func csvHeaders(t *testing.T, r response, filename string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="`+filename+`"` {
		t.Fatalf("Content-Disposition %q, want the file %s", cd, filename)
	}
	if v := r.header.Values("Vary"); !strings.Contains(strings.Join(v, ","), "Accept") {
		t.Fatalf("Vary %q", v)
	}
}

// The all-servers series: one row per day and server, a missing day's count empty.
func TestCSVSeriesAllServers(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	r := do(t, "GET", s.url+seriesPath+"?from=2026-11-16&to=2026-11-17&format=csv")
	csvHeaders(t, r, "chat-series-all-2026-11-16-2026-11-17.csv")
	want := "date,server_number,server_name,guild_id,messages,status\r\n" +
		"2026-11-16,1,Alpha," + alphaID + ",11,ok\r\n" +
		"2026-11-16,2,Beta," + betaID + ",5,ok\r\n" +
		"2026-11-16,3,Gamma & Co," + gammaID + ",2,ok\r\n" +
		"2026-11-17,1,Alpha," + alphaID + ",11,ok\r\n" +
		"2026-11-17,2,Beta," + betaID + ",,missing\r\n" +
		"2026-11-17,3,Gamma & Co," + gammaID + ",2,ok\r\n"
	if r.body != want {
		t.Fatalf("body\n%q\nwant\n%q", r.body, want)
	}
}

// One server's series adds a column per channel; the channels of a day add up to its total.
func TestCSVSeriesOneServer(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	r := do(t, "GET", s.url+seriesPath+"?from=2026-11-14&to=2026-11-20&server="+alphaID+"&format=csv")
	csvHeaders(t, r, "chat-series-1-2026-11-14-2026-11-20.csv")
	rows := readCSV(t, r.body)
	if got := strings.Join(rows[0], ","); got != "date,server_number,server_name,guild_id,messages,status,general (10),new-name (12)" {
		t.Fatalf("header %s", got)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want the header and 7 days", len(rows))
	}
	for _, row := range rows[1:] {
		total, _ := strconv.Atoi(row[4])
		sum := 0
		for _, c := range row[6:] {
			n, err := strconv.Atoi(c)
			if err != nil {
				t.Fatalf("row %q: channel count %q", row, c)
			}
			sum += n
		}
		if total != 11 || sum != total || row[1] != "1" || row[5] != "ok" {
			t.Fatalf("row %q: total %d, channels %d", row, total, sum)
		}
	}
}

// Statistics: one row per server and channel with the period's totals; a server without
// channels has one row; a month is its first and last day.
func TestCSVStatistics(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	r := do(t, "GET", s.url+statsPath+"?month=2026-11&server=2&format=csv")
	csvHeaders(t, r, "chat-statistics-2-2026-11.csv")
	want := "period,from,to,server_number,server_name,guild_id,status,error_code,server_messages,generated_at,channel_id,channel_name,channel_messages\r\n" +
		"month,2026-11-01,2026-11-30,2," + "Beta," + betaID + ",stale,,70,2026-11-20T08:00:00Z,20,lobby,70\r\n" // two hours old: stale by age
	if r.body != want {
		t.Fatalf("body\n%q\nwant\n%q", r.body, want)
	}

	r = do(t, "GET", s.url+statsPath+"?period=day&date=2026-11-17&format=csv")
	csvHeaders(t, r, "chat-statistics-all-2026-11-17-2026-11-17.csv")
	rows := readCSV(t, r.body)
	byServer := map[string][][]string{}
	for _, row := range rows[1:] {
		if row[0] != "day" || row[1] != "2026-11-17" || row[2] != "2026-11-17" {
			t.Fatalf("period cells %q", row[:3])
		}
		byServer[row[3]] = append(byServer[row[3]], row)
	}
	// Beta has no report that day: one row, no total, no channel.
	if b := byServer["2"]; len(b) != 1 || b[0][6] != "missing" || b[0][8] != "" || b[0][10] != "" || b[0][12] != "" {
		t.Fatalf("Beta %q", b)
	}
	// Alpha: two channels whose counts add up to the server's total.
	a := byServer["1"]
	if len(a) != 2 || a[0][8] != "11" || a[0][12] != "10" || a[1][12] != "1" || a[0][10] != "10" {
		t.Fatalf("Alpha %q", a)
	}
}

// format wins over Accept; Accept alone chooses CSV only when it prefers it; a bad format is the
// JSON 400 of every bad parameter; the icons have no CSV and ignore the parameter as any other.
func TestCSVNegotiation(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	target := s.url + seriesPath + "?from=2026-11-16&to=2026-11-17"
	for _, tc := range []struct {
		query, accept, want string
	}{
		{"", "", "application/json"},
		{"", "text/csv", "text/csv; charset=utf-8"},
		{"", "text/csv;q=0.5, application/json", "application/json"},
		{"&format=json", "text/csv", "application/json"},
		{"&format=csv", "application/json", "text/csv; charset=utf-8"},
	} {
		r := doWith(t, "GET", target+tc.query, map[string]string{"Accept": tc.accept})
		if r.status != 200 || r.header.Get("Content-Type") != tc.want || !strings.Contains(r.header.Get("Vary"), "Accept") {
			t.Errorf("%s Accept %q: %d %q Vary %q, want %s", tc.query, tc.accept, r.status, r.header.Get("Content-Type"), r.header.Get("Vary"), tc.want)
		}
	}
	for _, q := range []string{"&format=xml", "&format=csv&format=csv", "&format=CSV", "&format="} {
		r := doWith(t, "GET", target+q, map[string]string{"Accept": "text/csv"})
		if r.status != 400 || r.body != `{"error":"invalid_parameters"}` || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %q", q, r.status, r.header.Get("Content-Type"), r.body)
		}
	}
	// Errors stay JSON whatever the format asked.
	if r := do(t, "GET", s.url+seriesPath+"?from=2026-11-17&to=2026-11-16&format=csv"); r.status != 400 || r.body != `{"error":"invalid_range"}` {
		t.Errorf("bad range in CSV: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", s.url+iconsPath+"?format=xml"); r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("icons with a format: %d %q", r.status, r.header.Get("Content-Type"))
	}
}

// The CSV has its own strong tag, steady while the data is, and answers If-None-Match with 304
// for GET and HEAD; HEAD sends the headers of GET, Content-Length included.
func TestCSVConditional(t *testing.T) {
	for _, o := range []stackOptions{{redis: newRedis(t, "")}, {direct: true}} {
		s := newStack(t, pgDB(t), o)
		target := s.url + statsPath + "?period=week&format=csv"
		first := do(t, "GET", target)
		jsonTag := do(t, "GET", s.url+statsPath+"?period=week").header.Get("ETag")
		tag := first.header.Get("ETag")
		if first.status != 200 || len(tag) < 10 || tag[0] != '"' || tag == jsonTag {
			t.Fatalf("CSV tag %q, JSON tag %q", tag, jsonTag)
		}
		if again := do(t, "GET", target); again.header.Get("ETag") != tag || again.body != first.body {
			t.Fatalf("tag or body changed: %s then %s", tag, again.header.Get("ETag"))
		}
		for _, method := range []string{"GET", "HEAD"} {
			r := doWith(t, method, target, map[string]string{"If-None-Match": tag})
			if r.status != 304 || r.body != "" || r.header.Get("ETag") != tag || !strings.Contains(r.header.Get("Vary"), "Accept") {
				t.Fatalf("%s If-None-Match: %d %q", method, r.status, r.body)
			}
		}
		if r := doWith(t, "GET", target, map[string]string{"If-None-Match": jsonTag}); r.status != 200 {
			t.Fatalf("the JSON tag answered the CSV with %d", r.status)
		}
		head := do(t, "HEAD", target)
		if head.status != 200 || head.body != "" || head.header.Get("Content-Length") != strconv.Itoa(len(first.body)) ||
			head.header.Get("Content-Disposition") != first.header.Get("Content-Disposition") {
			t.Fatalf("HEAD: %d length %q, GET length %d", head.status, head.header.Get("Content-Length"), len(first.body))
		}
	}
}
