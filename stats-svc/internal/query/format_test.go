package query

import (
	"errors"
	"net/url"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		query  string
		accept []string
		want   Format
		err    error
	}{
		{"", nil, FormatJSON, nil},
		{"format=csv", nil, FormatCSV, nil},
		{"format=json", []string{"text/csv"}, FormatJSON, nil}, // the parameter wins
		{"format=csv", []string{"application/json"}, FormatCSV, nil},
		{"", []string{"text/csv"}, FormatCSV, nil},
		{"", []string{"TEXT/CSV; charset=utf-8"}, FormatCSV, nil},
		{"", []string{"application/json"}, FormatJSON, nil},
		{"", []string{"*/*"}, FormatJSON, nil},
		{"", []string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, FormatJSON, nil},
		{"", []string{"text/csv, application/json"}, FormatJSON, nil}, // a tie keeps JSON
		{"", []string{"text/csv, application/json;q=0.5"}, FormatCSV, nil},
		{"", []string{"application/json;q=0.5", "text/csv"}, FormatCSV, nil},
		{"", []string{"text/*"}, FormatCSV, nil},
		{"", []string{"text/*;q=0.2, application/*;q=0.1"}, FormatCSV, nil},
		{"", []string{"text/csv;q=0, */*"}, FormatJSON, nil},
		{"", []string{"text/csv;q=abc"}, FormatJSON, nil},
		{"", []string{"text/html"}, FormatJSON, nil},
		{"format=xml", nil, "", ErrInvalidParameters},
		{"format=CSV", nil, "", ErrInvalidParameters},
		{"format=", nil, "", ErrInvalidParameters},
		{"format=csv&format=csv", nil, "", ErrInvalidParameters},
	} {
		values, _ := url.ParseQuery(tc.query)
		got, err := ParseFormat(values, tc.accept)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("ParseFormat(%q, %q) = %q, %v; want %q, %v", tc.query, tc.accept, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParseFormat(f *testing.F) {
	f.Add("format=csv", "text/csv;q=0.5, */*;q=0.1")
	f.Add("", "text/csv")
	f.Fuzz(func(t *testing.T, query, accept string) {
		values, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		got, err := ParseFormat(values, []string{accept})
		if err != nil {
			if !errors.Is(err, ErrInvalidParameters) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if got != FormatJSON && got != FormatCSV {
			t.Fatalf("format %q", got)
		}
		if vs := values["format"]; len(vs) == 1 && Format(vs[0]) != got {
			t.Fatalf("format parameter %q, chose %q", vs[0], got)
		}
	})
}
