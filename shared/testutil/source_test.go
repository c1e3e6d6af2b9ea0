package testutil

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestSourceOrder(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		name      string
		env       string
		up        map[string]bool // which URLs answer a ping
		container error
		want      string
		wantErr   string
	}{
		{name: "environment first", env: "env://x", up: map[string]bool{"env://x": true, "local://": true}, want: "env://x"},
		{name: "environment set but down is an error", env: "env://x", up: map[string]bool{"local://": true}, wantErr: "TEST_X_URL is set but does not answer"},
		{name: "local port next", up: map[string]bool{"local://": true}, want: "local://"},
		{name: "container last", up: map[string]bool{}, want: "container://"},
		{name: "nothing: says how to provide one", up: map[string]bool{}, container: down, wantErr: "no X for tests: run one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TEST_X_URL", tt.env)
			s := &source{kind: "X", env: "TEST_X_URL", local: "local://", hint: "run one",
				ping: func(_ context.Context, u string) error {
					if tt.up[u] {
						return nil
					}
					return down
				},
				container: func() (string, func(), error) { return "container://", func() {}, tt.container },
			}
			got, err := s.URL()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("URL() = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("URL() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
