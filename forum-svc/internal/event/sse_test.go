package event

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// readEvents parses server-sent events as a client does: fields until a blank line.
func readEvents(b []byte) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = map[string]string{}
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		cur[name] = strings.TrimPrefix(value, " ")
	}
	return out
}

func TestAppendEvent(t *testing.T) {
	for _, tt := range []struct {
		id   int64
		typ  string
		data string
		ok   bool
	}{
		{1, "message_created", `{"message":{"message_id":5}}`, true},
		{9223372036854775807, "unread_count", `{}`, true},
		{0, "resync", `{"last_event_id":0}`, true},
		{2, "x", "a\nb", false},
		{2, "x", "a\rb", false},
		{2, "x\ny", "{}", false},
	} {
		b, ok := AppendEvent([]byte("prefix"), tt.id, tt.typ, []byte(tt.data))
		if ok != tt.ok {
			t.Errorf("%q %q: ok %v, want %v", tt.typ, tt.data, ok, tt.ok)
			continue
		}
		if !ok {
			if string(b) != "prefix" {
				t.Errorf("%q: appended %q to a refused event", tt.data, b)
			}
			continue
		}
		events := readEvents(b[len("prefix"):])
		if len(events) != 1 || events[0]["id"] != strconv.FormatInt(tt.id, 10) || events[0]["event"] != tt.typ ||
			events[0]["data"] != tt.data {
			t.Errorf("AppendEvent(%d, %q, %q) reads back as %v", tt.id, tt.typ, tt.data, events)
		}
	}
}

// An event a client reads back is the one written, whatever its data; data with a line break is
// refused rather than cut into several data lines.
func FuzzAppendEvent(f *testing.F) {
	f.Add(int64(1), "message_created", `{"a":"b"}`)
	f.Add(int64(0), "resync", "x\ny")
	f.Add(int64(-1), "", "")
	f.Fuzz(func(t *testing.T, id int64, typ, data string) {
		if typ == "" || strings.ContainsAny(typ, ": ") || strings.HasPrefix(data, " ") {
			return // the stream's types are names; its data is JSON, which starts with no space
		}
		b, ok := AppendEvent(nil, id, typ, []byte(data))
		breaks := strings.ContainsAny(typ+data, "\r\n")
		if ok == breaks {
			t.Fatalf("ok %v for %q %q", ok, typ, data)
		}
		if !ok {
			return
		}
		events := readEvents(b)
		if len(events) != 1 || events[0]["id"] != strconv.FormatInt(id, 10) || events[0]["event"] != typ || events[0]["data"] != data {
			t.Fatalf("%q reads back as %v", b, events)
		}
	})
}

func TestParseLastEventID(t *testing.T) {
	for _, tt := range []struct {
		in      string
		id      int64
		present bool
		err     bool
	}{
		{"", 0, false, false},
		{"0", 0, true, false},
		{"42", 42, true, false},
		{"007", 7, true, false},
		{"9223372036854775807", 9223372036854775807, true, false},
		{"9223372036854775808", 0, true, true},
		{"-1", 0, true, true},
		{"+1", 0, true, true},
		{"1.5", 0, true, true},
		{"abc", 0, true, true},
		{" 1", 0, true, true},
	} {
		id, present, err := ParseLastEventID(tt.in)
		if id != tt.id || present != tt.present || (err != nil) != tt.err {
			t.Errorf("ParseLastEventID(%q) = %d, %v, %v", tt.in, id, present, err)
		}
	}
}

func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"", "0", "12", "-1", "99999999999999999999", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, present, err := ParseLastEventID(s)
		if present != (s != "") {
			t.Fatalf("%q: present %v", s, present)
		}
		if err != nil {
			return
		}
		if id < 0 {
			t.Fatalf("%q: negative id %d", s, id)
		}
		if present {
			back, _ := strconv.ParseInt(s, 10, 64)
			if back != id {
				t.Fatalf("%q: %d", s, id)
			}
		}
	})
}

func TestUsersEncoding(t *testing.T) {
	for _, users := range [][]int64{nil, {1}, {3, 1, 2}, {9223372036854775807}} {
		got := decodeUsers(encodeUsers(users))
		if len(got) != len(users) {
			t.Fatalf("%v -> %v", users, got)
		}
		for i := range got {
			if got[i] != users[i] {
				t.Fatalf("%v -> %v", users, got)
			}
		}
	}
	if got := decodeUsers("1,x,-2,0,,3"); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("decode of a damaged message: %v", got)
	}
}
