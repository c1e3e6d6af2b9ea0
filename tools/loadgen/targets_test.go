package loadgen

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestParseTargets(t *testing.T) {
	in := `# stats
http://127.0.0.1:8082/api/chat-icons
HEAD http://127.0.0.1:8082/api/chat-statistics?period=week

POST http://127.0.0.1:8081/api/conversations/10/mark-unread
Forum-Api-Key: abc:def
Referer: http://example.com/x
@expect 200,429
@body date=5
GET http://127.0.0.1:8081/api/conversations/10/messages?page=2
`
	got, err := ParseTargets(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Method: "GET", URL: "http://127.0.0.1:8082/api/chat-icons", Header: http.Header{}},
		{Method: "HEAD", URL: "http://127.0.0.1:8082/api/chat-statistics?period=week", Header: http.Header{}},
		{Method: "POST", URL: "http://127.0.0.1:8081/api/conversations/10/mark-unread",
			Header: http.Header{"Forum-Api-Key": {"abc:def"}, "Referer": {"http://example.com/x"}},
			Expect: []int{200, 429}, Body: []byte("date=5")},
		{Method: "GET", URL: "http://127.0.0.1:8081/api/conversations/10/messages?page=2", Header: http.Header{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseTargetsErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"# only a comment",
		"Forum-Api-Key: x",                 // header before any target
		"@expect 200",                      // directive before any target
		"GET",                              // no URL
		"get http://a/",                    // lower-case method
		"GET /relative",                    // not absolute
		"GET ftp://a/",                     // not http
		"GET http://a/ extra",              // three fields
		"GET http://a/\n@expect 99",        // bad status
		"GET http://a/\n@expect ",          // no status
		"GET http://a/\n@frobnicate 1",     // unknown directive
		"GET http://a/\nNo colon here",     // bad header
		"GET http://a/\nBad Name: value x", // space in name
	} {
		if ts, err := ParseTargets(strings.NewReader(in)); err == nil {
			t.Errorf("ParseTargets(%q) = %+v, want an error", in, ts)
		}
	}
}

func TestParseHeader(t *testing.T) {
	name, value, err := ParseHeader("forum-api-key:  k:1 ")
	if err != nil || name != "Forum-Api-Key" || value != "k:1" {
		t.Fatalf("got %q %q %v", name, value, err)
	}
	for _, bad := range []string{"", "novalue", ": v", "a b: v"} {
		if _, _, err := ParseHeader(bad); err == nil {
			t.Errorf("ParseHeader(%q) accepted", bad)
		}
	}
}

func FuzzParseTargets(f *testing.F) {
	f.Add("GET http://a/\nX-A: b\n@expect 200\n\nhttp://b/c")
	f.Add("POST http://127.0.0.1:8081/x\n@body a=b")
	f.Add("@expect 200")
	f.Add("GET http://a/\nweird line")
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := ParseTargets(strings.NewReader(in))
		if err != nil {
			return
		}
		// Whatever it accepts must be something Run can send.
		for _, tg := range ts {
			if _, err := http.NewRequest(tg.Method, tg.URL, nil); err != nil {
				t.Fatalf("accepted target %+v that net/http refuses: %v", tg, err)
			}
			for _, c := range tg.Expect {
				if c < 100 || c > 599 {
					t.Fatalf("accepted status %d", c)
				}
			}
		}
	})
}
