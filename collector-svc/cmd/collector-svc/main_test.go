package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestRunRefusals: what the command refuses before it reads any configuration or database.
func TestRunRefusals(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"collect"}, `unknown command "collect"; usage: collector-svc [serve`},
		{[]string{"run-once", "now"}, `run-once: unexpected argument "now"`},
		{[]string{"serve", "--fast"}, "flag provided but not defined: -fast"},
		{[]string{"import"}, "import: --file is required"},
		{[]string{"export", "--file"}, "flag needs an argument: -file"},
		{[]string{"fake-discord", "--frozen-at", "yesterday"}, `fake-discord: --frozen-at: "yesterday" is not an RFC 3339 time`},
		{[]string{"fake-discord", "--latency", "soon"}, `fake-discord: invalid value "soon" for flag -latency`},
		{[]string{"fake-discord", "extra"}, `fake-discord: unexpected argument "extra"`},
		{[]string{"demo", "--days", "many"}, `demo: invalid value "many" for flag -days`},
		{[]string{"demo", "now"}, `demo: unexpected argument "now"`},
		{[]string{"demo", "--days", "1", "--out", "-", "--catalog", "../../../deploy/compose/catalog.json"}, "demo: at least 2 days"},
		{[]string{"demo", "--out", "-", "--catalog", "no-such-catalog.json"}, "demo: "},
	}
	for _, tt := range tests {
		err := run(tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run %q = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
	for _, help := range []string{"help", "-h", "--help"} {
		if err := run([]string{help}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("run %q = %v, want flag.ErrHelp", help, err)
		}
	}
}
